r"""What the critic costs: training memory and FLOPs of PPO-for-LLM vs GRPO (chapter §2).

PPO for RLHF trains two networks of the same size, the policy :math:`\pi_\theta` and the
critic :math:`V_\phi`; GRPO trains the policy only (§5: the group mean replaces :math:`V_\phi`).
Both keep a frozen reference :math:`\pi_\mathrm{ref}` for the KL term (eq. 8–9), and both need a
frozen reward model when the reward is learned (RLHF) rather than checked by a
rule (RLVR, :mod:`grpo_core.course.verifier`).

Memory: bytes per parameter
---------------------------
The usual mixed-precision Adam accounting (ZeRO paper, Rajbhandari et al. 2020):

========================  ======  ===========================================
state                     bytes   what
========================  ======  ===========================================
weights                   2       bf16 copy used in forward and backward
gradients                 2       bf16
optimizer                 12      fp32 master weights (4) + Adam m (4) + v (4)
========================  ======  ===========================================

so a *trained* model holds 2 + 2 + 12 = 16 bytes per parameter and a *frozen*
one 2 bytes (bf16 weights only). Assumptions: activations, KV cache,
temporary buffers and framework overhead are excluded; nothing is sharded
(every number is the total over all devices, ZeRO/FSDP split it but do not
shrink it); the critic, reference and reward model have as many parameters
as the policy. 1 GB = 10⁹ bytes.

Compute: FLOPs per prompt
-------------------------
The dense-transformer rule of thumb (Kaplan et al. 2020): a forward pass costs
2·N FLOPs per token and a forward + backward pass 6·N, N the parameter count.
Generating a completion is counted as a forward pass over its tokens (2·N per
token; attention FLOPs and the memory-bound nature of decoding are ignored, so
this *understates* the wall-clock cost of sampling).
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_core._validate import boolean, choice, positive, positive_int

ALGORITHMS = ("ppo", "grpo")
TRAINED_BYTES_PER_PARAM = {"weights": 2, "gradients": 2, "optimizer": 12}
FROZEN_BYTES_PER_PARAM = {"weights": 2}
BYTES_PER_GB = 1e9
FORWARD_FLOPS_PER_PARAM_TOKEN = 2
TRAINING_FLOPS_PER_PARAM_TOKEN = 6
#: The largest parameter or token count accepted, a quadrillion (totals stay far inside float64).
MAX_PARAMS = 1e15


@dataclass(frozen=True)
class MemoryComponent:
    """One block of training memory: ``bytes_per_param × num_params`` bytes."""

    #: Which network holds this state (policy, critic, reference, reward model).
    model: str
    #: weights, gradients or optimizer state.
    state: str
    #: Bytes it takes per parameter.
    bytes_per_param: int
    #: The network's parameter count.
    num_params: float

    @property
    def gigabytes(self) -> float:
        """Size in GB (10⁹ bytes)."""
        return self.bytes_per_param * self.num_params / BYTES_PER_GB


def models(algorithm: str, *, reward_model: bool = False) -> dict[str, bool]:
    """The networks held in memory, each mapped to whether it is trained.

    PPO: policy and critic (trained), reference (frozen). GRPO: policy
    (trained), reference (frozen). ``reward_model=True`` adds a frozen reward
    model to either (RLHF); ``False`` is the verifier case (RLVR).
    """
    choice(algorithm, "algorithm", ALGORITHMS)
    held = {"policy": True}
    if algorithm == "ppo":
        held["critic"] = True
    held["reference"] = False
    if boolean(reward_model, "reward_model"):
        held["reward model"] = False
    return held


def memory_components(num_params: float, algorithm: str, *, reward_model: bool = False) -> list[MemoryComponent]:
    """Every block of training memory, model by model and state by state.

    A trained model contributes weights (2 B/param), gradients (2 B/param) and
    optimizer state (12 B/param); a frozen one its weights (2 B/param). See the
    module docstring for the assumptions (no activations, no sharding).
    """
    num_params = positive(num_params, "num_params", limit=MAX_PARAMS)
    parts = [
        MemoryComponent(model, state, nbytes, num_params)
        for model, trained in models(algorithm, reward_model=reward_model).items()
        for state, nbytes in (TRAINED_BYTES_PER_PARAM if trained else FROZEN_BYTES_PER_PARAM).items()
    ]
    return parts


def memory_by_model(num_params: float, algorithm: str, *, reward_model: bool = False) -> dict[str, float]:
    """GB per network, e.g. ``{"policy": 112.0, "reference": 14.0}`` for GRPO at 7B."""
    totals: dict[str, float] = {}
    for part in memory_components(num_params, algorithm, reward_model=reward_model):
        totals[part.model] = totals.get(part.model, 0.0) + part.gigabytes
    return totals


def total_memory_gb(num_params: float, algorithm: str, *, reward_model: bool = False) -> float:
    """Total training memory in GB: 34 B/param for PPO, 18 B/param for GRPO (+2 each with a reward model)."""
    return sum(part.gigabytes for part in memory_components(num_params, algorithm, reward_model=reward_model))


def flops_per_prompt(
    num_params: float,
    tokens: float,
    algorithm: str,
    *,
    completions: int = 1,
    epochs: int = 1,
    reward_model: bool = False,
) -> dict[str, float]:
    r"""FLOPs spent on one prompt in one update, by stage (chapter §2, §7).

    For ``completions`` = c sampled completions of ``tokens`` = T tokens each
    (prompt + response) and ``epochs`` = μ passes of gradient steps over them:

    =====================  ==========================  =====================
    stage                  FLOPs                       who
    =====================  ==========================  =====================
    generation             2·N·T·c                     both (sampling, eq. 1)
    reference forward      2·N·T·c                     both (KL to :math:`\pi_\mathrm{ref}`)
    reward model forward   2·N·T·c                     both, if learned
    critic forward         2·N·T·c                     PPO (values for GAE)
    policy training        6·N·T·c·μ                   both
    critic training        6·N·T·c·μ                   PPO (value regression)
    =====================  ==========================  =====================

    PPO typically samples c = 1 completion per prompt, GRPO c = G. The
    log-probabilities under :math:`\pi_{\theta_\mathrm{old}}` are assumed to come from the sampling pass
    (no extra forward). The dict holds only the stages the algorithm runs.
    """
    num_params = positive(num_params, "num_params", limit=MAX_PARAMS)
    tokens = positive(tokens, "tokens", limit=MAX_PARAMS)
    completions = positive_int(completions, "completions")
    epochs = positive_int(epochs, "epochs")
    held = models(algorithm, reward_model=reward_model)
    forward = FORWARD_FLOPS_PER_PARAM_TOKEN * num_params * tokens * completions
    training = TRAINING_FLOPS_PER_PARAM_TOKEN * num_params * tokens * completions * epochs
    flops = {"generation": forward, "reference forward": forward}
    if "reward model" in held:
        flops["reward model forward"] = forward
    if "critic" in held:
        flops["critic forward"] = forward
    flops["policy training"] = training
    if "critic" in held:
        flops["critic training"] = training
    return flops
