"""WFDB records: the numpy reader/writer against hand-packed bytes and the wfdb package, and a
labelled folder served by PhysioProbe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from icml26.envs.pulse.env import PhysioProbeEnv
from icml26.envs.pulse.wfdb_io import load_folder, read_record, write_record


def test_format_212_bytes_by_hand(tmp_path: Path) -> None:
    """Two 12-bit samples in 3 bytes (MIT-BIH): 0x123 and -2 (0xFFE) -> 23 F1 FE."""
    (tmp_path / "r.dat").write_bytes(bytes([0x23, 0xF1, 0xFE]))
    (tmp_path / "r.hea").write_text(
        "r 2 360 1\nr.dat 212 100(0)/mV 12 0 0 0 0 a\nr.dat 212 50(4)/mV 12 0 0 0 0 b\n"
    )
    rec = read_record(tmp_path / "r")
    assert rec.fs == 360 and rec.sig_names == ["a", "b"]
    np.testing.assert_allclose(rec.signals, [[0x123 / 100, (-2 - 4) / 50]])


def test_format_16_and_80_by_hand(tmp_path: Path) -> None:
    (tmp_path / "s.dat").write_bytes(np.array([1000, -7, 3, 12], dtype="<i2").tobytes())
    (tmp_path / "s.hea").write_text("s 2 128\ns.dat 16 1000/uV 16 0 0 0 0 ecg\ns.dat 16\n")
    rec = read_record(tmp_path / "s.hea")
    np.testing.assert_allclose(
        rec.signals, [[1.0, -7 / 200], [0.003, 12 / 200]]
    )  # default gain 200
    assert rec.units == ["uV", "mV"]
    (tmp_path / "e.dat").write_bytes(bytes([128, 138, 100]))
    (tmp_path / "e.hea").write_text("e 1 100 3\ne.dat 80 10\n")
    np.testing.assert_allclose(read_record(tmp_path / "e").signals[:, 0], [0.0, 1.0, -2.8])


@pytest.mark.parametrize("fmt, gain", [("16", 1000.0), ("212", 200.0), ("80", 20.0)])
def test_write_then_read_round_trip(tmp_path: Path, fmt: str, gain: float) -> None:
    x = np.random.default_rng(0).normal(size=(501, 2))
    write_record(
        tmp_path, "r", x, 250.0, ["ECG", "PPG"], fmt=fmt, gain=gain, comments=["label: af"]
    )
    rec = read_record(tmp_path / "r")
    lim = {"16": 2**15 - 1, "212": 2**11 - 1, "80": 2**7 - 1}[fmt]
    np.testing.assert_allclose(rec.signals, np.clip(np.round(x * gain), -lim, lim) / gain)
    assert rec.comments == ["label: af"] and rec.sig_names == ["ECG", "PPG"]


@pytest.mark.parametrize("fmt", ["16", "212", "80"])
def test_agrees_with_the_wfdb_package(tmp_path: Path, fmt: str) -> None:
    wfdb = pytest.importorskip("wfdb")
    x = np.random.default_rng(1).normal(size=(300, 2))
    write_record(
        tmp_path, "mine", x, 360.0, ["MLII", "V5"], fmt=fmt, gain=20.0 if fmt == "80" else 200.0
    )
    theirs = wfdb.rdrecord(str(tmp_path / "mine"))
    np.testing.assert_array_equal(read_record(tmp_path / "mine").signals, theirs.p_signal)
    if fmt != "80":
        wfdb.wrsamp(
            "w",
            fs=250,
            units=["mV", "mV"],
            sig_name=["ecg", "ppg"],
            p_signal=x,
            fmt=[fmt, fmt],
            adc_gain=[100.0, 50.0],
            baseline=[10, -3],
            write_dir=str(tmp_path),
        )
        np.testing.assert_array_equal(
            read_record(tmp_path / "w").signals, wfdb.rdrecord(str(tmp_path / "w")).p_signal
        )


def test_bad_headers_are_named(tmp_path: Path) -> None:
    (tmp_path / "m.hea").write_text("m/2 2 360\n")
    with pytest.raises(ValueError, match="multi-segment"):
        read_record(tmp_path / "m")
    (tmp_path / "f.hea").write_text("f 1 360\nf.dat 310 200\n")
    with pytest.raises(ValueError, match="format"):
        read_record(tmp_path / "f")
    with pytest.raises(FileNotFoundError, match="header"):
        read_record(tmp_path / "none")


def _folder(tmp_path: Path, n_per_class: int = 3, fs: float = 128.0, seconds: float = 20.0) -> Path:
    rng = np.random.default_rng(2)
    t = np.arange(int(fs * seconds)) / fs
    rows = ["record,label"]
    for label, hz in (("slow", 1.0), ("fast", 2.0)):
        for i in range(n_per_class):
            name = f"{label}{i}"
            x = np.stack(
                [np.sin(2 * np.pi * hz * t), np.cos(2 * np.pi * hz * t)], axis=1
            ) + 0.05 * rng.normal(size=(t.size, 2))
            write_record(tmp_path, name, x, fs, ["ECG lead II", "PLETH"], fmt="212")
            rows.append(f"{name},{label}")
    write_record(tmp_path, "unlabelled", np.zeros((t.size, 2)), fs, ["ECG lead II", "PLETH"])
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def test_load_folder_resamples_and_windows(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    d = load_folder(
        folder, windows_per_recording=3, fs=64.0, window_seconds=4.0, channels=["ecg", "pleth"]
    )
    assert d.windows.shape == (6, 3, 2, 256) and d.class_names == ("fast", "slow")
    assert d.channels == ("ecg", "pleth")
    # the 1-Hz sine survives the 128 -> 64 Hz resampling: 4 cycles per 4-s window
    spec = np.abs(np.fft.rfft(d.windows[d.labels == 1][0, 0, 0]))
    assert np.argmax(spec) == 4
    everything = load_folder(folder, windows_per_recording=2, require_labels=False)
    assert everything.n_recordings == 7 and (everything.labels == -1).sum() == 1
    with pytest.raises(ValueError, match="fewer than"):
        load_folder(folder, windows_per_recording=6)
    with pytest.raises(ValueError, match="no channel"):
        load_folder(folder, channels=["abp"])
    with pytest.raises(TypeError, match="simulator"):
        load_folder(folder, noise_scale=2.0)


def test_env_serves_a_wfdb_folder(tmp_path: Path) -> None:
    """A folder of labelled records becomes probe episodes split by record; the two classes
    (1 Hz and 2 Hz) are separable by a spectral embedding."""
    folder = _folder(tmp_path, n_per_class=4)
    env = PhysioProbeEnv(data_dir=str(folder), windows_per_recording=2, embedding_dim=8)
    obs, info = env.reset(seed=0)
    assert obs.shape == (16, 2, 256) and info["class_names"] == ("fast", "slow")
    ep = env._episode
    assert ep is not None
    assert not set(ep["recording"][ep["train"]].tolist()) & set(
        ep["recording"][ep["test"]].tolist()
    )
    spec = np.abs(np.fft.rfft(obs[:, 0], axis=1))[:, :8].astype(np.float32)
    _, reward, _, _, _ = env.step(spec)
    assert reward == 1.0
    with pytest.raises(ValueError, match="no known factors"):
        PhysioProbeEnv(data_dir=str(folder), probe="factors")
