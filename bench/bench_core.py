"""Time grpo_core's core functions on realistic shapes and print a table.

    .venv/bin/python bench/bench_core.py

Shapes: advantages for 1024 prompts x G = 64; clip / KL per-term kernels on the
same 65,536 samples; one bandit GRPO step (G = 8, 4 inner epochs); the token
loss on 256 completions x 512 tokens (float32, forward + backward); and the
cold import time of ``grpo_core`` in a fresh interpreter (median of 5).
"""

import statistics
import subprocess
import sys
import timeit

import numpy as np
import torch

import grpo_core as gc
from grpo_core.token_loss import grpo_token_loss

PROMPTS, GROUP = 1024, 64
COMPLETIONS, TOKENS = 256, 512


def median_ms(func, repeat: int = 7, number: int = 5) -> float:
    return 1e3 * statistics.median(timeit.repeat(func, repeat=repeat, number=number)) / number


def import_ms() -> float:
    code = "import time; t = time.perf_counter(); import grpo_core; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout) for _ in range(5)
    ]
    return 1e3 * statistics.median(runs)


def token_loss_case():
    gen = torch.Generator().manual_seed(0)
    logps = (-torch.rand(COMPLETIONS, TOKENS, generator=gen) * 3).requires_grad_()
    old = logps.detach() + 0.05 * torch.randn(COMPLETIONS, TOKENS, generator=gen)
    ref = logps.detach() + 0.05 * torch.randn(COMPLETIONS, TOKENS, generator=gen)
    advantages = torch.randn(COMPLETIONS, generator=gen)
    lengths = torch.randint(16, TOKENS + 1, (COMPLETIONS,), generator=gen)
    mask = (torch.arange(TOKENS) < lengths[:, None]).float()

    def step():
        loss, _ = grpo_token_loss(logps, old, ref, advantages, mask)
        loss.backward()
        logps.grad = None

    return step


def main() -> None:
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    rewards = rng.integers(0, 2, (PROMPTS, GROUP)).astype(float)
    flat_adv = rng.normal(size=PROMPTS * GROUP)
    logp = np.log(rng.uniform(0.05, 1, PROMPTS * GROUP))
    old = logp + rng.normal(0, 0.1, logp.size)
    ratio = np.exp(logp - old)
    run = gc.BanditGRPO(seed=0)

    rows = [
        ("group_advantages", f"{PROMPTS}x{GROUP}", median_ms(lambda: gc.group_advantages(rewards))),
        ("group_advantages ddof=1", f"{PROMPTS}x{GROUP}", median_ms(lambda: gc.group_advantages(rewards, ddof=1))),
        ("rloo_advantages", f"{PROMPTS}x{GROUP}", median_ms(lambda: gc.rloo_advantages(rewards))),
        ("zero_std_fraction", f"{PROMPTS}x{GROUP}", median_ms(lambda: gc.zero_std_fraction(rewards))),
        ("importance_ratio", f"{logp.size}", median_ms(lambda: gc.importance_ratio(logp, old))),
        ("clipped_surrogate", f"{logp.size}", median_ms(lambda: gc.clipped_surrogate(ratio, flat_adv))),
        ("kl_k3", f"{logp.size}", median_ms(lambda: gc.kl_k3(logp, old))),
        ("bandit step (G=8, 4 epochs)", "K=4", median_ms(run.step, number=200)),
        ("grpo_token_loss fwd+bwd", f"{COMPLETIONS}x{TOKENS}", median_ms(token_loss_case(), repeat=5, number=3)),
        ("import grpo_core (cold)", "-", import_ms()),
    ]
    width = max(len(name) for name, _, _ in rows)
    print(f"{'function':<{width}}  {'shape':>9}  {'median ms':>9}")
    for name, shape, ms in rows:
        print(f"{name:<{width}}  {shape:>9}  {ms:9.3f}")


if __name__ == "__main__":
    main()
