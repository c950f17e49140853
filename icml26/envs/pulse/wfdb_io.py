"""Real recordings in PhysioNet's WFDB format, read in numpy (no extra needed).

:func:`read_record` parses a header (``.hea``) and its signal files in formats 16 (16-bit
little-endian two's complement), 212 (pairs of 12-bit samples packed into 3 bytes, the MIT-BIH
format) and 80 (8-bit offset binary); physical value = (digital - baseline) / gain
(WFDB's header specification: gain defaults to 200, baseline to the ADC zero). The optional
``wfdb`` package (``pip install icml26-gym[pulse]``) is the reference the tests compare with.
:func:`write_record` writes the same formats (for fixtures and exports).

:func:`load_folder` turns a folder of records into :class:`~icml26.envs.pulse.simulator.PhysioData`:
channels picked by name, resampled to ``fs``, ``windows_per_recording`` windows of
``window_seconds`` spread evenly over each record, labels from ``labels.csv`` (``record,label``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from icml26.envs.pulse.simulator import PhysioData

__all__ = ["Record", "read_record", "write_record", "load_folder", "FORMATS"]

FORMATS = ("16", "212", "80")


@dataclass
class Record:
    """One WFDB record: ``signals`` (samples, channels) in physical units."""

    name: str
    fs: float
    signals: np.ndarray
    sig_names: list[str]
    units: list[str]
    comments: list[str] = field(default_factory=list)


@dataclass
class _Signal:
    file: str
    fmt: str
    gain: float
    baseline: int
    units: str
    name: str


def _parse_header(path: Path) -> tuple[str, int, float, int | None, list[_Signal], list[str]]:
    lines = path.read_text().splitlines()
    comments = [ln[1:].strip() for ln in lines if ln.startswith("#")]
    body = [ln.split() for ln in lines if ln.strip() and not ln.startswith("#")]
    if not body:
        raise ValueError(f"{path}: empty WFDB header")
    rec = body[0]
    if "/" in rec[0] and rec[0].split("/")[1].isdigit():
        raise ValueError(f"{path}: multi-segment records are not supported")
    try:
        n_sig = int(rec[1])
        fs = float(rec[2].split("/")[0].split("(")[0]) if len(rec) > 2 else 250.0
        n_samples = int(rec[3]) if len(rec) > 3 else None
    except (IndexError, ValueError):
        raise ValueError(f"{path}: malformed record line {' '.join(rec)!r}") from None
    if len(body) < 1 + n_sig:
        raise ValueError(
            f"{path}: header declares {n_sig} signals, found {len(body) - 1} signal lines"
        )
    sigs = []
    for k, fields in enumerate(body[1 : 1 + n_sig]):
        fmt = fields[1].split("x")[0].split(":")[0].split("+")[0]
        if fmt not in FORMATS:
            raise ValueError(f"{path}: signal {k} has format {fields[1]!r}; supported: {FORMATS}")
        if any(c in fields[1] for c in "x:+"):
            raise ValueError(
                f"{path}: signal {k}: samples-per-frame, skew and byte offsets are not supported"
            )
        gain, baseline, units = 200.0, None, "mV"
        if len(fields) > 2:
            g = fields[2]
            if "/" in g:
                g, units = g.split("/", 1)
            if "(" in g:
                g, b = g.rstrip(")").split("(")
                baseline = int(b)
            gain = float(g) or 200.0
        adc_zero = int(fields[4]) if len(fields) > 4 else 0
        name = " ".join(fields[8:]) if len(fields) > 8 else f"sig{k}"
        sigs.append(
            _Signal(fields[0], fmt, gain, adc_zero if baseline is None else baseline, units, name)
        )
    return rec[0], n_sig, fs, n_samples, sigs, comments


def _decode(raw: bytes, fmt: str) -> np.ndarray:
    if fmt == "16":
        return np.frombuffer(raw[: len(raw) // 2 * 2], dtype="<i2").astype(np.int64)
    if fmt == "80":
        return np.frombuffer(raw, dtype=np.uint8).astype(np.int64) - 128
    b = np.frombuffer(raw[: len(raw) // 3 * 3], dtype=np.uint8).astype(np.int64).reshape(-1, 3)
    s0 = b[:, 0] | ((b[:, 1] & 0x0F) << 8)
    s1 = b[:, 2] | ((b[:, 1] & 0xF0) << 4)
    out = np.stack([s0, s1], axis=1).ravel()
    return np.where(out >= 2048, out - 4096, out)


def _encode(d: np.ndarray, fmt: str) -> bytes:
    d = np.asarray(d, dtype=np.int64).ravel()
    if fmt == "16":
        return d.astype("<i2").tobytes()
    if fmt == "80":
        return (d + 128).astype(np.uint8).tobytes()
    if d.size % 2:
        d = np.append(d, 0)
    u = np.where(d < 0, d + 4096, d).reshape(-1, 2)
    b = np.stack(
        [u[:, 0] & 0xFF, ((u[:, 0] >> 8) & 0x0F) | ((u[:, 1] >> 4) & 0xF0), u[:, 1] & 0xFF], axis=1
    )
    return b.astype(np.uint8).tobytes()


def read_record(path: str | Path) -> Record:
    """Read ``path`` (with or without ``.hea``); signal files are looked up beside the header."""
    p = Path(path)
    hea = p if p.suffix == ".hea" else p.with_name(p.name + ".hea")
    if not hea.exists():
        raise FileNotFoundError(f"no WFDB header {hea}")
    name, n_sig, fs, n_samples, sigs, comments = _parse_header(hea)
    files: dict[str, list[int]] = {}
    for k, s in enumerate(sigs):
        files.setdefault(s.file, []).append(k)
    columns: dict[int, np.ndarray] = {}
    for fname, idx in files.items():
        fmts = {sigs[k].fmt for k in idx}
        if len(fmts) != 1:
            raise ValueError(
                f"{hea}: signals sharing {fname} must share a format, got {sorted(fmts)}"
            )
        data = _decode((hea.parent / fname).read_bytes(), fmts.pop())
        frames = data.size // len(idx)
        data = data[: frames * len(idx)].reshape(frames, len(idx))
        for j, k in enumerate(idx):
            columns[k] = data[:, j]
    length = min(c.size for c in columns.values())
    if n_samples is not None:
        if length < n_samples:
            raise ValueError(
                f"{hea}: header declares {n_samples} samples, the signal files hold {length}"
            )
        length = n_samples
    phys = np.stack(
        [(columns[k][:length] - sigs[k].baseline) / sigs[k].gain for k in range(n_sig)], axis=1
    )
    return Record(name, fs, phys, [s.name for s in sigs], [s.units for s in sigs], comments)


def write_record(
    folder: str | Path,
    name: str,
    signals: np.ndarray,
    fs: float,
    sig_names: list[str],
    fmt: str = "16",
    gain: float = 200.0,
    units: str = "mV",
    comments: list[str] | None = None,
) -> Path:
    """Write ``signals`` (samples, channels; physical units) as ``name.hea`` + ``name.dat``
    (one interleaved file, baseline 0); returns the header path."""
    if fmt not in FORMATS:
        raise ValueError(f"write_record: fmt must be one of {FORMATS}, got {fmt!r}")
    x = np.asarray(signals, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(sig_names):
        raise ValueError(
            f"write_record: signals must be (samples, {len(sig_names)}), got {x.shape}"
        )
    lim = {"16": 2**15 - 1, "212": 2**11 - 1, "80": 2**7 - 1}[fmt]
    d = np.clip(np.round(x * gain), -lim, lim).astype(np.int64)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.dat").write_bytes(_encode(d, fmt))
    lines = [f"{name} {x.shape[1]} {fs:g} {x.shape[0]}"]
    for k, s in enumerate(sig_names):
        lines.append(f"{name}.dat {fmt} {gain:g}(0)/{units} 12 0 {int(d[0, k])} 0 0 {s}")
    lines += [f"# {c}" for c in comments or []]
    hea = folder / f"{name}.hea"
    hea.write_text("\n".join(lines) + "\n")
    return hea


def _pick(record: Record, channels: tuple[str, ...] | None) -> tuple[np.ndarray, tuple[str, ...]]:
    if channels is None:
        return record.signals, tuple(record.sig_names)
    lower = [s.lower() for s in record.sig_names]
    cols = []
    for c in channels:
        hits = [i for i, s in enumerate(lower) if s == c.lower() or s.startswith(c.lower())]
        if not hits:
            raise ValueError(
                f"record {record.name}: no channel named {c!r}; it has {record.sig_names}"
            )
        cols.append(hits[0])
    return record.signals[:, cols], tuple(channels)


def load_folder(
    folder: Path,
    windows_per_recording: int = 4,
    fs: float = 64.0,
    window_seconds: float = 4.0,
    channels: tuple[str, ...] | list[str] | None = None,
    labels_file: str = "labels.csv",
    require_labels: bool = True,
    **unknown: Any,
) -> PhysioData:
    """Every record listed in ``RECORDS`` (else every ``*.hea``) as windows, resampled to ``fs``.

    ``labels.csv`` (columns ``record,label``) gives the classes (sorted label names); records
    without a label are skipped unless ``require_labels`` is False (then labels are -1).
    """
    from scipy.signal import resample_poly

    if unknown:
        raise TypeError(
            f"load_folder: options {sorted(unknown)} apply to the simulator, not to WFDB folders"
        )
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no WFDB folder {folder}")
    listing = folder / "RECORDS"
    names = (
        [ln.strip() for ln in listing.read_text().splitlines() if ln.strip()]
        if listing.exists()
        else sorted(p.stem for p in folder.glob("*.hea"))
    )
    labels: dict[str, str] = {}
    if (folder / labels_file).exists():
        with open(folder / labels_file, newline="") as fh:
            for row in csv.DictReader(fh):
                labels[row["record"].strip()] = row["label"].strip()
    elif require_labels:
        raise FileNotFoundError(f"{folder}: no {labels_file} (columns record,label)")
    class_names = tuple(sorted(set(labels.values())))
    T = int(round(fs * window_seconds))
    windows, ys, chans = [], [], None
    for name in names:
        if require_labels and name not in labels:
            continue
        rec = read_record(folder / name)
        x, picked = _pick(rec, None if channels is None else tuple(channels))
        if chans is not None and len(picked) != len(chans):
            raise ValueError(
                f"record {name}: {len(picked)} channels, others have {len(chans)}; pass channels="
            )
        chans = picked
        ratio = Fraction(fs / rec.fs).limit_denominator(1000)
        y = resample_poly(x, ratio.numerator, ratio.denominator, axis=0) if ratio != 1 else x
        if y.shape[0] < T * windows_per_recording:
            raise ValueError(
                f"record {name}: {y.shape[0] / fs:.1f} s holds fewer than {windows_per_recording} "
                f"windows of {window_seconds} s"
            )
        starts = np.linspace(0, y.shape[0] - T, windows_per_recording).astype(int)
        windows.append(np.stack([y[s : s + T].T for s in starts]))
        ys.append(class_names.index(labels[name]) if name in labels else -1)
    if not windows:
        raise ValueError(f"{folder}: no usable (labelled) records among {len(names)}")
    assert chans is not None
    return PhysioData(
        windows=np.stack(windows).astype(np.float32),
        labels=np.asarray(ys, dtype=np.int64),
        fs=float(fs),
        channels=chans,
        class_names=class_names,
        source=f"wfdb:{folder}",
    )
