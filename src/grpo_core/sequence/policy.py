r"""A tiny autoregressive policy :math:`\pi_\theta(o_t \mid q, o_{<t})` for the token MDP of chapter §10.

State = (prompt, tokens so far), action = next token: a GRU reads the prompt
token and then the completion, and a linear head gives the logits of the next
token. The same network serves the three roles a GRPO trainer needs:

* **sampling** (eq. 1): :meth:`~grpo_core.sequence.policy.GRUPolicy.sample` draws G completions per
  prompt token by token from a seeded ``torch.Generator`` until EOS or
  ``max_length``;
* **scoring**: :meth:`~grpo_core.sequence.policy.GRUPolicy.token_logps` runs one forward pass over
  prompt + completion and gathers :math:`\log\pi_\theta(o_t\mid q,o_{<t})` at
  the sampled tokens (log-softmax, then gather) — what an LLM trainer does
  with its logits;
* **warm start**: :func:`~grpo_core.sequence.policy.warm_start` fits the policy by teacher forcing on a
  noisy demonstrator, the stand-in for the SFT checkpoint that §7 starts from.

All parameters are initialised from a ``torch.Generator``, so a seed fixes
the network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from grpo_core._validate import positive, positive_int, seed_value, unit_interval
from grpo_core.sequence.task import EOS, DigitSumTask, torch_generator

MAX_WIDTH = 4096  # hidden and embedding sizes: a tiny policy


@dataclass(frozen=True)
class Completions:
    """A batch of sampled completions, padded to the longest one.

    ``tokens`` (B, T) ids, EOS-padded after the end; ``mask`` (B, T) bool, true
    on a completion's own tokens (its EOS included); ``lengths`` (B,);
    ``truncated`` (B,) bool, true when no EOS came within ``max_length``;
    ``sampling_logps`` (B, T) the log-probabilities the sampler saw (0 on padding).
    """

    #: Token ids, shape (B, T), EOS-padded.
    tokens: torch.Tensor
    #: True at the tokens of each completion (up to and including EOS).
    mask: torch.Tensor
    #: Tokens per completion.
    lengths: torch.Tensor
    #: True where a completion has no EOS.
    truncated: torch.Tensor
    #: The sampler's log-probability of every token.
    sampling_logps: torch.Tensor


class GRUPolicy(nn.Module):
    """Embedding → one-layer GRU → linear head over ``task.num_actions`` tokens."""

    def __init__(self, task: DigitSumTask, hidden: int = 64, embedding: int = 16, seed: int = 0):
        super().__init__()
        if not isinstance(task, DigitSumTask):
            raise TypeError(f"task must be a DigitSumTask, got {type(task).__name__}")
        self.task = task
        embedding = positive_int(embedding, "embedding", maximum=MAX_WIDTH)
        hidden = positive_int(hidden, "hidden", maximum=MAX_WIDTH)
        generator = torch.Generator().manual_seed(seed_value(seed))
        self.embed = nn.Embedding(task.num_inputs, embedding)
        self.gru = nn.GRU(embedding, hidden, batch_first=True)
        self.head = nn.Linear(hidden, task.num_actions)
        with torch.no_grad():
            self.embed.weight.normal_(0.0, 1.0, generator=generator)
            bound = 1.0 / math.sqrt(hidden)  # PyTorch's own GRU and Linear ranges, from our generator
            for parameter in (*self.gru.parameters(), *self.head.parameters()):
                parameter.uniform_(-bound, bound, generator=generator)

    def _inputs(self, targets: torch.Tensor, completions: torch.Tensor) -> torch.Tensor:
        """Input ids: the prompt token, then every completion token but the last (both validated)."""
        completions = self.task.completions(completions, len(self.task.targets(targets)))
        return torch.cat([self.task.prompt_token(targets)[:, None], completions[:, :-1]], dim=1)

    def logits(self, targets: torch.Tensor, completions: torch.Tensor) -> torch.Tensor:
        """Next-token logits (B, T, num_actions) at every completion position, one forward pass."""
        hidden, _ = self.gru(self.embed(self._inputs(targets, completions)))
        return self.head(hidden)

    def token_logps(self, targets: torch.Tensor, completions: torch.Tensor) -> torch.Tensor:
        r""":math:`\log\pi_\theta(o_t\mid q, o_{<t})` of the given tokens, shape (B, T)."""
        log_probs = torch.log_softmax(self.logits(targets, completions), dim=-1)
        return log_probs.gather(-1, completions.long()[..., None]).squeeze(-1)

    @torch.no_grad()
    def sample(self, targets: torch.Tensor, generator: torch.Generator, temperature: float = 1.0) -> Completions:
        """Eq. (1): one completion per entry of ``targets``, token by token, until EOS or ``max_length``.

        Repeat each target G times (``targets.repeat_interleave(G)``) to draw
        a group of G completions per prompt.
        """
        temperature = positive(temperature, "temperature")
        targets, generator = self.task.targets(targets), torch_generator(generator)
        batch = targets.shape[0]
        tokens = torch.full((batch, self.task.max_length), EOS, dtype=torch.long)
        logps = torch.zeros(batch, self.task.max_length)
        alive = torch.ones(batch, dtype=torch.bool)
        lengths = torch.full((batch,), self.task.max_length, dtype=torch.long)
        current, state = self.task.prompt_token(targets), None
        for step in range(self.task.max_length):
            out, state = self.gru(self.embed(current)[:, None], state)
            log_probs = torch.log_softmax(self.head(out[:, 0]) / temperature, dim=-1)
            if not bool(log_probs.isfinite().all()):
                raise ValueError(f"temperature = {temperature}: the logits divided by it overflow float32")
            current = torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(-1)
            current = torch.where(alive, current, EOS)
            tokens[:, step] = current
            logps[:, step] = torch.where(alive, log_probs.gather(-1, current[:, None]).squeeze(-1), 0.0)
            ended = alive & (current == EOS)
            lengths[ended] = step + 1
            alive &= ~ended
            if not alive.any():
                break
        width = int(lengths.max())
        mask = torch.arange(width) < lengths[:, None]
        return Completions(tokens[:, :width], mask, lengths, alive, logps[:, :width])


def warm_start(
    policy: GRUPolicy,
    generator: torch.Generator,
    steps: int = 100,
    batch_size: int = 64,
    lr: float = 1e-2,
    noise: float = 0.7,
) -> list[float]:
    """Supervised warm start (the "SFT checkpoint" of §7): teacher forcing on a noisy demonstrator.

    Each step draws ``batch_size`` targets and demonstrations (each digit
    corrupted with probability ``noise``) and takes one Adam step on the mean
    token cross-entropy. Returns the loss of every step.
    """
    if not isinstance(policy, GRUPolicy):
        raise TypeError(f"policy must be a GRUPolicy, got {type(policy).__name__}")
    steps = positive_int(steps, "steps")
    batch_size = positive_int(batch_size, "batch_size")
    generator = torch_generator(generator)
    unit_interval(noise, "noise")
    optimizer = torch.optim.Adam(policy.parameters(), lr=positive(lr, "lr"))
    losses = []
    for _ in range(steps):
        targets = policy.task.sample_targets(batch_size, generator)
        tokens, mask = policy.task.demonstrations(targets, generator, noise)
        loss = -(policy.token_logps(targets, tokens) * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses
