r"""A verifiable sequence task for token-level GRPO (chapter §3 eq. 2, §10).

**Digit sum.** The prompt is a target number ``q`` in ``[min_target,
max_target]``; a completion is a string of digits from ``1..max_digit``
closed by an end-of-sequence token, at most ``max_length`` tokens in all. The
rule-based checker of eq. (2) gives

.. math:: r(q, o) = \mathbb 1\big[o \text{ ends with EOS and its digits sum to } q\big] \in \{0, 1\}.

Many completions are right (``6`` is ``33``, ``222``, ``1212``, …), so
correct completions differ in length — the setting where the way a loss
averages over tokens matters (§9, length bias). A completion that has not
emitted EOS after ``max_length`` tokens is *truncated* and scores 0.

Token ids: ``EOS = 0``, digit ``d`` is id ``d``; the prompt "target q" is the
input-only id ``prompt_token(q) = max_digit + q`` (the policy never emits it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from grpo_core._validate import nonnegative, positive_int

EOS = 0


@dataclass(frozen=True)
class DigitSumTask:
    """Targets ``min_target..max_target``, digits ``1..max_digit``, completions of <= ``max_length`` tokens."""

    #: Smallest target sum q.
    min_target: int = 2
    #: Largest target sum q.
    max_target: int = 9
    #: Largest digit a completion may use.
    max_digit: int = 3
    #: Most tokens a completion may have, EOS included.
    max_length: int = 8

    def __post_init__(self) -> None:
        positive_int(self.min_target, "min_target")
        positive_int(self.max_target, "max_target", minimum=self.min_target)
        positive_int(self.max_digit, "max_digit")
        positive_int(self.max_length, "max_length", minimum=2)
        shortest = -(-self.max_target // self.max_digit) + 1
        if shortest > self.max_length:
            raise ValueError(f"max_length {self.max_length} is too short: target {self.max_target} needs {shortest}")

    @property
    def num_actions(self) -> int:
        """The size of the output vocabulary, EOS and the digits."""
        return self.max_digit + 1

    @property
    def num_inputs(self) -> int:
        """The size of the input vocabulary, the output tokens and one prompt token per target."""
        return self.max_digit + self.max_target + 1

    def prompt_token(self, targets: torch.Tensor) -> torch.Tensor:
        """The input id that stands for the prompt "make the digits sum to q"."""
        return targets + self.max_digit

    def sample_targets(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` targets drawn uniformly from ``min_target..max_target``."""
        count = positive_int(count, "count")
        return torch.randint(self.min_target, self.max_target + 1, (count,), generator=generator)

    def reward(self, target: int, completion) -> float:
        """Eq. (2) for one completion, a sequence of token ids (padding after EOS is ignored).

        1.0 when the tokens before the first EOS are all digits summing to
        ``target`` and that EOS comes within ``max_length`` tokens; else 0.0.
        """
        tokens = [int(token) for token in completion]
        if EOS not in tokens[: self.max_length]:
            return 0.0
        digits = tokens[: tokens.index(EOS)]
        if any(not 1 <= token <= self.max_digit for token in digits):
            return 0.0
        return float(sum(digits) == int(target))

    def rewards(self, targets: torch.Tensor, completions: torch.Tensor) -> torch.Tensor:
        """:meth:`~grpo_core.sequence.task.DigitSumTask.reward` for a batch.

        ``targets`` (B,) and ``completions`` (B, T) give a (B,) float tensor.
        """
        if targets.ndim != 1 or completions.ndim != 2 or completions.shape[0] != targets.shape[0]:
            shapes = f"{tuple(targets.shape)} and {tuple(completions.shape)}"
            raise ValueError(f"rewards needs targets (B,) and completions (B, T), got {shapes}")
        scores = [self.reward(target, row) for target, row in zip(targets.tolist(), completions.tolist(), strict=True)]
        return torch.tensor(scores)

    def demonstrations(self, targets: torch.Tensor, generator: torch.Generator, noise: float = 0.0):
        """A demonstrator's completions for ``targets``: random digits that fit, then EOS.

        Each digit is drawn uniformly among those that neither overshoot the
        remainder nor leave more than the remaining slots can hold (so a clean
        demonstration is always correct and within ``max_length``); with
        probability ``noise`` it is replaced by a uniformly random digit, and the
        sum may then miss — the stand-in for an imperfect SFT data set. Returns
        EOS-padded ``tokens`` (B, max_length) and the bool ``mask`` of each
        demonstration's tokens, its EOS included.
        """
        noise = nonnegative(noise, "noise")
        remaining = targets.clone()
        tokens = torch.full((targets.shape[0], self.max_length), EOS, dtype=torch.long)
        for position in range(self.max_length - 1):  # the last slot is left for EOS
            slots_after = self.max_length - 2 - position
            top = remaining.clamp(1, self.max_digit)
            low = torch.minimum((remaining - self.max_digit * slots_after).clamp(min=1), top)
            digit = low + (torch.rand(targets.shape, generator=generator) * (top - low + 1)).long()
            noisy = torch.rand(targets.shape, generator=generator) < noise
            digit = torch.where(noisy, torch.randint(1, self.max_digit + 1, targets.shape, generator=generator), digit)
            alive = remaining > 0
            tokens[:, position] = torch.where(alive, digit, EOS)
            remaining = torch.where(alive, remaining - digit, remaining)
        lengths = (tokens != EOS).sum(-1) + 1
        return tokens, torch.arange(self.max_length) < lengths[:, None]

    def render(self, completion) -> str:
        """Human-readable completion: digits, ``⏎`` for EOS, ``…`` when truncated."""
        tokens = [int(token) for token in completion][: self.max_length]
        if EOS in tokens:
            return "".join(map(str, tokens[: tokens.index(EOS)])) + "⏎"
        return "".join(map(str, tokens)) + "…"
