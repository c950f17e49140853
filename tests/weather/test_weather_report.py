"""The weather page's verdict rule (experiments/weather.py): a claim is decided only when every
learned arm it compares is at the plateau of its budget ladder with 10 seeds; otherwise it reads
'undecided at this budget' with the last step's gain."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _page() -> Any:
    spec = importlib.util.spec_from_file_location(
        "weather_page", ROOT / "experiments" / "weather.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["weather_page"] = mod
    spec.loader.exec_module(mod)
    return mod


def _ladder(values: dict[float, float], seeds: int) -> dict[float, dict[int, float]]:
    # seed k's RMSE at each rung: the rung's value plus a seed offset shared by every rung
    # (paired), so the step's interval is tight around the difference of the rung values
    return {s: {k: v + 0.01 * k for k in range(seeds)} for s, v in values.items()}


def test_a_flat_last_step_is_at_plateau_and_a_falling_one_is_not() -> None:
    page = _page()
    flat = page.plateau(_ladder({1.0: 2.0, 2.0: 1.5, 4.0: 1.49}, 10))
    assert flat["at"] and flat["from"] == 2.0 and flat["to"] == 4.0 and flat["n"] == 10
    falling = page.plateau(_ladder({1.0: 2.0, 2.0: 1.5}, 10))  # -25% at the last step
    assert not falling["at"]
    assert falling["status"] == "still improving"
    assert abs(falling["rel"] - 0.5 / 2.045) < 1e-9  # the fall over the x1 mean (seeds: 2.045)
    assert page.plateau(_ladder({4.0: 1.0}, 10)) == {
        "status": "no ladder",
        "at": False,
        "reading": "one rung only",
    }


def test_verdicts_are_decided_only_at_plateau_with_ten_seeds() -> None:
    page = _page()
    at = page.plateau(_ladder({1.0: 1.5, 2.0: 1.49}, 10))
    moving = page.plateau(_ladder({1.0: 2.0, 2.0: 1.5}, 10))
    ten: list[dict[str, Any]] = [{}] * 10
    five: list[dict[str, Any]] = [{}] * 5
    plat = {"a": at, "b": at, "c": moving}
    res = {"a": ten, "b": ten, "c": ten, "d": five, "baseline": [{}]}
    # both learned arms flat with 10 seeds, or a learned arm against a deterministic baseline
    assert page._verdict(["a", "b"], plat, res, 0.3, 0.001) == "supported"
    assert page._verdict(["a", "baseline"], plat, res, -0.3, 0.001) == "contradicted"
    assert page._verdict(["a", "b"], plat, res, 0.3, 0.2).startswith("not detectable")
    # one arm still moving: undecided, however small the p-value, with that arm's last gain
    v = page._verdict(["a", "c"], plat, res, 0.3, 1e-6)
    assert v.startswith("undecided at this budget") and "c still improving" in v
    assert f"{moving['rel']:+.1%}" in v
    # fewer than 10 seeds: undecided
    plat["d"] = at
    assert "d has 5 seeds" in page._verdict(["a", "d"], plat, res, 0.3, 1e-6)


def test_the_raw_archive_holds_every_store_and_reads_back_as_one(tmp_path: Path) -> None:
    """``weather_ladder.py archive``: the trials of several stores (a CPU folder of JSON-lines
    files, a GPU machine's gzipped export) in one .jsonl.gz that the page reads as a store."""
    import gzip
    import json

    sys.path.insert(0, str(ROOT / "experiments"))
    import weather_ladder as wl

    def line(key: str, status: str, device: str) -> dict[str, Any]:
        return {"key": key, "budget_scale": 1, "result": {"status": status, "device": device}}

    cpu = tmp_path / "cpu"
    cpu.mkdir()
    (cpu / "ladder_x1.jsonl").write_text(
        "\n".join(json.dumps(x) for x in (line("a", "FAILED", "cpu"), line("a", "FINISHED", "cpu")))
    )
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    (gpu / "export.jsonl.gz").write_bytes(
        gzip.compress((json.dumps(line("b", "FINISHED", "cuda")) + "\n").encode())
    )
    out = tmp_path / "raw" / "weather.jsonl.gz"
    wl.main(["archive", "--store", str(cpu), str(gpu), "--out", str(out)])
    back = wl.load_store(out)
    assert set(back) == {"a", "b"}
    assert back["a"]["result"] == {"status": "FINISHED", "device": "cpu"}
    assert back["b"]["result"]["device"] == "cuda"
