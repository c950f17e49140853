"""The looplm family: verifiable reasoning problems for looped language models (RLTT, Ouro).

* ``icml26/LoopReasoning-v0`` (:class:`icml26.envs.looplm.env.LoopReasoningEnv`): one-step
  episodes of seeded arithmetic, parity, counting and word problems, with character token ids,
  disjoint train/test problems and batched group entry points (``sample_group``, ``score_group``).
* ``icml26/ReasoningGym-v0`` (:class:`icml26.envs.looplm.reasoning_gym_env.ReasoningGymEnv`):
  reasoning-gym tasks in the same one-step form, for a real pretrained LM.
* :mod:`icml26.envs.looplm.tasks`: the generators and the split; :mod:`.tokenizer`: the vocabulary.

Family of RLTT ("reward latent thought trajectories", ICML 2026, arXiv 2602.10520): looped LMs
such as Ouro (arXiv 2510.25741) apply one shared stack of layers T times per token; GRPO credits
only the final loop, RLTT spreads the policy gradient over every loop's log-probability. This family
gives verifiable one-step reasoning environments, a small Ouro-style looped transformer, and GRPO,
RLTT (four loop weightings) and REINFORCE trainers sharing one rollout path, all trainable on a
2-core CPU. Results: [docs/results/looplm.md](../results/looplm.md) (the study at the task's
budget) and [docs/results/looplm_cuda.md](../results/looplm_cuda.md) (a GPU run at twice it, with
the RL sweep and the depth probe).

## Problem generators

One problem per episode, one answer, an exact verifiable reward. Generators (all seeded, each with
difficulty knobs; `icml26.envs.looplm.tasks`):

| `task` | prompt | gold answer | knobs (default) |
|---|---|---|---|
| `addition` | `12+34=` | `64` (46 reversed) | `digits` (2), `terms` (2), `reverse` (True) |
| `chained_sum` | `3+9+4=` | `61` | `digits` (1), `terms` (3), `reverse` |
| `multiplication` | `77*9=` | `396` (693 reversed) | `digits_a` (2), `digits_b` (1), `reverse` |
| `parity` | `parity 01110011=` | `1` | `length` (8) |
| `counting` | `count a in bbccaacc=` | `2` | `length` (8), `alphabet` ("abc"), `reverse` |
| `word_problem` | `hal has 16 apples and gives away 11. how many apples are left?` | `5` | `max_value` (20), `ops` ("+-"; any of `+-*`), `reverse` |
| `permutation_power` | `31402 4 3=` | `2` (p(p(p(4)))) | `size` (8), `max_power` (4), `power` ("any": k uniform in 1..max_power; "max") |
| `pointer_chain` | `b=7,q=b,d=4,x=d,c=q.c=` | `7` | `length` (3), `chains` (2), `query` ("any" depth 1..length; "end") |
| `permutation_hops` | `dbaec.a` | `e` (p(p(a))) | `size` (16 letters), `hops` (2); x, p(x), .., p^hops(x) distinct |

`permutation_power`, `pointer_chain` and `permutation_hops` need k sequential look-ups (one
attention hop each), so their difficulty is depth by construction (added for issue 19; existing
task settings are unchanged). `permutation_hops` puts the start letter last, so the position that
predicts the answer holds it and each look-up is exactly one attention hop. `PermutationPower.depth(problem)` / `PointerChain.depth(problem)` read k back.

Numbers in answers are written least significant digit first by default (`reverse=True`), the
format in which a small causal model can add with carries (the RLTT card's CPU-scale setup).
Train and held-out test problems are disjoint as problems: a prompt is a test problem when its
BLAKE2b hash falls below `test_fraction` (0.2), and each split rejects the other's problems
(`split="train"` or `"test"`).

## Model and trainers (`icml26.agents.looplm`)

* `model.LoopedTransformer(LoopConfig(vocab_size, d_model=64, n_heads=4, n_layers=2, n_loops=4))`:
  shared pre-norm blocks looped T times; after each loop a shared LayerNorm + LM head (per-loop
  logits) and an exit gate `Linear(d, 1)`; exit distribution `p_t = lambda_t prod_{j<t}(1 - lambda_j)`,
  the last loop taking the remaining mass. `forward(input_ids, attention_mask,
  return_per_loop_log_probs=True, return_per_loop_logits=True, return_exit_pdf=True,
  log_prob_labels=labels, log_prob_temperature=1.0, n_loops=t | total_ut_steps=t,
  past_key_values=..., use_cache=True)` returns `.logits`, `.per_loop_logits` (B, L, T, V),
  `.per_loop_log_probs` (B, L, T), `.per_loop_entropies`, `.exit_pdf` (B, L, T), `.past_key_values`
  (one K/V per loop and layer). `save(path)` / `LoopedTransformer.load(path)`.
* `policy.generate(model, ids, mask, n, mode="fixed" | "threshold" | "mix", loop=t, threshold=q,
  temperature=0)`: decoding at a fixed loop (the model truncated at t), at an exit threshold (a
  token leaves at the first loop whose cumulative exit probability reaches q; deeper loops are
  still computed so later tokens can attend to them, so this measures accuracy against expected
  depth, not saved compute), or from the exit-weighted mixture of logits.
* `sft.warm_start` / `cached_warm_start`: supervised Ouro loss `sum_t p_t CE_t - beta_H H(p)` on
  train problems, cached under `$ICML26_CACHE/looplm/warm_start/` by every setting that shapes it
  (checked first: the shipped calibrated checkpoints in `icml26/agents/looplm/checkpoints/`).
  `sft.calibrate_warm_start(...)` picks the step count from a validation curve so final-loop
  accuracy lands in a band (30-70% by default) and saves that checkpoint under the same key.
* `rl.LoopRLTrainer(policy, problem_source(env), RLConfig(algo="grpo" | "rltt" | "reinforce",
  omega="uniform" | "progressive" | "exit_pdf" | "learned", ...))`: one rollout and logging path
  (reward, accuracy, KL, entropy, exit distribution, omega, zero-spread groups, seconds per step);
  KL (k3, final loop, frozen initial policy) in the loss for every algorithm by default
  (`kl_placement="reward"` for the released GRPO baseline's placement). GRPO and RLTT take
  `updates_per_batch` passes over each rollout batch, each split into `minibatches` groups-whole
  minibatches (verl's PPO loop: old log-probs frozen after the rollout, so the ratio leaves 1 from
  the second update and the clip acts; `clip_frac` in the step statistics). RLTT in that loop uses
  omega-weighted clipped surrogates of each loop's own ratio (`rl.rltt_clipped_loss`; its gradient
  at ratio 1 is RLTT's, gate and learned weights included). REINFORCE: one update per batch.
* `hf.load_hf_checkpoint(path)` + `hf.HFLoopedPolicy(model, tokenizer)`: train a local Hugging Face
  checkpoint (never downloaded; tested end to end on a tiny looped checkpoint laid out like Ouro's,
  remote code + `total_ut_steps`, in `tests/looplm/fixtures/tiny_ouro`). Models with RLTT's per-loop keywords run once; others run once per
  loop count with `config.total_ut_steps = t` (T times slower; no exit distribution, so
  `omega="exit_pdf"` is refused).
* `evaluation.evaluate_policy`: final-loop greedy accuracy, accuracy per loop, accuracy vs expected
  depth for exit thresholds, exit-mix accuracy, pass@k, mean exit distribution.

```python
import gymnasium as gym, icml26
from icml26.agents.looplm.hf import HFLoopedPolicy, load_hf_checkpoint
from icml26.agents.looplm.rl import LoopRLTrainer, RLConfig, problem_source

model, tok = load_hf_checkpoint("/models/Ouro-1.4B", trust_remote_code=True)   # a local folder
env = gym.make("icml26/ReasoningGym-v0", name="basic_arithmetic")
trainer = LoopRLTrainer(HFLoopedPolicy(model, tok), problem_source(env),
                        RLConfig(algo="rltt", omega="uniform", lr=1e-6, weight_decay=0.1,
                                 grad_clip=0.1, max_new_tokens=512))
trainer.train(100)
```

## Task notes

| task | env kwargs | budget | metrics |
|---|---|---|---|
| `looplm/addition-2d` | `task="addition", digits=2` | 400 warm-start steps, 100 RL steps of 16 prompts x 8 | `accuracy` (primary), `pass_at_8` |
| `looplm/multiplication-2x1` | `task="multiplication", digits_a=2, digits_b=1` | same | same |
| `looplm/addition-2d-1block` | `task="addition", digits=2`; model with ONE shared block per loop | calibrated warm start (shipped, shared by all arms and seeds), 40 RL steps of 16 prompts x 8, 4 PPO minibatches, lr 3e-4; seeds 0-9 | same |
| `looplm/permutation-hops-8x3` v0 | `task="permutation_hops", size=8, hops=3`; ONE shared block per loop with input injection | same as `addition-2d-1block` | same |
| `looplm/permutation-hops-8x3` v1 (default) | same | the same warm start; 240 RL steps of 64 prompts x 8, one update per batch, lr 1e-3, KL beta 1e-3 (chosen on a validation split, identical for every arm; issue 35); every trial also scores its weights after 1/8, 1/4 and 1/2 of the RL steps (`extra["eval"]["ladder"]`); `rl_steps` scales with `budget_scale` | same |

On `looplm/addition-2d-1block` the looped model's own trajectory depends on depth (its loop 4
clearly beats its loop 1, while accuracy is flat across loops on the first two tasks), but a
separately trained 1-loop model with the same parameters and steps solves the task (0.99), so
the task does not need depth; see [the CUDA supplement](../results/looplm_cuda.md). `permutation_power` and
`pointer_chain` did not leave chance level within 250-400 warm-start steps here; with
`permutation_hops` a ONE-loop model solves 2 hops over 8 symbols (a single attention layer finds a
short cut over so few symbols), and over 16 letters neither the 1-loop nor the 4-loop model left
chance in the steps tried (`experiments/looplm_depth_probe.py`). `looplm/permutation-hops-8x3`
(3 hops over 8 letters) is the task where depth matters: the looped model with input injection
(`LoopConfig(inject_input=True)`: the embedded prompt is added again before every loop) learns
it while a 1-loop model with the same parameters and steps stays at chance (1/5).

`run_trial` evaluates 256 held-out test problems. Looplm agents (`looplm-rltt-exit-pdf`,
`looplm-rltt-uniform`, `looplm-rltt-progressive`, `looplm-rltt-learned`, `looplm-grpo`,
`looplm-reinforce`, `looplm-sft`) add per-loop accuracy, the threshold curve, exit-mix accuracy,
the exit distribution and the training curves to `extra`. Any other agent answers through `act`.
The looplm agents take `device="cuda"` to run RL and evaluation on a GPU (the numbers then differ
from the CPU's in the last bits: compare arms run on one device); `experiments/looplm_device.sh`
runs the permutation-hops comparison that way in one command.
"""
