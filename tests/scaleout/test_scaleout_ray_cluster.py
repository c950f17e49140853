"""`--ray-address`: the CLI driving a separately started Ray cluster (``ray start --head``), as on
a real cluster: through the GCS address and through Ray Client, with token authentication.

The head runs in its own process group for this module and is stopped by signalling that group
(never ``ray stop``, which would end every Ray instance of the user on this machine).

Marked ``manual`` (about 40 s on 2 cores: a head start and three CLI processes); the executor's
semantics are tested in CI by test_scaleout_ray.py. Run with
``pytest -m manual tests/scaleout/test_scaleout_ray_cluster.py``.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the Ray executor needs the 'ray' extra")

from scaleout_helpers import KILL  # noqa: E402

from icml26.benchmarks.store import ResultsStore  # noqa: E402

TASK = "tutorial/point-reach"
pytestmark = pytest.mark.manual


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"ray start --head exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"the Ray head did not open port {port} in {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def ray_head() -> Iterator[dict[str, str]]:
    token = secrets.token_hex(32)
    gcs_port, client_port = _free_port(), _free_port()
    temp_dir = tempfile.mkdtemp(prefix="icml26-ray-", dir="/tmp")  # short: Ray's socket paths
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "OMP_NUM_THREADS": "1"}
    log = Path(temp_dir) / "head.log"
    ray_exe = str(Path(sys.executable).with_name("ray"))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                ray_exe,
                "start",
                "--head",
                f"--port={gcs_port}",
                f"--ray-client-server-port={client_port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                f"--temp-dir={temp_dir}",
                "--disable-usage-stats",
                "--block",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_port(client_port, proc, log)
        yield {
            "gcs": f"127.0.0.1:{gcs_port}",
            "client": f"ray://127.0.0.1:{client_port}",
            "token": token,
        }
    finally:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        try:  # whatever of the group is left (raylet, GCS, workers)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _icml26(args: list[str], head: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process, with the cluster's token in its environment, as a user runs it
    (Ray reads its authentication settings once per process)."""
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": head["token"],
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "icml26.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_on_a_cluster_by_gcs_address(ray_head: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "cluster.db"
    run = _icml26(
        [
            "run",
            "--task",
            TASK,
            "--agent",
            "point-pd",
            "--seeds",
            "0,1",
            "--executor",
            "ray",
            "--ray-address",
            ray_head["gcs"],
            "--store",
            str(db),
        ],
        ray_head,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert ResultsStore(db).count("FINISHED") == 2
    # the first driver left the cluster running: a second one finds it, and a dying worker is FAILED
    run = _icml26(
        [
            "run",
            "--task",
            TASK,
            "--agent",
            KILL,
            "--seeds",
            "0",
            "--executor",
            "ray",
            "--ray-address",
            ray_head["gcs"],
            "--store",
            str(db),
        ],
        ray_head,
    )
    assert run.returncode == 1, run.stderr[-3000:]
    (failed,) = ResultsStore(db).results(status="FAILED")
    assert "worker process died during the trial (2 attempts on Ray)" in (failed.traceback or "")


def test_cli_on_a_cluster_through_ray_client(ray_head: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "client.db"
    run = _icml26(
        [
            "run",
            "--task",
            TASK,
            "--agent",
            "random",
            "--seeds",
            "3",
            "--executor",
            "ray",
            "--ray-address",
            ray_head["client"],
            "--store",
            str(db),
        ],
        ray_head,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (r,) = ResultsStore(db).results()
    assert r.status == "FINISHED" and r.seed == 3 and len(r.scores) == 10
