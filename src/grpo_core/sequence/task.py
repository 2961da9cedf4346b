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

import numbers
from dataclasses import dataclass

import torch

from grpo_core._validate import positive_int, unit_interval

EOS = 0
MAX_TARGET = 10_000  # one input token per target: the vocabulary stays small
MAX_DIGIT = 9  # digits are rendered as one character each
MAX_LENGTH = 4096


def torch_generator(generator) -> torch.Generator:
    """A seeded ``torch.Generator`` (never the global RNG: runs must be reproducible)."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator (torch.Generator().manual_seed(seed)), got {type(generator).__name__}"
        )
    return generator


def int_tensor(value, name: str, ndim: int, low: int, high: int) -> torch.Tensor:
    """An integer tensor of ``ndim`` dimensions with entries in ``[low, high]``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of integers, got {type(value).__name__}")
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers, got dtype {value.dtype}")
    if value.ndim != ndim or value.numel() == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D tensor, got shape {tuple(value.shape)}")
    if int(value.min()) < low or int(value.max()) > high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {int(value.min())}..{int(value.max())}")
    return value.long()


@dataclass(frozen=True)
class DigitSumTask:
    """Targets ``min_target..max_target``, digits ``1..max_digit``, completions of <= ``max_length`` tokens.

    Bounds: targets up to 10 000, digits up to 9, completions up to 4096 tokens.
    """

    #: Smallest target sum q.
    min_target: int = 2
    #: Largest target sum q.
    max_target: int = 9
    #: Largest digit a completion may use.
    max_digit: int = 3
    #: Most tokens a completion may have, EOS included.
    max_length: int = 8

    def __post_init__(self) -> None:
        positive_int(self.min_target, "min_target", maximum=MAX_TARGET)
        positive_int(self.max_target, "max_target", minimum=self.min_target, maximum=MAX_TARGET)
        positive_int(self.max_digit, "max_digit", maximum=MAX_DIGIT)
        positive_int(self.max_length, "max_length", minimum=2, maximum=MAX_LENGTH)
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

    def targets(self, targets) -> torch.Tensor:
        """``targets`` validated: a (B,) integer tensor in ``min_target..max_target``."""
        return int_tensor(targets, "targets", 1, self.min_target, self.max_target)

    def completions(self, completions, batch: int) -> torch.Tensor:
        """``completions`` validated: a (batch, T) tensor of output token ids (EOS or a digit)."""
        completions = int_tensor(completions, "completions", 2, EOS, self.max_digit)
        if completions.shape[0] != batch:
            raise ValueError(f"completions must have one row per target ({batch}), got {completions.shape[0]}")
        return completions

    def prompt_token(self, targets: torch.Tensor) -> torch.Tensor:
        """The input id that stands for the prompt "make the digits sum to q"."""
        return self.targets(targets) + self.max_digit

    def sample_targets(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` targets drawn uniformly from ``min_target..max_target``."""
        count = positive_int(count, "count")
        return torch.randint(self.min_target, self.max_target + 1, (count,), generator=torch_generator(generator))

    def reward(self, target: int, completion) -> float:
        """Eq. (2) for one completion, a sequence of token ids (padding after EOS is ignored).

        1.0 when the tokens before the first EOS are all digits summing to
        ``target`` and that EOS comes within ``max_length`` tokens; else 0.0.
        """
        if isinstance(target, bool) or not isinstance(target, numbers.Integral):
            raise TypeError(f"target must be an integer, got {type(target).__name__} {target!r}")
        tokens = self._token_list(completion)
        if EOS not in tokens[: self.max_length]:
            return 0.0
        digits = tokens[: tokens.index(EOS)]
        if any(not 1 <= token <= self.max_digit for token in digits):
            return 0.0
        return float(sum(digits) == int(target))

    def _token_list(self, completion) -> list[int]:
        """A completion as a list of token ids in ``[0, num_inputs)`` (ids that are no digit score 0)."""
        if isinstance(completion, torch.Tensor):
            completion = int_tensor(completion, "completion", 1, 0, self.num_inputs - 1).tolist()
        elif isinstance(completion, (str, bytes)) or not hasattr(completion, "__iter__"):
            raise TypeError(f"completion must be a sequence of token ids, got {type(completion).__name__}")
        tokens = list(completion)
        for token in tokens:
            if isinstance(token, bool) or not isinstance(token, numbers.Integral):
                raise TypeError(f"completion must hold integer token ids, got {type(token).__name__} {token!r}")
            if not 0 <= token < self.num_inputs:
                raise ValueError(f"completion token ids must lie in [0, {self.num_inputs}), got {token}")
        return [int(token) for token in tokens]

    def rewards(self, targets: torch.Tensor, completions: torch.Tensor) -> torch.Tensor:
        """:meth:`~grpo_core.sequence.task.DigitSumTask.reward` for a batch.

        ``targets`` (B,) and ``completions`` (B, T) give a (B,) float tensor.
        """
        if not isinstance(targets, torch.Tensor) or not isinstance(completions, torch.Tensor):
            raise TypeError("rewards needs targets and completions as torch tensors")
        if targets.ndim != 1 or completions.ndim != 2 or completions.shape[0] != targets.shape[0]:
            shapes = f"{tuple(targets.shape)} and {tuple(completions.shape)}"
            raise ValueError(f"rewards needs targets (B,) and completions (B, T), got {shapes}")
        int_tensor(targets, "targets", 1, -(2**62), 2**62)
        int_tensor(completions, "completions", 2, 0, self.num_inputs - 1)
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
        noise = unit_interval(noise, "noise")
        targets, generator = self.targets(targets), torch_generator(generator)
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
        tokens = self._token_list(completion)[: self.max_length]
        if EOS in tokens:
            return "".join(map(str, tokens[: tokens.index(EOS)])) + "⏎"
        return "".join(map(str, tokens)) + "…"
