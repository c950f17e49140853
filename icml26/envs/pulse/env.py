"""``icml26/PhysioProbe-v0``: score a representation of physiological windows with the
evaluator's own probe (linear-probe accuracy on the classes, or R^2 per known factor)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26.envs._checks import check_int_at_least, check_render_mode
from icml26.envs.pulse.probes import logistic_probe, ridge_r2
from icml26.envs.pulse.simulator import (
    SAMPLE_FACTORS,
    TRANSFERABLE_FACTORS,
    PhysioConfig,
    PhysioData,
    simulate,
)

__all__ = ["PhysioProbeEnv", "PROBES", "label_subsets"]

ENV_NAME = "PhysioProbe-v0"
PROBES = ("classes", "factors")
SIGNAL_BOUND = 1e6  # observation Box bounds (signal units, about mV)
EMBED_BOUND = 1e6  # action Box bounds


@functools.lru_cache(maxsize=2)
def _probe_data(seed: int, per_class: int, windows: int, config: PhysioConfig) -> PhysioData:
    data = simulate(np.random.default_rng(seed), per_class, windows, config)
    data.windows.setflags(write=False)
    return data


def label_subsets(
    rng: np.random.Generator, labels: np.ndarray, fraction: float, draws: int, n_classes: int
) -> list[np.ndarray]:
    """Index sets of the labelled probe-training windows: ``round(fraction * n)`` drawn
    uniformly, plus one window of each class that the draw missed (the PULSE release's
    semi-supervised protocol keeps at least one label per class). ``fraction == 1``: all."""
    n = labels.size
    if fraction >= 1.0:
        return [np.arange(n)]
    out = []
    for _ in range(draws):
        chosen = set(rng.permutation(n)[: max(1, int(round(fraction * n)))].tolist())
        for c in range(n_classes):
            idx = np.flatnonzero(labels == c)
            if idx.size and not chosen.intersection(idx.tolist()):
                chosen.add(int(rng.choice(idx)))
        out.append(np.array(sorted(chosen)))
    return out


class PhysioProbeEnv(gym.Env):
    """
    ## Description
    Representation evaluation for self-supervised learning on physiological time series
    (PULSE, ICML 2026). Each episode is one probe data set: windows of ECG + PPG recordings
    from the seeded dynamical-systems simulator (:mod:`icml26.envs.pulse.simulator`) or from a
    folder of WFDB records. The agent maps every window to an embedding in one step; the
    evaluator -- never the agent -- fits its probe on the embeddings of the probe-training
    recordings and scores the held-out recordings. Splits are by recording, so windows of one
    recording never sit on both sides. The window order is shuffled, so the observation does
    not reveal the split.

    ``probe="classes"``: a multinomial logistic regression on standardized embeddings (balanced
    class weights, C = 1; the PULSE release's linear probe) fitted on a ``label_fraction`` of
    the probe-training windows (at least one per class; ``label_draws`` random draws averaged
    when the fraction is below 1). ``probe="factors"``: ridge regressions (penalty by exact
    leave-one-out) of every known factor; the transferable factors are the recording's system
    parameters, the sample-specific ones the window's own nuisance and phase.

    ## Action Space
    ``Box(-1e6, 1e6, (n_windows, embedding_dim), float32)``: one embedding per window, rows in
    observation order. Shorter embeddings are zero-padded by the agent. Wrong shapes, NaN or
    inf raise ``ValueError``/``TypeError`` before anything changes.

    ## Observation Space
    ``Box(-1e6, 1e6, (n_windows, channels, samples), float32)``: the windows (signal units,
    about mV; ``channels`` = ecg, ppg by default; 64 Hz, 4 s). ``info["fs"]``, ``["channels"]``
    and ``["class_names"]`` describe them.

    ## Rewards
    ``classes``: mean accuracy of the probe on the held-out windows over the label draws.
    ``factors``: mean held-out R^2 over the transferable factors. ``info`` after the step holds
    ``accuracy``, ``balanced_accuracy``, ``accuracies`` (per draw) and ``n_labels`` (classes), or
    ``r2`` (per factor), ``r2_transferable``, ``r2_sample`` (mean over the sample-specific
    factors) and ``selectivity`` = ``r2_transferable - r2_sample`` (factors).

    ## Starting State
    ``reset(seed)`` draws ``recordings_per_class`` probe-training and
    ``test_recordings_per_class`` held-out recordings of every class with
    ``windows_per_recording`` independent windows each (with ``data_dir``: a stratified split of
    the folder's labelled records, new for every seed).

    ## Episode End
    Terminated after the single step.

    ## Arguments
    | Parameter | Type | Default | Description |
    |---|---|---|---|
    | `probe` | str | `"classes"` | `"classes"` (linear-probe accuracy) or `"factors"` (R^2 per factor) |
    | `domain` | str | `"source"` | `"source"` or the shifted `"target"` population/device |
    | `label_fraction` | float | `1.0` | share of probe-training windows whose labels the probe sees |
    | `label_draws` | int | `5` | label subsets averaged when `label_fraction < 1` |
    | `recordings_per_class` | int | `64` | probe-training recordings per class |
    | `test_recordings_per_class` | int | `32` | held-out recordings per class |
    | `windows_per_recording` | int | `4` | windows per recording |
    | `embedding_dim` | int | `64` | width of the action's embeddings |
    | `data_dir` | str | `None` | a folder of WFDB records with `labels.csv` (see `wfdb_io`) |
    | `**simulator` | | | `PhysioConfig` fields: `fs`, `window_seconds`, `channels`, `classes`, `noise_scale`, `wander_scale`, `artefact_scale` |

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/PhysioProbe-v0", recordings_per_class=4, test_recordings_per_class=2,
    ...                windows_per_recording=2, embedding_dim=8)
    >>> obs, info = env.reset(seed=0)
    >>> print(obs.shape, info["channels"], info["class_names"])
    (48, 2, 256) ('ecg', 'ppg') ('normal', 'af', 'bbb', 'ste')
    >>> d = np.diff(obs, axis=2)                          # a crude 4-feature embedding:
    >>> emb = np.zeros((48, 8), np.float32)                # sd of each channel and of its slope
    >>> emb[:, :2], emb[:, 2:4] = obs.std(axis=2), d.std(axis=2)
    >>> obs, reward, terminated, truncated, info = env.step(emb)
    >>> print(round(float(reward), 4), terminated, info["n_labels"])
    0.5625 True 32
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        probe: str = "classes",
        domain: str = "source",
        label_fraction: float = 1.0,
        label_draws: int = 5,
        recordings_per_class: int = 64,
        test_recordings_per_class: int = 32,
        windows_per_recording: int = 4,
        embedding_dim: int = 64,
        data_dir: str | None = None,
        render_mode: str | None = None,
        **simulator: Any,
    ) -> None:
        check_render_mode(ENV_NAME, render_mode, [])
        if probe not in PROBES:
            raise ValueError(f"{ENV_NAME}: probe must be one of {PROBES}, got {probe!r}")
        if not isinstance(label_fraction, (int, float)) or not 0 < label_fraction <= 1:
            raise ValueError(
                f"{ENV_NAME}: label_fraction must be in (0, 1], got {label_fraction!r}"
            )
        self.probe = probe
        self.label_fraction = float(label_fraction)
        self.label_draws = check_int_at_least(ENV_NAME, "label_draws", label_draws)
        self.recordings_per_class = check_int_at_least(
            ENV_NAME, "recordings_per_class", recordings_per_class
        )
        self.test_recordings_per_class = check_int_at_least(
            ENV_NAME, "test_recordings_per_class", test_recordings_per_class
        )
        self.windows_per_recording = check_int_at_least(
            ENV_NAME, "windows_per_recording", windows_per_recording
        )
        self.embedding_dim = check_int_at_least(ENV_NAME, "embedding_dim", embedding_dim)
        self._folder: PhysioData | None = None
        if data_dir is not None:
            if probe == "factors":
                raise ValueError(
                    f"{ENV_NAME}: real recordings have no known factors; use probe='classes'"
                )
            from icml26.envs.pulse.wfdb_io import load_folder

            self._folder = load_folder(
                Path(data_dir), windows_per_recording=windows_per_recording, **simulator
            )
            self.config: PhysioConfig | None = None
            self.domain = f"wfdb:{data_dir}"
            counts = np.bincount(self._folder.labels, minlength=len(self._folder.class_names))
            if np.any(counts < 2):
                raise ValueError(
                    f"{ENV_NAME}: every class needs >= 2 labelled records in {data_dir} (one to fit, "
                    f"one to test), got {dict(zip(self._folder.class_names, counts.tolist()))}"
                )
            # each class's records split in the ratio recordings_per_class : test_recordings_per_class
            share = self.recordings_per_class / (
                self.recordings_per_class + self.test_recordings_per_class
            )
            self._n_train = [int(min(max(1, round(k * share)), k - 1)) for k in counts.tolist()]
            n_windows = self._folder.n_recordings * self._folder.windows_per_recording
            shape = self._folder.windows.shape[2:]
            self.class_names = self._folder.class_names
            self.channels = self._folder.channels
            self.fs = self._folder.fs
        else:
            try:
                self.config = PhysioConfig.from_kwargs(domain=domain, **simulator)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{ENV_NAME}: {exc}") from None
            self.domain = domain
            n_cls = len(self.config.classes)
            n_windows = (
                n_cls
                * (self.recordings_per_class + self.test_recordings_per_class)
                * self.windows_per_recording
            )
            shape = (len(self.config.channels), self.config.length)
            self.class_names = self.config.classes
            self.channels = self.config.channels
            self.fs = float(self.config.fs)
        self.n_windows = int(n_windows)
        self.observation_space = spaces.Box(
            -SIGNAL_BOUND, SIGNAL_BOUND, (self.n_windows, *shape), np.float32
        )
        self.action_space = spaces.Box(
            -EMBED_BOUND, EMBED_BOUND, (self.n_windows, self.embedding_dim), np.float32
        )
        self._episode: dict[str, Any] | None = None

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        if self._folder is not None:
            train_rec, test_rec = self._split_folder(rng)
            data = self._folder
        else:
            assert self.config is not None
            per = self.recordings_per_class + self.test_recordings_per_class
            # the data are a pure function of one draw, so evaluations of one trial that share
            # a seed (label fractions, factors) reuse them; the label draws come after it
            data = _probe_data(
                int(rng.integers(2**63)), per, self.windows_per_recording, self.config
            )
            train_rec, test_rec = [], []
            for c in range(len(self.class_names)):
                idx = np.flatnonzero(data.labels == c)
                train_rec += idx[: self.recordings_per_class].tolist()
                test_rec += idx[self.recordings_per_class :].tolist()
        train_rec, test_rec = np.sort(train_rec), np.sort(test_rec)
        w = data.windows_per_recording
        win = lambda recs: (recs[:, None] * w + np.arange(w)).ravel()  # noqa: E731
        train_w, test_w = win(train_rec), win(test_rec)
        x, y, rec = data.flat()
        order = rng.permutation(np.concatenate([train_w, test_w]))
        pos = np.empty(x.shape[0], dtype=np.int64)
        pos[order] = np.arange(order.size)
        episode: dict[str, Any] = {
            "train": pos[train_w],
            "test": pos[test_w],
            "y_train": y[train_w],
            "y_test": y[test_w],
            "recording": rec[order],  # recording of each observed window (for checks; not shown)
        }
        if self.probe == "factors":
            names = [*TRANSFERABLE_FACTORS, *SAMPLE_FACTORS]
            f = data.factor_matrix(names)
            episode.update(names=names, f_train=f[train_w], f_test=f[test_w])
        else:
            episode["subsets"] = label_subsets(
                rng,
                episode["y_train"],
                self.label_fraction,
                self.label_draws,
                len(self.class_names),
            )
        self._episode = episode
        obs = np.ascontiguousarray(x[order], dtype=np.float32)
        return obs, self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._episode is None:
            raise RuntimeError(f"{ENV_NAME}: call reset() before step() (episodes last one step)")
        z = self._check_action(action)
        ep, self._episode = self._episode, None
        z_train, z_test = z[ep["train"]], z[ep["test"]]
        info = self._info()
        if self.probe == "classes":
            accs, baccs = [], []
            for sub in ep["subsets"]:
                pred = logistic_probe(
                    z_train[sub], ep["y_train"][sub], z_test, len(self.class_names)
                )
                accs.append(float(np.mean(pred == ep["y_test"])))
                per_class = [
                    float(np.mean(pred[ep["y_test"] == c] == c))
                    for c in range(len(self.class_names))
                    if np.any(ep["y_test"] == c)
                ]
                baccs.append(float(np.mean(per_class)))
            info.update(
                accuracy=float(np.mean(accs)),
                balanced_accuracy=float(np.mean(baccs)),
                accuracies=accs,
                n_labels=int(np.mean([s.size for s in ep["subsets"]])),
            )
            reward = info["accuracy"]
        else:
            r2 = ridge_r2(z_train, ep["f_train"], z_test, ep["f_test"])
            r2d = {n: float(v) for n, v in zip(ep["names"], r2)}
            t = float(np.mean([r2d[n] for n in TRANSFERABLE_FACTORS]))
            s = float(np.mean([r2d[n] for n in SAMPLE_FACTORS]))
            info.update(r2=r2d, r2_transferable=t, r2_sample=s, selectivity=t - s)
            reward = t
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        return obs, float(reward), True, False, info

    # ------------------------------------------------------------------ helpers
    def _info(self) -> dict[str, Any]:
        return {
            "fs": self.fs,
            "channels": tuple(self.channels),
            "class_names": tuple(self.class_names),
            "probe": self.probe,
            "domain": self.domain,
            "label_fraction": self.label_fraction,
            "n_windows": self.n_windows,
        }

    def _split_folder(self, rng: np.random.Generator) -> tuple[list[int], list[int]]:
        assert self._folder is not None
        train, test = [], []
        for c, k in enumerate(self._n_train):
            idx = rng.permutation(np.flatnonzero(self._folder.labels == c))
            train += idx[:k].tolist()
            test += idx[k:].tolist()
        return train, test

    def _check_action(self, action: Any) -> np.ndarray:
        want = f"embeddings of shape {self.action_space.shape} (one row per window)"
        try:
            z = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{ENV_NAME}: expected {want}, got {type(action).__name__}") from None
        if z.shape != self.action_space.shape:
            raise ValueError(f"{ENV_NAME}: expected {want}, got shape {z.shape}")
        if not np.all(np.isfinite(z)) or np.any(np.abs(z) > EMBED_BOUND):
            raise ValueError(
                f"{ENV_NAME}: embeddings must be finite with |value| <= {EMBED_BOUND:g}"
            )
        return z
