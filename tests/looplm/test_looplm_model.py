"""The looped transformer: exit distribution, per-loop outputs, KV cache, decoding modes, save/load."""

from __future__ import annotations

import pytest
import torch

from icml26.agents.looplm.model import LoopConfig, LoopedTransformer, exit_distribution, ouro_loss
from icml26.agents.looplm.policy import LoopedPolicy, completion_labels, generate
from icml26.envs.looplm.tokenizer import CharTokenizer

torch.set_num_threads(1)
V = CharTokenizer().vocab_size


def _model(seed: int = 0, **kw) -> LoopedTransformer:
    torch.manual_seed(seed)
    m = LoopedTransformer(
        LoopConfig(vocab_size=V, d_model=32, n_heads=4, n_layers=2, n_loops=4, **kw)
    )
    with torch.no_grad():  # larger random weights so loops differ visibly
        for p in m.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return m.eval()


def _prompts() -> tuple[torch.Tensor, torch.Tensor]:
    return LoopedPolicy(_model()).encode(["12+34=", "5+6=", "parity 0110="])


def test_exit_distribution_sums_to_one_and_matches_the_hand_formula() -> None:
    g = torch.randn(5, 7, 4) * 6
    p = exit_distribution(g)
    torch.testing.assert_close(p.sum(-1), torch.ones(5, 7))
    assert bool((p >= 0).all())
    lam = torch.sigmoid(torch.tensor([0.3, -1.0, 2.0, 0.7]))  # the last gate is unused
    want = torch.stack(
        [
            lam[0],
            lam[1] * (1 - lam[0]),
            lam[2] * (1 - lam[0]) * (1 - lam[1]),
            (1 - lam[0]) * (1 - lam[1]) * (1 - lam[2]),
        ]
    )
    torch.testing.assert_close(exit_distribution(torch.logit(lam)), want)
    torch.testing.assert_close(exit_distribution(torch.zeros(3)), torch.tensor([0.5, 0.25, 0.25]))
    ids, mask = _prompts()
    out = _model()(ids, mask, return_exit_pdf=True)
    torch.testing.assert_close(out.exit_pdf.sum(-1), torch.ones(ids.shape))


def test_per_loop_log_probs_match_truncated_passes() -> None:
    m = _model()
    ids, mask = _prompts()
    labels = torch.roll(ids, -1, dims=1)
    labels[:, -1] = -100
    out = m(
        ids,
        mask,
        return_per_loop_log_probs=True,
        return_per_loop_logits=True,
        log_prob_labels=labels,
        log_prob_temperature=0.7,
    )
    T = m.config.n_loops
    assert out.per_loop_log_probs.shape == (*ids.shape, T)
    for t in range(1, T + 1):
        trunc = m(ids, mask, n_loops=t)
        torch.testing.assert_close(out.per_loop_logits[:, :, t - 1], trunc.logits)
        lp = torch.log_softmax(trunc.logits / 0.7, -1).gather(-1, labels.clamp(min=0)[..., None])[
            ..., 0
        ]
        torch.testing.assert_close(
            out.per_loop_log_probs[..., t - 1], lp * (labels >= 0), atol=1e-5, rtol=1e-5
        )
    # the loops really differ, so the check above is not vacuous
    assert (out.per_loop_log_probs[..., 0] - out.per_loop_log_probs[..., -1]).abs().max() > 1e-2
    torch.testing.assert_close(
        m(ids, mask, total_ut_steps=2).logits, m(ids, mask, n_loops=2).logits
    )


def test_left_padding_does_not_change_real_token_outputs() -> None:
    m = _model()
    tok = CharTokenizer()
    short = torch.tensor([tok.encode("5+6=")])
    padded, pmask = LoopedPolicy(m).encode(["5+6=", "123+456="])
    a = m(short).logits[0]
    b = m(padded, pmask).logits[0, -4:]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_kv_cache_matches_full_recomputation() -> None:
    m = _model()
    ids, mask = _prompts()
    full = m(ids, mask)
    head = m(ids[:, :-2], mask[:, :-2], use_cache=True)
    assert len(head.past_key_values) == m.config.n_loops and len(head.past_key_values[0]) == 2
    tail = m(ids[:, -2:], mask, past_key_values=head.past_key_values, use_cache=True)
    torch.testing.assert_close(tail.logits, full.logits[:, -2:], atol=1e-5, rtol=1e-5)
    for kw in (
        {},
        {"loop": 2},
        {"mode": "threshold", "threshold": 0.5},
        {"mode": "mix"},
        {"temperature": 1.0},
    ):
        g1 = generate(
            m, ids, mask, 6, use_cache=True, generator=torch.Generator().manual_seed(1), **kw
        )
        g2 = generate(
            m, ids, mask, 6, use_cache=False, generator=torch.Generator().manual_seed(1), **kw
        )
        assert torch.equal(g1.tokens, g2.tokens), kw
        torch.testing.assert_close(g1.exit_loops, g2.exit_loops)


def test_threshold_limits_equal_fixed_first_and_last_loop() -> None:
    m = _model()
    ids, mask = _prompts()
    first = generate(m, ids, mask, 6, loop=1)
    last = generate(m, ids, mask, 6)
    lo = generate(m, ids, mask, 6, mode="threshold", threshold=1e-9)
    hi = generate(m, ids, mask, 6, mode="threshold", threshold=1.0)
    assert torch.equal(lo.tokens, first.tokens) and torch.equal(hi.tokens, last.tokens)
    assert set(lo.exit_loops[lo.mask].tolist()) == {1.0}
    # exit at 1.0 means the last loop unless an earlier cumulative mass rounds to one
    assert float(hi.exit_loops[hi.mask].mean()) > 3.5
    with pytest.raises(ValueError, match="threshold must lie in"):
        generate(m, ids, mask, 2, mode="threshold", threshold=0.0)
    with pytest.raises(ValueError, match="loop must lie in"):
        generate(m, ids, mask, 2, loop=5)


def test_completion_labels_align_with_the_tokens() -> None:
    m = _model()
    pol = LoopedPolicy(m)
    ids, mask = _prompts()
    gen = pol.generate(ids, mask, 5, temperature=1.0, generator=torch.Generator().manual_seed(0))
    full, attn, labels, span = completion_labels(ids, mask, gen.tokens, gen.mask)
    pl = pol.per_loop(ids, mask, gen)
    # the log-prob of completion token j, recomputed one position at a time
    for b in range(ids.shape[0]):
        for j in range(int(gen.mask[b].sum())):
            pos = ids.shape[1] + j
            logits = m(full[b : b + 1, :pos], attn[b : b + 1, :pos]).logits[0, -1]
            want = torch.log_softmax(logits, -1)[gen.tokens[b, j]]
            torch.testing.assert_close(pl.log_probs[b, j, -1], want, atol=1e-5, rtol=1e-5)
    assert bool((pl.log_probs[~gen.mask] == 0).all())


def test_ouro_loss_equals_hand_computation_and_save_load(tmp_path) -> None:
    m = _model()
    ids, mask = _prompts()
    labels = torch.roll(ids, -1, 1)
    labels[:, :3] = -100
    labels[:, -1] = -100
    loss, stats = ouro_loss(m, ids, mask, labels, beta_entropy=0.1)
    with torch.no_grad():
        out = m(ids, mask, return_per_loop_logits=True, return_exit_pdf=True)
    valid = labels >= 0
    total = 0.0
    for b, pos in valid.nonzero().tolist():
        p = out.exit_pdf[b, pos]
        ce = [
            -torch.log_softmax(out.per_loop_logits[b, pos, t], -1)[labels[b, pos]] for t in range(4)
        ]
        total += float(sum(p[t] * ce[t] for t in range(4)) + 0.1 * (p * p.log()).sum())
    assert float(loss.detach()) == pytest.approx(total / int(valid.sum()), rel=1e-5)
    m.save(tmp_path / "m.pt")
    m2 = LoopedTransformer.load(tmp_path / "m.pt")
    torch.testing.assert_close(m2(ids, mask).logits, m(ids, mask).logits)
    assert m2.config == m.config


def test_bad_model_inputs_raise_clear_errors() -> None:
    m = _model()
    with pytest.raises(ValueError, match="n_loops must lie in"):
        m(torch.zeros(1, 3, dtype=torch.long), n_loops=9)
    with pytest.raises(ValueError, match="needs log_prob_labels"):
        m(torch.zeros(1, 3, dtype=torch.long), return_per_loop_log_probs=True)
    with pytest.raises(ValueError, match="input_ids must be"):
        m(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="not divisible"):
        LoopConfig(vocab_size=V, d_model=30, n_heads=4)


def test_input_injection_adds_the_embedded_prompt_before_every_later_loop() -> None:
    """Hand recomputation: h_1 = B(e), h_t = B(h_{t-1} + e); off by default (h_t = B(h_{t-1}))."""
    ids, mask = _prompts()
    for inject in (False, True):
        m = _model(inject_input=inject)
        pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
        n = ids.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool).tril()[None, None] & mask[:, None, None, :]
        causal = causal | torch.eye(n, dtype=torch.bool)[None, None]
        e = m.embed(ids) + m.pos(pos)
        h, want = e, []
        for t in range(m.config.n_loops):
            if t and inject:
                h = h + e
            for blk in m.blocks:
                h, _ = blk(h, causal, None)
            want.append(m.head(m.norm(h)))
        got = m(ids, mask, return_per_loop_logits=True).per_loop_logits
        torch.testing.assert_close(got, torch.stack(want, 2), atol=1e-5, rtol=1e-5)
    a = _model(inject_input=True)(ids, mask, return_per_loop_logits=True).per_loop_logits
    b = _model(inject_input=False)(ids, mask, return_per_loop_logits=True).per_loop_logits
    torch.testing.assert_close(a[:, :, 0], b[:, :, 0])  # loop 1 is the same network
    assert (a[:, :, 1:] - b[:, :, 1:]).abs().max() > 1e-2  # later loops see the prompt again


def test_input_injection_keeps_the_kv_cache_exact_and_survives_save_load(tmp_path) -> None:
    m = _model(inject_input=True)
    ids, mask = _prompts()
    full = m(ids, mask)
    head = m(ids[:, :-2], mask[:, :-2], use_cache=True)
    tail = m(ids[:, -2:], mask, past_key_values=head.past_key_values, use_cache=True)
    torch.testing.assert_close(tail.logits, full.logits[:, -2:], atol=1e-5, rtol=1e-5)
    m.save(tmp_path / "m.pt")
    back = LoopedTransformer.load(tmp_path / "m.pt")
    assert back.config.inject_input is True
    torch.testing.assert_close(back(ids, mask).logits, full.logits)
    with pytest.raises(ValueError, match="inject_input"):
        LoopConfig(vocab_size=V, inject_input=1)  # type: ignore[arg-type]
