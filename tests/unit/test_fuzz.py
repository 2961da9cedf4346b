"""Every public function, fed malformed input, either answers without NaN or
raises the documented ValueError / TypeError — nothing else."""

import inspect
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import grpo_core
from grpo_core import token_loss
from grpo_core._validate import MAX_MAGNITUDE
from grpo_core.bandit import policy_gradient

nasty_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
# The kinds of malformed value: each argument of each public function gets every kind in every example.
GARBAGE = (
    st.none(),
    st.booleans(),
    st.text(max_size=3),
    st.integers(-3, 10),
    nasty_floats,
    st.lists(nasty_floats, max_size=5),
    st.lists(st.integers(-2, 5), min_size=1, max_size=5),
    st.just([[1.0], [2.0, 3.0]]),
    st.just({}),
    arrays(np.float64, array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), elements=nasty_floats),
    arrays(np.int64, array_shapes(min_dims=1, max_dims=2, max_side=5), elements=st.integers(-2, 5)),
    arrays(np.float64, array_shapes(min_dims=1, max_dims=2, max_side=5), elements=st.floats(0, 1)).map(torch.tensor),
)


def public_callables():
    modules = [grpo_core, policy_gradient]
    names = {(m.__name__, name) for m in modules for name in getattr(m, "__all__", dir(m)) if not name.startswith("_")}
    found = {}
    for module_name, name in sorted(names):
        obj = getattr(__import__(module_name, fromlist=[name]), name)
        module = getattr(obj, "__module__", "")
        if callable(obj) and module.startswith("grpo_core") and not module.rsplit(".", 1)[-1].startswith("_"):
            found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    found["grpo_core.token_loss.grpo_token_loss"] = token_loss.grpo_token_loss
    found["grpo_core.advantages.zero_signal_probability"] = grpo_core.advantages.zero_signal_probability
    return found


CALLABLES = public_callables()


def has_nan(value) -> bool:
    if isinstance(value, tuple):
        return any(has_nan(v) for v in value)
    if isinstance(value, dict):
        return any(has_nan(v) for v in value.values())
    if isinstance(value, torch.Tensor):
        return bool(torch.isnan(value).any())
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return bool(np.isnan(value).any())
    return False


def test_every_public_function_is_fuzzed():
    assert len(CALLABLES) >= 25, sorted(CALLABLES)


KINDS = list(range(len(GARBAGE)))
ABSENT = -1  # an optional argument left out


@pytest.mark.parametrize("qualname", sorted(CALLABLES))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_malformed_input_raises_only_documented_errors(qualname, data):
    """One example is a round of calls in which each argument takes every kind of GARBAGE once, in an order drawn for
    it alone (an optional argument is left out in as many calls again), so every argument meets every kind in every
    example and the kinds meet each other, and the defaults, in new combinations from example to example."""
    func = CALLABLES[qualname]
    parameters = [
        p
        for p in inspect.signature(func).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    orders = {
        p.name: data.draw(
            st.permutations(KINDS if p.default is p.empty else KINDS + [ABSENT] * len(KINDS)), label=p.name
        )
        for p in parameters
    }
    for call in range(max(map(len, orders.values()), default=1)):
        chosen = {name: order[call % len(order)] for name, order in orders.items()}
        kwargs = {name: data.draw(GARBAGE[kind], label=name) for name, kind in chosen.items() if kind != ABSENT}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf is allowed; NaN is not
            try:
                result = func(**kwargs)
            except (ValueError, TypeError):
                continue
        assert not has_nan(result), f"{qualname}({kwargs}) returned NaN"


# -- one argument at a time: a valid call, then each argument replaced by a bad value ---------------
#
# Every public function gets a valid call; each of its arguments is then replaced, one at a time, by
# values of the wrong kind or out of range. The call must raise ValueError or TypeError, and the
# message must name the argument. Then the valid-but-extreme values: the call returns only finite
# numbers or raises a ValueError naming what overflowed — never a silent inf or NaN.

RNG = object()  # placeholder: a fresh np.random.default_rng(0) per call
TORCH_GEN = object()  # placeholder: a fresh torch.Generator().manual_seed(0)


def t64(values):
    return torch.tensor(values, dtype=torch.float64)


LOGPS = [-0.5, -1.2, -2.0]
VALID = {
    "advantages.group_advantages": (
        grpo_core.group_advantages,
        dict(rewards=[0.2, 0.9, 0.4], eps=1e-8, ddof=0, scale="group"),
    ),
    "advantages.centered_rewards": (grpo_core.centered_rewards, dict(rewards=[0.2, 0.9, 0.4])),
    "advantages.group_mean": (grpo_core.group_mean, dict(rewards=[0.2, 0.9, 0.4])),
    "advantages.group_std": (grpo_core.group_std, dict(rewards=[0.2, 0.9, 0.4], ddof=1)),
    "advantages.rloo_advantages": (grpo_core.rloo_advantages, dict(rewards=[0.2, 0.9, 0.4])),
    "advantages.dr_grpo_advantages": (grpo_core.dr_grpo_advantages, dict(rewards=[0.2, 0.9, 0.4])),
    "advantages.zero_std_mask": (grpo_core.zero_std_mask, dict(rewards=[0.2, 0.9, 0.4])),
    "advantages.zero_std_fraction": (grpo_core.zero_std_fraction, dict(rewards=[0.2, 0.9, 0.4])),
    "advantages.zero_signal_probability": (
        grpo_core.zero_signal_probability,
        dict(success_rate=[0.3, 0.5], group_size=8),
    ),
    "clipping.importance_ratio": (grpo_core.importance_ratio, dict(logp=LOGPS, old_logp=[-0.6, -1.0, -2.1])),
    "clipping.clipped_surrogate": (
        grpo_core.clipped_surrogate,
        dict(ratio=[0.7, 1.0, 1.3], advantages=[1.0, -1.0, 0.5], eps_low=0.2, eps_high=0.28, delta=2.0),
    ),
    "clipping.clip_masks": (
        grpo_core.clip_masks,
        dict(ratio=[0.7, 1.0, 1.3], advantages=[1.0, -1.0, 0.5], eps_low=0.2, eps_high=0.28),
    ),
    "clipping.clip_fractions": (
        grpo_core.clip_fractions,
        dict(ratio=[0.7, 1.0, 1.3], advantages=[1.0, -1.0, 0.5], eps_low=0.2, eps_high=0.28),
    ),
    "clipping.sequence_importance_ratio": (
        grpo_core.clipping.sequence_importance_ratio,
        dict(logps=t64([LOGPS]), old_logps=t64([[-0.6, -1.0, -2.1]]), mask=torch.tensor([[1, 1, 0]])),
    ),
    "kl.kl_k1": (grpo_core.kl_k1, dict(logp=LOGPS, ref_logp=[-0.6, -1.0, -2.1])),
    "kl.kl_k2": (grpo_core.kl_k2, dict(logp=LOGPS, ref_logp=[-0.6, -1.0, -2.1])),
    "kl.kl_k3": (grpo_core.kl_k3, dict(logp=LOGPS, ref_logp=[-0.6, -1.0, -2.1])),
    "kl.kl_k3_ratio": (
        grpo_core.kl.kl_k3_ratio,
        dict(logp=LOGPS, ref_logp=[-0.6, -1.0, -2.1], old_logp=[-0.4, -1.1, -2.2]),
    ),
    "kl.kl_k3_plus": (grpo_core.kl.kl_k3_plus, dict(logp=LOGPS, ref_logp=[-0.6, -1.0, -2.1])),
    "kl.categorical_kl": (grpo_core.categorical_kl, dict(p=[0.5, 0.5], q=[0.25, 0.75])),
    "kl.entropy": (grpo_core.entropy, dict(p=[0.5, 0.5])),
    "objective.clip_objective": (
        grpo_core.clip_objective,
        dict(
            logp=LOGPS, old_logp=[-0.6, -1.0, -2.1], advantages=[1.0, -1.0, 0.5], eps_low=0.2, eps_high=0.28, delta=2.0
        ),
    ),
    "objective.grpo_objective": (
        grpo_core.grpo_objective,
        dict(
            logp=LOGPS,
            old_logp=[-0.6, -1.0, -2.1],
            ref_logp=[-0.4, -1.1, -2.2],
            advantages=[1.0, -1.0, 0.5],
            eps_low=0.2,
            eps_high=0.28,
            beta=0.04,
            kl_estimator="k3_ratio",
            delta=2.0,
        ),
    ),
    "token_loss.grpo_token_loss": (
        token_loss.grpo_token_loss,
        dict(
            logps=t64([LOGPS, LOGPS]),
            old_logps=t64([[-0.6, -1.0, -2.1]] * 2),
            ref_logps=t64([[-0.4, -1.1, -2.2]] * 2),
            advantages=t64([1.0, -1.0]),
            mask=torch.tensor([[1, 1, 0], [1, 1, 1]]),
            eps_low=0.2,
            eps_high=0.28,
            beta=0.04,
            loss_type="dapo",
            max_completion_length=None,
            num_items_in_batch=6,
            kl_estimator="k3",
            delta=2.0,
            importance_sampling_level="token",
        ),
    ),
    "bandit.env.softmax": (grpo_core.softmax, dict(logits=[0.1, 0.5, -0.3])),
    "bandit.env.log_softmax": (grpo_core.log_softmax, dict(logits=[0.1, 0.5, -0.3])),
    "bandit.env.sample_group": (grpo_core.sample_group, dict(probs=[0.2, 0.3, 0.5], group_size=4, rng=RNG)),
    "bandit.env.reward_of": (grpo_core.reward_of, dict(actions=[0, 2, 1], reward_table=[0.2, 0.9, 0.4])),
    "bandit.env.check_actions": (grpo_core.bandit.check_actions, dict(actions=[0, 2, 1], num_actions=4)),
    "bandit.env.state_value": (grpo_core.state_value, dict(probs=[0.2, 0.3, 0.5], reward_table=[0.2, 0.9, 0.4])),
    "bandit.grpo.objective_gradient": (
        grpo_core.objective_gradient,
        dict(
            logits=[0.1, 0.5, -0.3],
            actions=[0, 2, 1],
            old_logp=LOGPS,
            ref_logp=[-0.4, -1.1, -2.2],
            advantages=[1.0, -1.0, 0.5],
            eps_low=0.2,
            eps_high=0.28,
            beta=0.04,
        ),
    ),
    "bandit.grpo.grpo_step": (
        grpo_core.grpo_step,
        dict(
            logits=[0.1, 0.5, -0.3],
            ref_logits=[0.0, 0.0, 0.0],
            actions=[0, 2, 1],
            rewards=[0.2, 0.9, 0.4],
            config=grpo_core.GRPOConfig(group_size=3),
        ),
    ),
    "bandit.grpo.GRPOConfig": (
        grpo_core.GRPOConfig,
        dict(
            group_size=8, eps_low=0.2, eps_high=0.28, beta=0.04, lr=1.0, inner_epochs=4, advantage="grpo", adv_eps=1e-8
        ),
    ),
    "bandit.grpo.BanditGRPO": (
        grpo_core.BanditGRPO,
        dict(rewards=[0.2, 0.9, 0.4], config=grpo_core.GRPOConfig(), seed=0, init_logits=[0.0, 0.1, 0.2]),
    ),
    "bandit.dpo.DPOConfig": (grpo_core.DPOConfig, dict(num_pairs=64, temperature=0.1, beta=0.4, lr=1.0, batch_size=8)),
    "bandit.dpo.BanditDPO": (
        grpo_core.BanditDPO,
        dict(rewards=[0.2, 0.9, 0.4], config=grpo_core.DPOConfig(), seed=0, init_logits=[0.0, 0.1, 0.2]),
    ),
    "bandit.dpo.dpo_loss": (
        grpo_core.dpo_loss,
        dict(logits=[0.1, 0.5, -0.3], ref_logits=[0.0, 0.0, 0.0], pairs=[[1, 0], [2, 0]], beta=0.4),
    ),
    "bandit.dpo.dpo_gradient": (
        grpo_core.dpo_gradient,
        dict(logits=[0.1, 0.5, -0.3], ref_logits=[0.0, 0.0, 0.0], pairs=[[1, 0], [2, 0]], beta=0.4),
    ),
    "bandit.dpo.preference_pairs": (
        grpo_core.preference_pairs,
        dict(rewards=[0.2, 0.9, 0.4], ref_probs=[0.2, 0.3, 0.5], num_pairs=4, rng=RNG, temperature=0.1),
    ),
    "bandit.ppo.PPOConfig": (
        grpo_core.PPOConfig,
        dict(
            batch_size=8,
            eps_low=0.2,
            eps_high=0.28,
            beta=0.04,
            lr=1.0,
            inner_epochs=4,
            value_lr=0.1,
            value_steps=4,
            value_init=0.0,
            normalize_advantages=False,
            adv_eps=1e-8,
        ),
    ),
    "bandit.ppo.BanditPPO": (
        grpo_core.BanditPPO,
        dict(rewards=[0.2, 0.9, 0.4], config=grpo_core.PPOConfig(), seed=0, init_logits=[0.0, 0.1, 0.2]),
    ),
    "bandit.ppo.fit_value": (grpo_core.fit_value, dict(value=0.0, targets=[0.2, 0.9], lr=0.5, steps=3)),
    "bandit.ppo.ppo_advantages": (
        grpo_core.ppo_advantages,
        dict(rewards=[0.2, 0.9, 0.4], value=0.3, normalize=True, eps=1e-8),
    ),
    "bandit.ppo.kl_penalized_rewards": (
        grpo_core.kl_penalized_rewards,
        dict(rewards=[0.2, 0.9, 0.4], logp=LOGPS, ref_logp=[-0.4, -1.1, -2.2], beta=0.04),
    ),
    "bandit.rloo.RLOOConfig": (grpo_core.RLOOConfig, dict(group_size=8, lr=1.0, beta=0.04)),
    "bandit.rloo.BanditRLOO": (
        grpo_core.BanditRLOO,
        dict(rewards=[0.2, 0.9, 0.4], config=grpo_core.RLOOConfig(), seed=0, init_logits=[0.0, 0.1, 0.2]),
    ),
    "bandit.rloo.rloo_gradient": (
        grpo_core.rloo_gradient,
        dict(logits=[0.1, 0.5, -0.3], actions=[0, 2, 1], rewards=[0.2, 0.9, 0.4]),
    ),
    "bandit.failure_modes.PromptSetGRPO": (
        grpo_core.PromptSetGRPO,
        dict(
            success_probs=[[0.2, 0.9], [0.5, 0.1]], config=grpo_core.GRPOConfig(), zero_std="mask", seed=0, max_groups=8
        ),
    ),
    "bandit.failure_modes.noisy_reward_model": (
        grpo_core.noisy_reward_model,
        dict(
            actions=[0, 2, 1],
            true_rewards=[0.2, 0.9, 0.4],
            rng=RNG,
            noise_std=0.1,
            lucky_action=2,
            lucky_prob=0.5,
            lucky_reward=1.0,
        ),
    ),
    "advantages.std_floor_advantages": (
        grpo_core.std_floor_advantages,
        dict(rewards=[0.2, 0.9, 0.4], std_floor=0.1),
    ),
    "bandit.failure_modes.verifier_rewards": (
        grpo_core.verifier_rewards,
        dict(actions=[0, 2, 1], success_probs=[0.2, 0.9, 0.4], rng=RNG),
    ),
    "bandit.policy_gradient.score": (policy_gradient.score, dict(logits=[0.1, 0.5, -0.3])),
    "bandit.policy_gradient.reinforce_gradient": (
        policy_gradient.reinforce_gradient,
        dict(logits=[0.1, 0.5, -0.3], actions=[0, 2, 1], advantages=[1.0, -1.0, 0.5]),
    ),
    "bandit.policy_gradient.expected_policy_gradient": (
        policy_gradient.expected_policy_gradient,
        dict(logits=[0.1, 0.5, -0.3], rewards=[0.2, 0.9, 0.4], baseline=0.3),
    ),
    "course.verifier.exact_match_reward": (
        grpo_core.exact_match_reward,
        dict(completions=["the answer is 4", "#### 5"], reference=4),
    ),
    "bandit.runs.run_seeds": (
        grpo_core.run_seeds,
        dict(make_trainer=lambda seed: grpo_core.BanditGRPO(seed=seed), steps=2, seeds=[0, 1]),
    ),
    "bandit.runs.track": (grpo_core.track, dict(trainer=grpo_core.BanditGRPO(), steps=2)),
    "bandit.sharpened.sharpened_runs": (
        grpo_core.sharpened_runs,
        dict(probs=[0.01, 0.01, 0.97, 0.01], beta=0.2, seeds=[0, 1], steps=2),
    ),
}

NOT_NUMBERS = [None, "0.5", b"1", {}, object()]
BAD = {
    "array": [
        *NOT_NUMBERS,
        ["0.5", "0.1", "0.2"],
        [0.5 + 1j, 0.1, 0.2],
        [True, False, True],
        [np.nan, 0.1, 0.2],
        [0.1, np.inf, 0.2],
        [[0.1], [0.2, 0.3]],
        [],
        np.zeros((2, 2, 2)),
    ],
    "elementwise": [
        *NOT_NUMBERS,
        ["0.5", "0.1"],
        [0.5 + 1j, 0.1],
        [True, False],
        [np.nan, 0.1],
        [0.1, np.inf],
        [[0.1], [0.2, 0.3]],
        [],
    ],
    "tensor": [
        *NOT_NUMBERS,
        np.zeros((2, 3)),
        torch.zeros(5),
        torch.full((2, 3), float("nan")),
        torch.zeros(2, 3, dtype=torch.complex64),
    ],
    "real": [*NOT_NUMBERS, complex(0.1, 0), True, float("nan"), float("inf"), -float("inf"), 10**400, [0.1], -1.0],
    "int": [*NOT_NUMBERS, 2.5, "3", True, -1, 2**64, 10**400, [3]],
    "choice": [None, 3, "nonsense", ["grpo"], b"grpo"],
    "bool": [None, 1, "True", 0.0],
    "rng": [None, 0, np.random.RandomState(0), torch.Generator()],
    "config": [None, {}, "config"],
    "actions": [*NOT_NUMBERS, [0.0, 1.0, 2.0], [-1, 0, 1], [0, 7, 1], [True, False, True], [], [[0, 1]]],
    "pairs": [*NOT_NUMBERS, [[1, 1]], [[1, 9]], [[0.5, 1.0]], [1, 0], []],
    "texts": [None, "a string", [1, 2], [], [None]],
    "reference": [None, [4], True, float("nan"), complex(4, 0), 10**5000],
    "callable": [None, 3, "f"],
    "trainer": [None, 3, "t"],
}
KIND = {
    "rewards": "array",
    "success_rate": "elementwise",
    "logp": "array",
    "old_logp": "array",
    "ref_logp": "array",
    "ratio": "array",
    "advantages": "array",
    "p": "array",
    "q": "array",
    "logits": "array",
    "ref_logits": "array",
    "probs": "array",
    "reward_table": "array",
    "init_logits": "array",
    "ref_probs": "array",
    "targets": "array",
    "true_rewards": "array",
    "success_probs": "array",
    "logps": "tensor",
    "old_logps": "tensor",
    "ref_logps": "tensor",
    "mask": "tensor",
    "eps": "real",
    "eps_low": "real",
    "eps_high": "real",
    "beta": "real",
    "lr": "real",
    "adv_eps": "real",
    "temperature": "real",
    "value_lr": "real",
    "value_init": "real",
    "value": "real",
    "noise_std": "real",
    "lucky_prob": "real",
    "lucky_reward": "real",
    "std_floor": "real",
    "baseline": "real",
    "delta": "real",
    "group_size": "int",
    "ddof": "int",
    "inner_epochs": "int",
    "num_pairs": "int",
    "batch_size": "int",
    "seed": "int",
    "value_steps": "int",
    "steps": "int",
    "max_groups": "int",
    "lucky_action": "int",
    "num_actions": "int",
    "max_completion_length": "int",
    "num_items_in_batch": "int",
    "scale": "choice",
    "advantage": "choice",
    "zero_std": "choice",
    "loss_type": "choice",
    "kl_estimator": "choice",
    "importance_sampling_level": "choice",
    "normalize": "bool",
    "normalize_advantages": "bool",
    "rng": "rng",
    "config": "config",
    "actions": "actions",
    "pairs": "pairs",
    "completions": "texts",
    "reference": "reference",
    "make_trainer": "callable",
    "trainer": "trainer",
    "seeds": "int",
}
# Values that are legitimately accepted for one argument although they are bad for its kind.
ACCEPTED = {
    ("config", None),  # a trainer's config=None is its method's default config
    ("delta", None),
    ("eps_high", None),
    ("batch_size", None),
    ("max_groups", None),
    ("lucky_action", None),
    ("init_logits", None),
    ("max_completion_length", None),
    ("num_items_in_batch", None),
    ("value", -1.0),
    ("value_init", -1.0),
    ("lucky_reward", -1.0),
    ("baseline", -1.0),
    ("ref_logps", None),
}


def accepted(name, value) -> bool:
    return any(n == name and type(v) is type(value) and v == value for n, v in ACCEPTED)


def concrete(kwargs):
    fresh = {RNG: lambda: np.random.default_rng(0), TORCH_GEN: lambda: torch.Generator().manual_seed(0)}
    return {k: fresh[v]() if any(v is key for key in fresh) else v for k, v in kwargs.items()}


def one_argument_cases(kwargs) -> list[tuple[str, int]]:
    """(argument, index into BAD of its kind) of every call that changes one argument of a valid call to a bad value."""
    cases = [
        (name, index)
        for name in kwargs
        for index, value in enumerate(BAD[KIND[name]])
        if not accepted(name, value) and name != "seeds"
    ]
    return cases + [("seeds", index) for index in range(len(BAD["int"])) if "seeds" in kwargs]


ONE_ARGUMENT_CASES = {qualname: one_argument_cases(kwargs) for qualname, (_, kwargs) in VALID.items()}


def test_every_public_function_has_a_valid_call():
    public = {name.removeprefix("grpo_core.") for name in CALLABLES} - {
        "bandit.runs.RunHistory",
        "bandit.sharpened.SeedEndings",
        "bandit.grpo.StepResult",
    }
    public -= {"bandit.trainer.BanditTrainer"}  # abstract: its arguments are checked through the four subclasses
    assert public <= set(VALID), sorted(public - set(VALID))


@pytest.mark.parametrize("qualname", sorted(VALID))
def test_the_valid_calls_are_valid(qualname):
    func, kwargs = VALID[qualname]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = func(**concrete(kwargs))
    assert not has_nan(result) and not has_inf(result)


def one_bad_argument(qualname: str, name: str, index: int) -> str | None:
    """What is wrong with the answer to the valid call of ``qualname`` with ``name`` set to a bad value: ``None`` for
    a ValueError or TypeError (not a subclass such as a NumPy or torch error) whose message names the argument."""
    func, kwargs = VALID[qualname]
    kwargs = concrete(kwargs)
    bad = BAD[KIND[name]][index]
    kwargs[name] = [0, bad] if name == "seeds" else bad
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a RuntimeWarning (overflow, invalid) would be a silent inf/NaN
            func(**kwargs)
    except Exception as error:
        message = str(error)
        if type(error) not in (ValueError, TypeError):
            return f"raised {type(error).__name__}: {message}"
        named = "seed" if name == "seeds" else name
        if named in message or (name in ("ratio", "advantages") and "shapes must match" in message):
            return None
        return f"the message does not name {named}: {message}"
    return "accepted"


@pytest.mark.parametrize("qualname", sorted(VALID))
def test_one_bad_argument_is_named(qualname):
    """Each argument of the valid call, replaced in turn by each bad value of its kind (one call per value)."""
    cases = ONE_ARGUMENT_CASES[qualname]
    assert cases
    problems = {
        f"{name} = BAD[{KIND[name]!r}][{index}]": one_bad_argument(qualname, name, index) for name, index in cases
    }
    assert {case: problem for case, problem in problems.items() if problem} == {}


def has_inf(value) -> bool:
    if isinstance(value, tuple | list):
        return any(has_inf(v) for v in value)
    if isinstance(value, dict):
        return any(has_inf(v) for v in value.values())
    if hasattr(value, "__dataclass_fields__"):
        return any(has_inf(getattr(value, f)) for f in value.__dataclass_fields__)
    if isinstance(value, torch.Tensor):
        return bool(torch.isinf(value).any())
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return bool(np.isinf(value).any())
    return False


# The edges of the range grpo_core promises (package docstring, "The range"): magnitudes up to 1e9, and the smallest.
EXTREMES = [MAX_MAGNITUDE, -MAX_MAGNITUDE, 5e-324, -0.0, 1e-300]


def extreme_cases(kwargs) -> list[tuple[str, float, str]]:
    """(argument, extreme value, how it enters) of every call that puts one extreme finite value into a valid call."""
    cases = []
    for name, value in kwargs.items():
        if KIND[name] in ("array", "elementwise", "tensor") and name != "mask" and value is not None:
            cases += [(name, extreme, how) for extreme in EXTREMES for how in ("scale", "fill", "one")]
        if KIND[name] == "real" and value is not None:
            cases += [(name, extreme, "scalar") for extreme in (MAX_MAGNITUDE, 5e-324, -0.0, 2**64)]
    return cases


EXTREME_CASES = {qualname: cases for qualname, (_, kwargs) in VALID.items() if (cases := extreme_cases(kwargs))}


def extreme_value(qualname: str, name: str, extreme: float, how: str) -> str | None:
    """What is wrong with the answer to the valid call of ``qualname`` with one extreme value in ``name``: ``None`` for
    a result free of NaN and inf or a ValueError that says what overflowed."""
    func, kwargs = VALID[qualname]
    kwargs = concrete(kwargs)
    value = kwargs[name]
    if how == "scalar":
        kwargs[name] = extreme
    else:
        array = (
            torch.as_tensor(value, dtype=torch.float64) if isinstance(value, torch.Tensor) else np.array(value, float)
        )
        if how == "scale":
            array = array * extreme  # beyond the range (1.3 × 1e9): then the input itself is refused
        elif how == "fill":
            array = array * 0 + extreme
        else:
            array = array.clone() if isinstance(array, torch.Tensor) else array.copy()
            array.reshape(-1)[0] = extreme
        kwargs[name] = array
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = func(**kwargs)
    except ValueError as error:
        return None if str(error) else "a ValueError must say what overflowed"
    except Exception as error:
        return f"a finite real value must give a result or a ValueError, not {type(error).__name__}: {error}"
    return "NaN in the result" if has_nan(result) else "inf in the result" if has_inf(result) else None


@pytest.mark.parametrize("qualname", sorted(EXTREME_CASES))
def test_extreme_finite_values_give_finite_results_or_a_named_error(qualname):
    """Each array argument scaled by, filled with, or holding one of EXTREMES, and each real one set to an extreme."""
    problems = {case: extreme_value(qualname, *case) for case in EXTREME_CASES[qualname]}
    assert {case: problem for case, problem in problems.items() if problem} == {}


# -- issue 28: the classes of the third pass and their neighbours ----------------------------------------------
#
# Trainers driven to collapse, then every method called; values beyond the declared range refused by name;
# caller-owned buffers changed after the call; every dtype of the range; inputs of 10**6 characters.

TRAINERS = {
    "grpo": (grpo_core.BanditGRPO, grpo_core.GRPOConfig),
    "rloo": (grpo_core.BanditRLOO, grpo_core.RLOOConfig),
    "ppo": (grpo_core.BanditPPO, grpo_core.PPOConfig),
    "dpo": (grpo_core.BanditDPO, grpo_core.DPOConfig),
}
COLLAPSES = {
    "init_logits=[0, 800, 0, 0]": dict(init_logits=[0.0, 800.0, 0.0, 0.0]),  # π and π_ref have exact zeros
    "init_logits=[0, -800, 0, 0]": dict(init_logits=[0.0, -800.0, 0.0, 0.0]),
    "lr=1e4": dict(lr=1e4),  # the first updates put exact zeros into π, not into π_ref
    "lr=1e9": dict(lr=MAX_MAGNITUDE),  # the largest lr: the clamped ratio keeps the logits finite
}


def finite_everywhere(value) -> bool:
    return not has_nan(value) and not has_inf(value)


def snapshot(trainer) -> dict:
    """The trainer's snapshot without GRPO's last-group entries, NaN by design before the first step."""
    return {key: value for key, value in trainer.snapshot().items() if trainer.history or key not in LAST_GROUP}


LAST_GROUP = ("group_reward", "clip_fraction")


def exercised(trainer) -> list:
    """Every public method and property of a trainer, called: what a reader, the lab and run_seeds call."""
    answers = [trainer.probs, trainer.ref_probs, trainer.expected_reward, snapshot(trainer)]
    for _ in range(3):
        try:
            record = trainer.step()
        except grpo_core.bandit.trainer.Diverged as error:
            assert f"lr={trainer.config.lr}" in str(error) or f"lr = {trainer.config.lr}" in str(error), error
            break
        if isinstance(record, grpo_core.StepResult):
            answers += [record.reward_mean, record.reward_std, record.kl, record.entropy, record.clip_fraction]
            answers += [record.objective, record.ratios, record.probs, record.advantages]
        answers += [snapshot(trainer), trainer.probs, trainer.expected_reward]
    answers.append(trainer.sampled_log_probs([0, 1, 2, 3]))
    trainer.reset(seed=2**64 - 1)
    answers.append(snapshot(trainer))
    return answers


@pytest.mark.parametrize("collapse", sorted(COLLAPSES))
@pytest.mark.parametrize("method", sorted(TRAINERS))
def test_a_collapsed_trainer_still_reports_snapshots_and_replays(method, collapse):
    """Each trainer, collapsed (exact zeros in π or π_ref) or overflowing, then every method: finite answers, or a
    Diverged naming lr; the collapsed run replays bit for bit from its seed (any seed below 2**64)."""
    trainer_class, config_class = TRAINERS[method]
    changes = dict(COLLAPSES[collapse])
    init_logits = changes.pop("init_logits", None)
    config = config_class(**changes)

    def make(seed):
        return trainer_class(config=config, seed=seed, init_logits=init_logits)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(finite_everywhere(answer) for answer in exercised(make(0)))
        try:
            history = grpo_core.track(make(0), 3)
            runs = grpo_core.run_seeds(make, 3, [0, 2**63, 2**64 - 1])
        except grpo_core.bandit.trainer.Diverged as error:
            assert changes.get("lr") == MAX_MAGNITUDE and "lr" in str(error), error
            return
    curves = {key: values[:, 1:] if key in LAST_GROUP else values for key, values in runs.curves.items()}
    assert finite_everywhere(curves) and finite_everywhere(runs.final_probs)
    np.testing.assert_array_equal(runs.curves["kl"][0], history.curves["kl"])  # seed 0 replays bit for bit


def test_a_collapsed_prompt_set_still_reports():
    run = grpo_core.PromptSetGRPO([[0.2, 0.9], [0.5, 0.1], [1.0, 0.0]], config=grpo_core.GRPOConfig(lr=1e4))
    history = grpo_core.track(run, 4)
    assert finite_everywhere(history.curves) and (history.curves["entropy"][-1] == 0).all()


@pytest.mark.parametrize(
    ("compute", "name"),
    [
        (lambda: grpo_core.group_advantages([2e9, 0.0]), "rewards"),
        (lambda: grpo_core.softmax(np.array([-1e10, 0.0])), "logits"),
        (lambda: grpo_core.importance_ratio(torch.tensor([1e30]), torch.tensor([0.0])), "logp"),
        (lambda: grpo_core.GRPOConfig(lr=2e9), "lr"),
        (lambda: grpo_core.course.total_memory_gb(1e16, "ppo"), "num_params"),
        (lambda: grpo_core.group_advantages(np.array([1, 0], dtype=np.longdouble)), "rewards"),
        (lambda: grpo_core.group_advantages([10**400, 0]), "rewards"),
    ],
)
def test_a_value_beyond_the_declared_range_is_refused_by_name(compute, name):
    with pytest.raises((ValueError, TypeError), match=name):
        compute()


# Caller-owned buffers: every valid call made with NumPy arrays and float64 tensors the caller then overwrites.


def fingerprint(value):
    """The numbers a result holds, as plain Python values (a trainer by its reward table, θ and π_ref)."""
    if isinstance(value, grpo_core.BanditTrainer):
        return fingerprint([value.reward_table, value.init_logits, value.logits, value.ref_logits])
    if isinstance(value, torch.Tensor):
        return value.detach().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {key: fingerprint(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [fingerprint(item) for item in value]
    if hasattr(value, "__dataclass_fields__"):
        return {field: fingerprint(getattr(value, field)) for field in value.__dataclass_fields__}
    return value if isinstance(value, int | float | str | bool | None) else type(value).__name__


def as_buffers(kwargs, backend):
    """The valid call's arrays (and actions) as NumPy arrays or float64 tensors of the caller's own."""
    owned = {}
    for name, value in kwargs.items():
        kind = KIND[name]
        if kind in ("array", "elementwise") and isinstance(value, list):
            owned[name] = np.array(value, dtype=float) if backend == "numpy" else t64(value)
        elif kind in ("actions", "pairs") and isinstance(value, list):
            owned[name] = np.array(value) if backend == "numpy" else torch.tensor(value)
        else:
            owned[name] = value.clone() if isinstance(value, torch.Tensor) else value
    return owned


def overwrite(buffers) -> None:
    with torch.no_grad():
        for value in buffers.values():
            if isinstance(value, np.ndarray):
                value[...] = 3 if value.dtype.kind in "iu" else 7.5
            elif isinstance(value, torch.Tensor) and value.dtype != torch.bool:
                value.fill_(3 if not value.is_floating_point() else 7.5)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_changing_the_callers_buffers_after_the_call_changes_no_result(backend):
    problems = {}
    for qualname, (func, kwargs) in VALID.items():
        buffers = as_buffers(concrete(kwargs), backend)
        try:
            result = func(**buffers)
        except TypeError:
            continue  # e.g. a torch tensor of actions where NumPy is required: documented, not this test's concern
        before = repr(fingerprint(result))  # repr: NaN (a snapshot before any step) equals itself
        overwrite(buffers)
        if repr(fingerprint(result)) != before:
            problems[qualname] = "the result changed with the caller's buffer"
    assert problems == {}


# The dtypes of the range: every array argument of every valid call in each dtype, all at once.

TORCH_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int64, torch.uint8]
NUMPY_DTYPES = [np.float16, np.float32, np.int32, np.int64, np.uint8]


def in_dtype(kwargs, dtype):
    converted = {}
    for name, value in kwargs.items():
        if KIND[name] in ("array", "elementwise", "tensor") and name != "mask" and value is not None:
            array = np.asarray(value.double() if isinstance(value, torch.Tensor) else value, dtype=float)
            if isinstance(dtype, torch.dtype):
                converted[name] = torch.tensor(array).to(dtype)
            else:
                converted[name] = array.astype(dtype)
        else:
            converted[name] = value
    return converted


@pytest.mark.parametrize("dtype", TORCH_DTYPES + NUMPY_DTYPES, ids=str)
def test_every_dtype_gives_a_number_or_a_documented_refusal(dtype):
    problems = {}
    for qualname, (func, kwargs) in VALID.items():
        kwargs = in_dtype(concrete(kwargs), dtype)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                result = func(**kwargs)
        except (ValueError, TypeError) as error:
            if type(error) not in (ValueError, TypeError) or not str(error):
                problems[qualname] = f"{type(error).__name__}: {error}"
            continue
        except Exception as error:
            problems[qualname] = f"{type(error).__name__}: {error}"
            continue
        if not finite_everywhere(result):
            problems[qualname] = "NaN or inf"
    assert problems == {}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64], ids=str)
def test_narrow_and_integer_tensors_compute_as_float32_or_float64(dtype):
    logp, old = torch.tensor([-1.0, -2.0, -0.5]).to(dtype), torch.tensor([-1.5, -2.0, -1.0]).to(dtype)
    wide = torch.float64 if not dtype.is_floating_point else torch.float32
    for func in (grpo_core.importance_ratio, grpo_core.kl_k3, grpo_core.kl_k3_plus, grpo_core.kl_k1):
        result = func(logp, old)
        assert result.dtype == wide
        torch.testing.assert_close(result, func(logp.to(wide), old.to(wide)), rtol=0, atol=0)
    np.testing.assert_array_equal(
        grpo_core.group_advantages(logp), grpo_core.group_advantages(logp.to(torch.float64).numpy())
    )
    loss, _ = token_loss.grpo_token_loss(logp[None], old[None], old[None], torch.ones(1), torch.ones(1, 3))
    assert loss.dtype == wide and torch.isfinite(loss)


def test_a_list_of_0d_tensors_that_require_grad_is_a_list_of_numbers():
    values = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (0.2, 0.9, 0.4)]
    np.testing.assert_array_equal(grpo_core.group_advantages(values), grpo_core.group_advantages([0.2, 0.9, 0.4]))
    np.testing.assert_array_equal(
        grpo_core.kl_k3(values, [0.1, 0.2, 0.3]), grpo_core.kl_k3([0.2, 0.9, 0.4], [0.1, 0.2, 0.3])
    )
    narrow = [torch.tensor(0.5, dtype=torch.bfloat16), torch.tensor(0.25, dtype=torch.float16)]
    np.testing.assert_array_equal(grpo_core.softmax(narrow), grpo_core.softmax([0.5, 0.25]))
    with pytest.raises(TypeError, match="rewards"):
        grpo_core.group_advantages([torch.tensor(1 + 1j), torch.tensor(0.0)])


# Inputs of 10**6 characters: the verifier reads them in linear time; a refusal quotes at most 80 characters.

MEGA = 10**6


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("answer is " * (MEGA // 10) + "7", 1.0),
        ("\\boxed{" * (MEGA // 7), 0.0),
        ("{" * MEGA + "\\boxed{7}", 1.0),
        ("#" * MEGA + " 7", 1.0),
        ("7" * MEGA, 0.0),
        ("$" * MEGA + "answer is 7" + "$" * MEGA, 1.0),
        (" " * MEGA + "answer: 7." + " " * MEGA, 1.0),
        ("answer is " + "0" * MEGA + "7", 1.0),  # leading zeros of a number of a million digits
        ("answer is 7" + "0" * MEGA, 0.0),
    ],
)
def test_the_verifier_reads_a_million_characters(text, expected):
    assert grpo_core.exact_match_reward([text], 7)[0] == expected


def test_a_million_character_reference_and_refusals_stay_readable():
    reference = "1" + "0" * MEGA
    assert grpo_core.exact_match_reward([f"answer is {reference}", "answer is 1"], reference).tolist() == [1.0, 0.0]
    for call in (
        lambda: grpo_core.group_advantages([0.2, 0.9], scale="x" * MEGA),
        lambda: grpo_core.GRPOConfig(lr="1" * MEGA),
        lambda: grpo_core.run_seeds(grpo_core.BanditGRPO, 1, "s" * MEGA),
        lambda: token_loss.grpo_token_loss(
            torch.zeros(1, 2), torch.zeros(1, 2), None, torch.ones(1), torch.ones(1, 2), beta=0.0, loss_type="x" * MEGA
        ),
    ):
        with pytest.raises((ValueError, TypeError)) as raised:
            call()
        assert len(str(raised.value)) < 400, str(raised.value)[:200]


# -- issue 39: the findings of a hostile fuzz inside the declared range -----------------------------------------


def with_a_bool(value, flag):
    """``value`` (a nested list) with its first number replaced by ``flag``."""
    return [with_a_bool(value[0], flag), *value[1:]] if isinstance(value, list) else flag


BOOL_CASES = sorted(
    (qualname, name)
    for qualname, (_, kwargs) in VALID.items()
    for name, value in kwargs.items()
    if isinstance(value, list) and KIND[name] in ("array", "elementwise", "actions", "pairs")
)


@pytest.mark.parametrize("flag", [True, np.True_], ids=["bool", "np.bool_"])
@pytest.mark.parametrize(("qualname", "name"), BOOL_CASES)
def test_a_bool_inside_a_list_is_not_a_number(qualname, name, flag):
    """``importance_ratio([True, -2.0], [0.0, 0.0])`` read True as 1.0 (``[True, False]`` was refused): NumPy converts
    the bool before its dtype is checked. Every list argument of every public function, its first number a bool."""
    func, kwargs = VALID[qualname]
    kwargs = concrete(kwargs)
    kwargs[name] = with_a_bool(kwargs[name], flag)
    with pytest.raises(TypeError, match=name):
        func(**kwargs)


def test_the_bool_cases_cover_the_functions_of_the_finding():
    assert {("clipping.importance_ratio", "logp"), ("bandit.env.reward_of", "actions")} <= set(BOOL_CASES)
    assert len({qualname for qualname, _ in BOOL_CASES}) >= 40


def test_a_step_result_is_the_callers_to_change():
    trainer = grpo_core.BanditGRPO()
    result = trainer.step()
    before = trainer.logits.copy()
    result.logits[1] += 50
    np.testing.assert_array_equal(trainer.logits, before)
    np.testing.assert_array_equal(trainer.step().logits, grpo_core.BanditGRPO().run(2)[-1].logits)


def test_clip_fractions_of_float64_tensors_are_float64_fractions():
    ratio, advantages = [0.5, 1.0, 1.0], [-1.0, 1.0, 1.0]
    numpy = grpo_core.clip_fractions(np.array(ratio), np.array(advantages))
    tensor = grpo_core.clip_fractions(t64(ratio), t64(advantages))
    assert numpy == tensor == {"low": 1 / 3, "high": 0.0, "region": 1 / 3}


def test_preference_probability_names_its_mismatched_arguments():
    with pytest.raises(ValueError, match=r"reward_a.*reward_b"):
        grpo_core.bandit.dpo.preference_probability([1.0, 2.0, 3.0], [1.0, 2.0])


def test_run_seeds_over_two_kinds_of_trainer_is_a_named_error():
    def make(seed):
        return grpo_core.BanditGRPO(seed=seed) if seed == 0 else grpo_core.BanditPPO(seed=seed)

    with pytest.raises(ValueError, match="make_trainer must make one kind of trainer"):
        grpo_core.run_seeds(make, 2, [0, 1])
