r"""The knobs every policy update shares, defined once: the configs of the trainers extend these.

:class:`PolicyUpdate` (β and the step size) is RLOO's; :class:`ClippedUpdate`
adds the clip band of eq. (7) and the ascent steps per batch of §7, and is the
base of GRPO's and PPO's configs on the bandit and of the sequence toy's. Their
fields are keyword-only: ``GRPOConfig(group_size=4, lr=0.5)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_core._validate import clip_range, nonnegative, positive, positive_int


@dataclass(frozen=True, kw_only=True)
class PolicyUpdate:
    r"""The knobs of any update of :math:`\pi_\theta`: the KL weight β and the step size."""

    #: β, the weight of the KL penalty to :math:`\pi_\mathrm{ref}`: in the objective for GRPO (eq. 9), folded into
    #: the reward for PPO and RLOO (§8).
    beta: float = 0.04
    #: Step size of each update of θ.
    lr: float = 1.0

    def __post_init__(self) -> None:
        nonnegative(self.beta, "beta")
        positive(self.lr, "lr")


@dataclass(frozen=True, kw_only=True)
class ClippedUpdate(PolicyUpdate):
    """A :class:`PolicyUpdate` with eq. (7)'s clip band and several ascent steps per batch (§7)."""

    #: ε of eq. (7) below 1, the clip's lower side :math:`1 - \varepsilon_\mathrm{low}`.
    eps_low: float = 0.2
    #: ε of eq. (7) above 1 (``None`` for a symmetric clip,
    #: :math:`\varepsilon_\mathrm{high} = \varepsilon_\mathrm{low}`; larger is DAPO's "clip-higher").
    eps_high: float | None = None
    #: Ascent steps per batch (§7's inner epochs).
    inner_epochs: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        clip_range(self.eps_low, self.eps_high)
        positive_int(self.inner_epochs, "inner_epochs")
