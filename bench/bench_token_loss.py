"""grpo_token_loss against a straight transcription of TRL's loss: time and memory, forward + backward, CPU.

Workload: 256 completions × 512 tokens, float32, completion lengths uniform in
1..512 (an int32 mask, like TRL's ``completion_mask``), β = 0.04, ε = 0.2.

Time: forward + backward of each loss, the two implementations interleaved
(in alternating order), ``REPEATS`` times each; the table gives the minimum
and the median. The machine
is shared, so the minimum (the run least disturbed by other processes) is the
figure to compare; the median shows the noise.

Memory: torch's CPU allocations are invisible to ``tracemalloc``, and process
RSS mixes in the allocator's caching. Instead a ``TorchDispatchMode`` sees
every tensor that an operator returns, forward and backward (autograd runs its
backward ops through the same dispatcher), counts the bytes of each new
storage and subtracts them when the storage is freed. "peak" is the most bytes
alive at once during forward + backward (the inputs, and views of them, are
not counted; saved-for-backward tensors and the gradient are) and "(B,T) f32" the number of float
(completions × tokens) buffers allocated. The count is exact and does not
depend on load.
"""

from __future__ import annotations

import statistics
import time
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from grpo_core.token_loss import LOSS_TYPES, grpo_token_loss

COMPLETIONS, TOKENS, REPEATS = 256, 512, 200
BETA, EPSILON = 0.04, 0.2


def trl_formula(per_token_logps, old_per_token_logps, ref_per_token_logps, advantages, completion_mask, loss_type):
    """TRL's formula, transcribed from TRL 1.16.0 ``GRPOTrainer._compute_loss`` (token-level ratios, one process).

    The same arithmetic line by line, metrics included (TRL computes them in
    the same function): ratio, k3, clip, β·k3 per token, the aggregation of
    ``loss_type``, the mean KL and the three clip fractions.
    """
    mask = completion_mask
    advantages = advantages.unsqueeze(1)
    log_ratio = per_token_logps - old_per_token_logps
    coef_1 = torch.exp(log_ratio)
    per_token_kl = torch.exp(ref_per_token_logps - per_token_logps) - (ref_per_token_logps - per_token_logps) - 1
    coef_2 = torch.clamp(coef_1, 1 - EPSILON, 1 + EPSILON)
    per_token_loss1 = coef_1 * advantages
    per_token_loss2 = coef_2 * advantages
    per_token_loss = -torch.min(per_token_loss1, per_token_loss2)
    per_token_loss = per_token_loss + BETA * per_token_kl
    if loss_type == "grpo":
        loss = ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type == "dr_grpo":
        loss = (per_token_loss * mask).sum() / (per_token_loss.size(0) * TOKENS)
    else:  # "bnpo", and "dapo" on one process
        loss = (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0)
    with torch.no_grad():
        num_tokens = mask.sum()
        is_low_clipped = (coef_1 < 1 - EPSILON) & (advantages < 0)
        is_high_clipped = (coef_1 > 1 + EPSILON) & (advantages > 0)
        is_region_clipped = is_low_clipped | is_high_clipped
        metrics = {
            "kl": ((per_token_kl * mask).sum() / num_tokens).item(),
            "clip_ratio/low_mean": ((is_low_clipped * mask).sum() / num_tokens).item(),
            "clip_ratio/high_mean": ((is_high_clipped * mask).sum() / num_tokens).item(),
            "clip_ratio/region_mean": ((is_region_clipped * mask).sum() / num_tokens).item(),
        }
    return loss, metrics


def grpo_core_loss(logps, old_logps, ref_logps, advantages, mask, loss_type):
    return grpo_token_loss(
        logps,
        old_logps,
        ref_logps,
        advantages,
        mask,
        eps_low=EPSILON,
        beta=BETA,
        loss_type=loss_type,
        max_completion_length=TOKENS,
    )


def inputs(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    old = -3 * torch.rand(COMPLETIONS, TOKENS, generator=generator)
    logps = old + 0.2 * torch.randn(COMPLETIONS, TOKENS, generator=generator)
    ref = old + 0.2 * torch.randn(COMPLETIONS, TOKENS, generator=generator)
    advantages = torch.randn(COMPLETIONS, generator=generator)
    lengths = torch.randint(1, TOKENS + 1, (COMPLETIONS,), generator=generator)
    mask = (torch.arange(TOKENS) < lengths[:, None]).int()
    return logps, old, ref, advantages, mask


def forward_backward(loss_fn, data, loss_type):
    logps = data[0].detach().requires_grad_()
    loss, _ = loss_fn(logps, *data[1:], loss_type)
    loss.backward()
    return float(loss.detach()), logps.grad


class LiveStorageBytes(TorchDispatchMode):
    """Bytes of the storages that operators return, alive at once (peak), and the (B, T) float buffers."""

    def __init__(self, inputs):
        super().__init__()
        self.alive, self.peak, self.full_size_buffers = 0, 0, 0
        self._tracked = {tensor.untyped_storage().data_ptr() for tensor in inputs}  # never counted

    def _release(self, key: int, size: int) -> None:
        self.alive -= size
        self._tracked.discard(key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor):
                continue
            storage = tensor.untyped_storage()
            key, size = storage.data_ptr(), storage.nbytes()
            if size == 0 or key in self._tracked:  # views and in-place results share a tracked storage
                continue
            self._tracked.add(key)
            self.alive += size
            self.peak = max(self.peak, self.alive)
            self.full_size_buffers += size == COMPLETIONS * TOKENS * 4
            weakref.finalize(storage, self._release, key, size)
        return out


def memory(loss_fn, data, loss_type) -> tuple[float, int]:
    with LiveStorageBytes(data) as counter:
        forward_backward(loss_fn, data, loss_type)
    return counter.peak / 2**20, counter.full_size_buffers


def timings(data, loss_type) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"grpo_core": [], "TRL formula": []}
    functions = {"grpo_core": grpo_core_loss, "TRL formula": trl_formula}
    for _ in range(3):  # warm up both
        for function in functions.values():
            forward_backward(function, data, loss_type)
    order = list(functions.items())
    for repeat in range(REPEATS):
        for name, function in order if repeat % 2 else order[::-1]:  # ABBA: neither always runs first
            start = time.perf_counter()
            forward_backward(function, data, loss_type)
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    data = inputs()
    for threads in (1, 2):
        torch.set_num_threads(threads)
        print(f"\ntoken loss, forward + backward: {COMPLETIONS} × {TOKENS} float32, {threads} thread(s)")
        print(f"{'loss_type':<9} {'implementation':<12} {'min ms':>7} {'median':>7} {'peak MiB':>9} {'(B,T) f32':>9}")
        table(data)


def table(data) -> None:
    for loss_type in LOSS_TYPES:
        ours, trl = (forward_backward(fn, data, loss_type) for fn in (grpo_core_loss, trl_formula))
        assert abs(ours[0] - trl[0]) <= 1e-5 * max(1.0, abs(trl[0])), (loss_type, ours[0], trl[0])
        torch.testing.assert_close(ours[1], trl[1], rtol=1e-5, atol=1e-9)  # the same gradient
        times = timings(data, loss_type)
        for name, function in (("grpo_core", grpo_core_loss), ("TRL formula", trl_formula)):
            peak, buffers = memory(function, data, loss_type)
            print(
                f"{loss_type:<9} {name:<12} {1e3 * min(times[name]):7.2f} {1e3 * statistics.median(times[name]):7.2f}"
                f" {peak:9.2f} {buffers:9d}"
            )
        ratios = [pick(times["grpo_core"]) / pick(times["TRL formula"]) for pick in (min, statistics.median)]
        print(f"{'':<9} {'time ratio':<12} {ratios[0]:7.2f} {ratios[1]:7.2f}")


if __name__ == "__main__":
    main()
