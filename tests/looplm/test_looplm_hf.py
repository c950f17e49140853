"""Training models other than ours: per-loop interface, truncated-loop fallback, local HF checkpoints."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

import icml26  # noqa: F401
from icml26.agents.looplm.evaluation import evaluate_policy
from icml26.agents.looplm.hf import HFLoopedPolicy, load_hf_checkpoint
from icml26.agents.looplm.model import LoopConfig, LoopedTransformer
from icml26.agents.looplm.policy import LoopedPolicy
from icml26.agents.looplm.rl import LoopRLTrainer, RLConfig, problem_source
from icml26.envs.looplm.tokenizer import CHARSET, CharTokenizer

torch.set_num_threads(1)


class TruncatableLM(nn.Module):
    """An HF-style LM: ``forward(input_ids, attention_mask) -> .logits``, loops in config.total_ut_steps."""

    def __init__(self, inner: LoopedTransformer) -> None:
        super().__init__()
        self.inner = inner
        self.config = SimpleNamespace(total_ut_steps=inner.config.n_loops)

    def forward(self, input_ids, attention_mask=None):  # type: ignore[no-untyped-def]
        return SimpleNamespace(
            logits=self.inner(input_ids, attention_mask, n_loops=self.config.total_ut_steps).logits
        )


class NativeLM(TruncatableLM):
    """An HF-style LM that also speaks RLTT's per-loop keywords (like RLTT's modified Ouro)."""

    def forward(
        self,
        input_ids,
        attention_mask=None,
        return_per_loop_log_probs=False,  # type: ignore[no-untyped-def]
        return_exit_pdf=False,
        log_prob_labels=None,
        log_prob_temperature=1.0,
    ):
        return self.inner(
            input_ids,
            attention_mask,
            return_per_loop_log_probs=return_per_loop_log_probs,
            return_exit_pdf=return_exit_pdf,
            log_prob_labels=log_prob_labels,
            log_prob_temperature=log_prob_temperature,
        )


def _inner() -> LoopedTransformer:
    torch.manual_seed(0)
    m = LoopedTransformer(
        LoopConfig(vocab_size=CharTokenizer().vocab_size, d_model=32, n_layers=1, n_loops=3)
    )
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return m


def test_truncated_loop_fallback_equals_native_per_loop_outputs() -> None:
    inner = _inner()
    ours = LoopedPolicy(inner)
    ids, mask = ours.encode(["12+34=", "7+8="])
    gen = ours.generate(ids, mask, 4, temperature=1.0, generator=torch.Generator().manual_seed(0))
    tok = SimpleNamespace(eos_token_id=1, pad_token_id=0)
    want = ours.per_loop(ids, mask, gen, temperature=0.8)
    fallback = HFLoopedPolicy(TruncatableLM(inner), tok)
    native = HFLoopedPolicy(NativeLM(inner), tok)
    assert (
        not fallback.native
        and native.native
        and native.has_exit_gate
        and not fallback.has_exit_gate
    )
    assert fallback.n_loops == native.n_loops == 3
    for pol in (fallback, native):
        got = pol.per_loop(ids, mask, gen, temperature=0.8)
        torch.testing.assert_close(got.log_probs, want.log_probs, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got.entropies, want.entropies, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(native.per_loop(ids, mask, gen).exit_pdf, want.exit_pdf)
    assert fallback.model.config.total_ut_steps == 3  # restored after the truncated passes


def _tiny_hf_checkpoint(path) -> None:  # type: ignore[no-untyped-def]
    transformers = pytest.importorskip("transformers")
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {"<pad>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate(CHARSET)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.decoder = decoders.Fuse()
    hf_tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<eos>", pad_token="<pad>"
    )
    hf_tok.save_pretrained(path)
    cfg = transformers.GPT2Config(
        vocab_size=len(vocab),
        n_positions=256,
        n_embd=32,
        n_layer=1,
        n_head=2,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(cfg).save_pretrained(path)


def test_local_hf_checkpoint_trains_with_rltt_and_grpo(tmp_path) -> None:
    _tiny_hf_checkpoint(tmp_path)
    model, tok = load_hf_checkpoint(tmp_path)
    pol = HFLoopedPolicy(model, tok)
    assert pol.n_loops == 1 and not pol.native  # a plain LM: one loop
    ids, mask = pol.encode(["12+34=", "5+6="])
    assert ids.shape == (2, 6) and mask.tolist()[1][:2] == [False, False]  # left padding
    assert pol.decode(torch.tensor([[5, 6, 1, 0]])) == ["34"]
    env = gym.make("icml26/LoopReasoning-v0")
    src = problem_source(env)
    src = type(src)(
        src.sample, src.prompt, lambda c, p: np.array([float(len(x) % 2 == 0) for x in c])
    )
    for algo, omega in (("rltt", "uniform"), ("grpo", "uniform")):
        tr = LoopRLTrainer(
            pol,
            src,
            RLConfig(algo=algo, omega=omega, prompts_per_step=2, group_size=4, max_new_tokens=3),
            seed=0,
        )
        before = [p.detach().clone() for p in model.parameters()]
        s = tr.step()
        assert np.isfinite(s["loss"]) and "exit_pdf" not in s
        assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    with pytest.raises(ValueError, match="exit gate"):
        LoopRLTrainer(pol, src, RLConfig(algo="rltt", omega="exit_pdf"), seed=0)
    pytest.importorskip("reasoning_gym")
    rg_env = gym.make("icml26/ReasoningGym-v0", name="basic_arithmetic", size=20)
    rg_src = problem_source(rg_env)
    idx = rg_src.sample(3, np.random.default_rng(0))
    assert rg_src.prompt(idx[0]) == rg_env.unwrapped.question(idx[0])
    assert (
        rg_src.score([rg_env.unwrapped._entries[i]["answer"] for i in idx], idx).tolist()
        == [1.0] * 3
    )
    s = LoopRLTrainer(
        pol,
        rg_src,
        RLConfig(
            algo="rltt", omega="progressive", prompts_per_step=1, group_size=2, max_new_tokens=2
        ),
        seed=0,
    ).step()
    assert np.isfinite(s["loss"]) and s["reward"] == 0.0  # a random model answers nothing right
    test = gym.make("icml26/LoopReasoning-v0", split="test").unwrapped
    probs = test.sample_group(4, seed=0)
    ev = evaluate_policy(pol, probs, lambda p: p.prompt, test.score, 3, k=2)
    assert (
        0.0 <= ev["accuracy"] <= 1.0
        and len(ev["per_loop_accuracy"]) == 1
        and "threshold_curve" not in ev
    )


def test_load_hf_checkpoint_never_downloads(tmp_path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(FileNotFoundError, match="not a local checkpoint directory"):
        load_hf_checkpoint(tmp_path / "ByteDance/Ouro-1.4B")


FIXTURE = Path(__file__).parent / "fixtures" / "tiny_ouro"


def _tiny_ouro_checkpoint(path: Path, loops: int = 3) -> None:
    """A local looped checkpoint laid out like Ouro's: remote modelling code + ``auto_map`` +
    ``total_ut_steps`` in config.json, safetensors weights, a tokenizer."""
    transformers = pytest.importorskip("transformers")
    import importlib.util
    import sys

    _tiny_hf_checkpoint(path)  # the character tokenizer (its GPT-2 weights are replaced below)
    for f in ("config.json", "model.safetensors", "generation_config.json"):
        (path / f).unlink(missing_ok=True)
    for f in ("configuration_tiny_ouro.py", "modeling_tiny_ouro.py"):
        shutil.copy(FIXTURE / f, path / f)
    # build the model from the fixture's own source, as a package so its relative import works
    pkg = "tiny_ouro_fixture"
    spec = importlib.util.spec_from_file_location(
        pkg, path / "modeling_tiny_ouro.py", submodule_search_locations=[str(path)]
    )
    assert spec is not None and spec.loader is not None
    init = importlib.util.module_from_spec(
        importlib.util.spec_from_loader(pkg, loader=None, is_package=True)
    )
    init.__path__ = [str(path)]  # type: ignore[attr-defined]
    sys.modules[pkg] = init
    try:
        conf = importlib.import_module(f"{pkg}.configuration_tiny_ouro")
        mod = importlib.import_module(f"{pkg}.modeling_tiny_ouro")
        cfg = conf.TinyOuroConfig(
            vocab_size=CharTokenizer().vocab_size,
            total_ut_steps=loops,
            eos_token_id=1,
            pad_token_id=0,
        )
        cfg.auto_map = {
            "AutoConfig": "configuration_tiny_ouro.TinyOuroConfig",
            "AutoModelForCausalLM": "modeling_tiny_ouro.TinyOuroForCausalLM",
        }
        torch.manual_seed(0)
        model = mod.TinyOuroForCausalLM(cfg)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.3 * torch.randn_like(p))
        model.save_pretrained(path)
    finally:
        for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
            del sys.modules[name]
    assert transformers is not None


def test_local_looped_checkpoint_loads_like_ouro_and_trains_end_to_end(tmp_path) -> None:
    """The real-model track end to end: a looped checkpoint with remote code (as Ouro ships) is
    loaded from disk only, its loops are truncated through ``config.total_ut_steps``, and RLTT,
    GRPO (with its PPO minibatches) and the evaluation run on it."""
    _tiny_ouro_checkpoint(tmp_path, loops=3)
    with pytest.raises(ValueError, match="trust_remote_code"):
        load_hf_checkpoint(tmp_path)  # remote code is never run unless asked for
    model, tok = load_hf_checkpoint(tmp_path, trust_remote_code=True)
    assert type(model).__name__ == "TinyOuroForCausalLM" and model.config.total_ut_steps == 3
    pol = HFLoopedPolicy(model, tok)
    assert pol.n_loops == 3 and not pol.native and not pol.has_exit_gate
    ids, mask = pol.encode(["12+34=", "7+8="])
    gen = pol.generate(ids, mask, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    pl = pol.per_loop(ids, mask, gen)
    assert pl.log_probs.shape == (2, gen.tokens.shape[1], 3) and model.config.total_ut_steps == 3
    # loop t of the policy is the checkpoint run with t loops, recomputed here by hand
    from icml26.agents.looplm.policy import completion_labels

    full, attn, labels, span = completion_labels(ids, mask, gen.tokens, gen.mask)
    pos = (attn.long().cumsum(-1) - 1).clamp(min=0)
    for t in (1, 3):
        model.config.total_ut_steps = t
        with torch.no_grad():
            lp = torch.log_softmax(
                model(input_ids=full, attention_mask=attn.long(), position_ids=pos).logits, -1
            )
        model.config.total_ut_steps = 3
        want = lp.gather(-1, labels.clamp(min=0)[..., None])[..., 0] * (labels >= 0)
        torch.testing.assert_close(pl.log_probs[..., t - 1], want[:, span], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(
        pl.log_probs[..., 0], pl.log_probs[..., 2]
    )  # the loops change the output
    env = gym.make("icml26/LoopReasoning-v0")
    src = problem_source(env)
    src = type(src)(
        src.sample, src.prompt, lambda c, p: np.array([float(len(x) % 2 == 0) for x in c])
    )
    for algo, omega, mb in (
        ("rltt", "progressive", 2),
        ("grpo", "uniform", 2),
        ("reinforce", "uniform", 1),
    ):
        before = [p.detach().clone() for p in model.parameters()]
        s = LoopRLTrainer(
            pol,
            src,
            RLConfig(
                algo=algo,
                omega=omega,
                prompts_per_step=2,
                group_size=4,
                minibatches=mb,
                max_new_tokens=3,
            ),
            seed=0,
        ).step()
        assert np.isfinite(s["loss"]) and any(
            not torch.equal(a, b) for a, b in zip(before, model.parameters())
        )
    test = gym.make("icml26/LoopReasoning-v0", split="test").unwrapped
    ev = evaluate_policy(pol, test.sample_group(4, seed=0), lambda p: p.prompt, test.score, 3, k=2)
    assert len(ev["per_loop_accuracy"]) == 3 and all(
        0.0 <= a <= 1.0 for a in ev["per_loop_accuracy"]
    )
