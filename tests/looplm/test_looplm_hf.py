"""Training models other than ours: per-loop interface, truncated-loop fallback, local HF checkpoints."""

from __future__ import annotations

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
        return SimpleNamespace(logits=self.inner(input_ids, attention_mask, n_loops=self.config.total_ut_steps).logits)


class NativeLM(TruncatableLM):
    """An HF-style LM that also speaks RLTT's per-loop keywords (like RLTT's modified Ouro)."""

    def forward(self, input_ids, attention_mask=None, return_per_loop_log_probs=False,  # type: ignore[no-untyped-def]
                return_exit_pdf=False, log_prob_labels=None, log_prob_temperature=1.0):
        return self.inner(input_ids, attention_mask, return_per_loop_log_probs=return_per_loop_log_probs,
                          return_exit_pdf=return_exit_pdf, log_prob_labels=log_prob_labels,
                          log_prob_temperature=log_prob_temperature)


def _inner() -> LoopedTransformer:
    torch.manual_seed(0)
    m = LoopedTransformer(LoopConfig(vocab_size=CharTokenizer().vocab_size, d_model=32, n_layers=1, n_loops=3))
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
    assert not fallback.native and native.native and native.has_exit_gate and not fallback.has_exit_gate
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
    hf_tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<eos>", pad_token="<pad>")
    hf_tok.save_pretrained(path)
    cfg = transformers.GPT2Config(vocab_size=len(vocab), n_positions=256, n_embd=32, n_layer=1, n_head=2,
                                  bos_token_id=1, eos_token_id=1, pad_token_id=0)
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
    src = type(src)(src.sample, src.prompt, lambda c, p: np.array([float(len(x) % 2 == 0) for x in c]))
    for algo, omega in (("rltt", "uniform"), ("grpo", "uniform")):
        tr = LoopRLTrainer(pol, src, RLConfig(algo=algo, omega=omega, prompts_per_step=2, group_size=4,
                                              max_new_tokens=3), seed=0)
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
    assert rg_src.score([rg_env.unwrapped._entries[i]["answer"] for i in idx], idx).tolist() == [1.0] * 3
    s = LoopRLTrainer(pol, rg_src, RLConfig(algo="rltt", omega="progressive", prompts_per_step=1, group_size=2,
                                            max_new_tokens=2), seed=0).step()
    assert np.isfinite(s["loss"]) and s["reward"] == 0.0  # a random model answers nothing right
    test = gym.make("icml26/LoopReasoning-v0", split="test").unwrapped
    probs = test.sample_group(4, seed=0)
    ev = evaluate_policy(pol, probs, lambda p: p.prompt, test.score, 3, k=2)
    assert 0.0 <= ev["accuracy"] <= 1.0 and len(ev["per_loop_accuracy"]) == 1 and "threshold_curve" not in ev


def test_load_hf_checkpoint_never_downloads(tmp_path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(FileNotFoundError, match="not a local checkpoint directory"):
        load_hf_checkpoint(tmp_path / "ByteDance/Ouro-1.4B")
