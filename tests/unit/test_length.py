"""The length mitigations of §9 (grpo_core.sequence.length), over the space of groups a user can pass."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core import group_advantages
from grpo_core.sequence.length import length_conditioned_advantages, length_penalized_rewards

SIZES = st.integers(min_value=2, max_value=32)
REWARD = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)
LENGTH = st.integers(min_value=1, max_value=4096)


@st.composite
def groups(draw, prompts=None):
    size = draw(SIZES)
    shape = (size,) if prompts is None else (prompts, size)
    rewards = draw(arrays(np.float64, shape, elements=REWARD))
    lengths = draw(arrays(np.int64, shape, elements=LENGTH)).astype(float)
    return rewards, lengths


@given(groups(), st.floats(min_value=0, max_value=10))
def test_penalty_subtracts_coef_times_length(group, coef):
    rewards, lengths = group
    assert np.array_equal(length_penalized_rewards(rewards, lengths, coef), rewards - coef * lengths)


@given(groups())
def test_conditioned_advantages_are_uncorrelated_with_length(group):
    rewards, lengths = group
    adv = length_conditioned_advantages(rewards, lengths)
    centred = lengths - lengths.mean()
    assert abs(adv.sum()) <= 1e-8 * len(adv)
    assert abs(adv @ centred) <= 1e-6 * np.abs(centred).sum()
    assert np.isfinite(adv).all()


@given(groups(), st.floats(min_value=-1.0, max_value=1.0))
def test_a_reward_model_that_likes_length_changes_nothing(group, slope):
    rewards, lengths = group
    biased = rewards + slope * lengths
    assert np.allclose(
        length_conditioned_advantages(biased, lengths), length_conditioned_advantages(rewards, lengths), atol=1e-5
    )


@given(groups(), st.integers(min_value=1, max_value=64))
def test_equal_lengths_give_eq_3(group, length):
    rewards, _ = group
    lengths = np.full_like(rewards, length)
    adv = length_conditioned_advantages(rewards, lengths)
    assert np.allclose(adv, group_advantages(rewards), rtol=1e-12, atol=1e-12)


@given(groups(), st.floats(min_value=-5, max_value=5), st.floats(min_value=-5, max_value=5))
def test_rewards_the_line_explains_carry_no_signal(group, intercept, slope):
    _, lengths = group
    rewards = intercept + slope * lengths
    assert np.array_equal(length_conditioned_advantages(rewards, lengths), np.zeros_like(rewards))


def test_groups_of_a_batch_are_conditioned_apart():
    rng = np.random.default_rng(0)
    rewards, lengths = rng.random((5, 8)), rng.integers(1, 50, (5, 8)).astype(float)
    batch = length_conditioned_advantages(rewards, lengths)
    for row in range(5):
        assert np.array_equal(batch[row], length_conditioned_advantages(rewards[row], lengths[row]))


def test_a_known_group():
    # R = [1, 0, 1, 0] with lengths [2, 2, 6, 6]: the line is flat (b = 0), so eq. (3): ±1
    assert np.allclose(length_conditioned_advantages([1.0, 0.0, 1.0, 0.0], [2, 2, 6, 6]), [1, -1, 1, -1])
    # R = length / 10 + [1, 0, 0, 1]: the length part goes, the rest is eq. (3) of [1, 0, 0, 1]
    lengths = np.array([2.0, 4.0, 6.0, 8.0])
    residual = np.array([1.0, 0.0, 0.0, 1.0])
    slope, intercept = np.polyfit(lengths, residual, 1)
    expected = group_advantages(residual - (intercept + slope * lengths))
    assert np.allclose(length_conditioned_advantages(lengths / 10 + residual, lengths), expected)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: length_penalized_rewards([1.0, 0.0], [3, 4], -0.1), "coef"),
        (lambda: length_penalized_rewards([1.0, 0.0], [3, 4, 5], 0.1), "shapes must match"),
        (lambda: length_penalized_rewards([1.0, np.nan], [3, 4], 0.1), "rewards"),
        (lambda: length_conditioned_advantages([1.0, 0.0], [0, 4]), "lengths"),
        (lambda: length_conditioned_advantages([1.0], [3]), "G >= 2"),
        (lambda: length_conditioned_advantages([1e300, -1e300], [1, 2]), "rewards must lie within"),
        (lambda: length_penalized_rewards([1.0, 0.0], [1e10, 1], 0.1), "lengths must lie within"),
        (lambda: length_penalized_rewards([1.0, 0.0], [3, 4], 1e300), "coef"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
