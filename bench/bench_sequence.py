"""Token-level GRPO on the digit-sum task: wall time until the mean reward reaches 0.9, on CPU.

The run of notebooks/10-token-level-grpo: a GRU policy (seed 0), a warm start
of 100 teacher-forcing steps on a noisy demonstrator, then SequenceGRPO with
its default config (16 prompts × G = 8, 4 inner epochs, β = 0.04, "grpo").
"Reached" means the mean reward of the last 5 iterations' batches (640
completions) is >= 0.9; the clock starts before the policy is built. PyTorch
imports torch._dynamo on the first optimizer step (a one-time cost of seconds,
paid by any torch training loop); it is imported before the clock starts and
timed separately. Each thread count runs twice: the table checks that the two
runs produce identical reward curves.
"""

from __future__ import annotations

import time

import torch

from grpo_core.sequence.grpo import SequenceGRPO
from grpo_core.sequence.policy import GRUPolicy, warm_start
from grpo_core.sequence.task import DigitSumTask

TARGET, WINDOW, MAX_ITERATIONS = 0.9, 5, 150


def run_once() -> dict[str, float | list[float]]:
    start = time.perf_counter()
    policy = GRUPolicy(DigitSumTask(), seed=0)
    warm_start(policy, torch.Generator().manual_seed(0))
    warm = time.perf_counter() - start
    run = SequenceGRPO(policy, seed=0)
    initial = run.evaluate()
    rewards: list[float] = []
    while len(rewards) < MAX_ITERATIONS:
        rewards.append(run.step().reward)
        if len(rewards) >= WINDOW and sum(rewards[-WINDOW:]) / WINDOW >= TARGET:
            break
    reached = time.perf_counter() - start
    return {"warm": warm, "initial": initial, "iterations": len(rewards), "reached": reached,
            "final": run.evaluate(), "rewards": rewards}  # fmt: skip


def main() -> None:
    start = time.perf_counter()
    import torch._dynamo  # what the first optimizer step would import

    print(f"one-time import of torch._dynamo: {time.perf_counter() - start:.2f} s")
    print(f"{'threads':>7} {'run':>3} {'warm start s':>12} {'eval before':>11} {'iterations':>10}"
          f" {'s to reward>=0.9':>16} {'eval after':>10}")  # fmt: skip
    for threads in (1, 2):
        torch.set_num_threads(threads)
        results = [run_once() for _ in range(2)]
        for index, result in enumerate(results):
            print(f"{threads:>7} {index:>3} {result['warm']:12.2f} {result['initial']:11.3f} {result['iterations']:10d}"
                  f" {result['reached']:16.2f} {result['final']:10.3f}")  # fmt: skip
        same = results[0]["rewards"] == results[1]["rewards"]
        print(f"{'':>7} identical reward curves in both runs: {same}")


if __name__ == "__main__":
    main()
