"""Training memory and FLOPs of PPO-for-LLM vs GRPO (chapter §2), grpo_core.course.memory."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_core.course.memory import (
    flops_per_prompt,
    memory_by_model,
    memory_components,
    models,
    total_memory_gb,
)

# Golden numbers by hand: trained = 2 + 2 + 12 = 16 B/param, frozen = 2 B/param, 1 GB = 1e9 B.
# 7B trained: 7e9 * 16 = 112e9 B = 112 GB; 7B frozen: 14 GB.
# PPO  = policy 16N + critic 16N + reference 2N = 34N -> 238 GB at 7B
# GRPO = policy 16N + reference 2N             = 18N -> 126 GB at 7B
GOLDEN_TOTALS = [
    # (N, reward_model, PPO GB, GRPO GB)
    (1.5e9, False, 51.0, 27.0),
    (7e9, False, 238.0, 126.0),
    (70e9, False, 2380.0, 1260.0),
    (1.5e9, True, 54.0, 30.0),
    (7e9, True, 252.0, 140.0),
    (70e9, True, 2520.0, 1400.0),
]

sizes = st.floats(min_value=1e6, max_value=1e13, allow_nan=False)
reward_flags = st.booleans()


@pytest.mark.parametrize(("num_params", "reward_model", "ppo", "grpo"), GOLDEN_TOTALS)
def test_totals_match_hand_computation(num_params, reward_model, ppo, grpo):
    assert total_memory_gb(num_params, "ppo", reward_model=reward_model) == pytest.approx(ppo, rel=1e-12)
    assert total_memory_gb(num_params, "grpo", reward_model=reward_model) == pytest.approx(grpo, rel=1e-12)


def test_7b_breakdown_by_model():
    assert memory_by_model(7e9, "ppo") == pytest.approx({"policy": 112.0, "critic": 112.0, "reference": 14.0})
    assert memory_by_model(7e9, "grpo", reward_model=True) == pytest.approx(
        {"policy": 112.0, "reference": 14.0, "reward model": 14.0}
    )


def test_7b_policy_states_and_bytes_per_param():
    policy = {c.state: c for c in memory_components(7e9, "grpo") if c.model == "policy"}
    assert {state: c.bytes_per_param for state, c in policy.items()} == {"weights": 2, "gradients": 2, "optimizer": 12}
    assert policy["weights"].gigabytes == pytest.approx(14.0)
    assert policy["gradients"].gigabytes == pytest.approx(14.0)
    assert policy["optimizer"].gigabytes == pytest.approx(84.0)  # fp32 master + Adam m + v: 7e9 * 12 B


def test_frozen_models_hold_weights_only():
    frozen = [c for c in memory_components(1e9, "ppo", reward_model=True) if c.model in ("reference", "reward model")]
    assert [(c.model, c.state, c.bytes_per_param) for c in frozen] == [
        ("reference", "weights", 2),
        ("reward model", "weights", 2),
    ]


def test_models_held():
    assert models("ppo") == {"policy": True, "critic": True, "reference": False}
    assert models("grpo") == {"policy": True, "reference": False}
    assert models("grpo", reward_model=True) == {"policy": True, "reference": False, "reward model": False}


@given(sizes, reward_flags)
def test_grpo_needs_less_memory_than_ppo(num_params, reward_model):
    assert total_memory_gb(num_params, "grpo", reward_model=reward_model) < total_memory_gb(
        num_params, "ppo", reward_model=reward_model
    )


@given(sizes, reward_flags)
def test_the_difference_is_exactly_one_trained_critic(num_params, reward_model):
    saved = total_memory_gb(num_params, "ppo", reward_model=reward_model) - total_memory_gb(
        num_params, "grpo", reward_model=reward_model
    )
    assert saved == pytest.approx(16 * num_params / 1e9, rel=1e-9)


@given(sizes, st.floats(min_value=0.01, max_value=100), st.sampled_from(["ppo", "grpo"]), reward_flags)
def test_memory_is_linear_in_parameters(num_params, factor, algorithm, reward_model):
    base = total_memory_gb(num_params, algorithm, reward_model=reward_model)
    scaled = total_memory_gb(num_params * factor, algorithm, reward_model=reward_model)
    assert scaled == pytest.approx(factor * base, rel=1e-9)


@given(sizes)
def test_ratio_does_not_depend_on_size(num_params):
    assert total_memory_gb(num_params, "ppo") / total_memory_gb(num_params, "grpo") == pytest.approx(34 / 18)


def test_flops_golden_ppo():
    # N = 7e9, T = 1000, one completion, one epoch: forward 2*7e9*1e3 = 1.4e13, fwd+bwd 6*7e9*1e3 = 4.2e13
    assert flops_per_prompt(7e9, 1000, "ppo") == pytest.approx(
        {
            "generation": 1.4e13,
            "reference forward": 1.4e13,
            "critic forward": 1.4e13,
            "policy training": 4.2e13,
            "critic training": 4.2e13,
        }
    )


def test_flops_golden_grpo_group():
    # G = 8 completions of 500 tokens, 2 epochs, 1.5e9 params, with a reward model:
    # forward 2 * 1.5e9 * 500 * 8 = 1.2e13; training 6 * 1.5e9 * 500 * 8 * 2 = 7.2e13
    assert flops_per_prompt(1.5e9, 500, "grpo", completions=8, epochs=2, reward_model=True) == pytest.approx(
        {
            "generation": 1.2e13,
            "reference forward": 1.2e13,
            "reward model forward": 1.2e13,
            "policy training": 7.2e13,
        }
    )


@given(
    sizes,
    st.floats(min_value=1, max_value=1e5),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=8),
    reward_flags,
)
def test_critic_flops_are_the_whole_difference(num_params, tokens, completions, epochs, reward_model):
    kwargs = {"completions": completions, "epochs": epochs, "reward_model": reward_model}
    ppo = sum(flops_per_prompt(num_params, tokens, "ppo", **kwargs).values())
    grpo = sum(flops_per_prompt(num_params, tokens, "grpo", **kwargs).values())
    assert ppo - grpo == pytest.approx((2 + 6 * epochs) * num_params * tokens * completions, rel=1e-9)


@given(sizes, st.floats(min_value=1, max_value=1e5), st.integers(min_value=1, max_value=64))
def test_flops_scale_with_completions(num_params, tokens, completions):
    one = sum(flops_per_prompt(num_params, tokens, "grpo").values())
    many = sum(flops_per_prompt(num_params, tokens, "grpo", completions=completions).values())
    assert many == pytest.approx(completions * one, rel=1e-9)


@pytest.mark.parametrize("bad", [0, -7e9, math.nan, math.inf])
def test_bad_size_is_a_value_error(bad):
    with pytest.raises(ValueError, match="num_params"):
        total_memory_gb(bad, "ppo")


@pytest.mark.parametrize("bad", ["7B", None, True])
def test_non_numeric_size_is_a_type_error(bad):
    with pytest.raises(TypeError, match="num_params"):
        memory_components(bad, "grpo")


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="algorithm"):
        total_memory_gb(7e9, "dpo")


def test_reward_model_flag_must_be_bool():
    with pytest.raises(TypeError, match="reward_model"):
        total_memory_gb(7e9, "ppo", reward_model="yes")


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"completions": 0}, ValueError, "completions"),
        ({"completions": 2.5}, TypeError, "completions"),
        ({"epochs": 0}, ValueError, "epochs"),
    ],
)
def test_bad_flops_arguments(kwargs, error, name):
    with pytest.raises(error, match=name):
        flops_per_prompt(7e9, 1000, "grpo", **kwargs)


def test_bad_tokens():
    with pytest.raises(ValueError, match="tokens"):
        flops_per_prompt(7e9, -1, "grpo")
