"""Eq. (3), Definition 3.1, Property 4.1: golden numbers and properties."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core import (
    centered_rewards,
    dr_grpo_advantages,
    group_advantages,
    rloo_advantages,
    zero_std_fraction,
    zero_std_mask,
)
from grpo_core.advantages import group_std, zero_signal_probability

CHAPTER_GROUP = [0.9, 0.4, 0.9, 0.2]  # §12

rewards_1d = arrays(float, st.integers(2, 32), elements=st.floats(-100, 100, allow_subnormal=False))
rewards_2d = arrays(
    float, st.tuples(st.integers(1, 6), st.integers(2, 16)), elements=st.floats(-100, 100, allow_subnormal=False)
)


def varied(rewards: np.ndarray) -> bool:
    """Groups whose spread is not lost in floating-point noise."""
    return bool(np.all(np.ptp(rewards, axis=-1) > 1e-3 * (1 + np.abs(rewards).max())))


def test_chapter_worked_example():
    # mean = 2.4 / 4; population variance = (0.09 + 0.04 + 0.09 + 0.16) / 4 = 0.095
    std = math.sqrt(0.095)
    expected = [(0.9 - 0.6) / std, (0.4 - 0.6) / std, (0.9 - 0.6) / std, (0.2 - 0.6) / std]
    advantages = group_advantages(CHAPTER_GROUP, eps=0.0)
    np.testing.assert_allclose(advantages, expected, rtol=1e-12)
    assert std == pytest.approx(0.3082207, abs=1e-7)
    np.testing.assert_allclose(advantages, [0.9733285, -0.6488857, 0.9733285, -1.2977713], atol=1e-7)
    # the default eps = 1e-8 changes nothing a reader can see
    np.testing.assert_allclose(group_advantages(CHAPTER_GROUP), expected, rtol=1e-7)


def test_trl_setting_sample_std_and_eps():
    # torch.std (ddof=1) of [1, 0, 0, 1] is sqrt(1/3); TRL adds 1e-4 to it
    expected = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    advantages = group_advantages([1.0, 0.0, 0.0, 1.0], eps=1e-4, ddof=1)
    np.testing.assert_allclose(advantages, [expected, -expected, -expected, expected], rtol=1e-12)
    assert expected == pytest.approx(0.865875, abs=1e-6)


@pytest.mark.parametrize("value", [0.0, 0.1, 0.7, 1.0, -3.3])
@pytest.mark.parametrize("eps", [0.0, 1e-8, 1e-4])
def test_zero_variance_group_gives_exactly_zero(value, eps):
    rewards = np.full(8, value)
    assert zero_std_mask(rewards)
    for scale in ("group", "batch", "none"):
        advantages = group_advantages(rewards, eps=eps, scale=scale)
        assert np.array_equal(advantages, np.zeros(8)), scale
    assert np.array_equal(rloo_advantages(rewards), np.zeros(8))


def test_batch_of_groups_is_per_group():
    batch = np.array([CHAPTER_GROUP, [10.0, 0.0, 5.0, 5.0]])
    out = group_advantages(batch)
    np.testing.assert_allclose(out[0], group_advantages(CHAPTER_GROUP))
    np.testing.assert_allclose(out[1], group_advantages([10.0, 0.0, 5.0, 5.0]))


def test_batch_scale_uses_one_std():
    batch = np.array([[0.0, 1.0], [0.0, 3.0]])
    std = np.std(batch)  # population std of all four rewards
    expected = np.array([[-0.5, 0.5], [-1.5, 1.5]]) / (std + 1e-8)
    np.testing.assert_allclose(group_advantages(batch, scale="batch"), expected)


def test_zero_std_fraction_and_mask():
    batch = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [2.0, 2.0, 2.5]])
    assert zero_std_mask(batch).tolist() == [True, False, True, False]
    assert zero_std_fraction(batch) == 0.5


def test_rloo_golden():
    # b_1 = (0.4 + 0.9 + 0.2) / 3 = 0.5 -> 0.9 - 0.5 = 0.4; b_4 = 2.2 / 3
    expected = [0.9 - 0.5, 0.4 - 2.0 / 3.0, 0.9 - 0.5, 0.2 - 2.2 / 3.0]
    np.testing.assert_allclose(rloo_advantages(CHAPTER_GROUP), expected, rtol=1e-12)


def test_dr_grpo_is_centred_rewards():
    np.testing.assert_allclose(dr_grpo_advantages(CHAPTER_GROUP), [0.3, -0.2, 0.3, -0.4], atol=1e-15)


@pytest.mark.parametrize(("p", "group_size", "expected"), [(0.5, 4, 0.125), (0.0, 8, 1.0), (0.9, 2, 0.82)])
def test_zero_signal_probability_golden(p, group_size, expected):
    assert zero_signal_probability(p, group_size) == pytest.approx(expected)


def test_zero_signal_probability_matches_monte_carlo():
    rng = np.random.default_rng(0)
    p, group_size, n = 0.8, 4, 200_000
    groups = rng.random((n, group_size)) < p
    observed = zero_std_fraction(groups.astype(float))
    se = math.sqrt(zero_signal_probability(p, group_size) * (1 - zero_signal_probability(p, group_size)) / n)
    assert abs(observed - zero_signal_probability(p, group_size)) < 4 * se


@given(rewards_2d)
def test_mean_zero_and_unit_population_std(rewards):
    advantages = group_advantages(rewards, eps=0.0)
    np.testing.assert_allclose(advantages.mean(axis=-1), 0.0, atol=1e-9)
    spread = ~zero_std_mask(rewards)
    if varied(rewards):
        np.testing.assert_allclose(advantages.std(axis=-1)[spread], 1.0, rtol=1e-6)


@given(rewards_1d, st.floats(0.01, 100), st.floats(-100, 100))
def test_invariant_to_positive_affine_maps(rewards, scale, shift):
    if not varied(rewards):
        return
    before = group_advantages(rewards, eps=0.0)
    after = group_advantages(scale * rewards + shift, eps=0.0)
    np.testing.assert_allclose(after, before, atol=1e-6)


@given(rewards_1d)
def test_rloo_is_rescaled_centred_rewards(rewards):
    group_size = rewards.size
    np.testing.assert_allclose(
        rloo_advantages(rewards), group_size / (group_size - 1) * centered_rewards(rewards), atol=1e-9
    )


@given(rewards_1d)
def test_ddof_one_shrinks_by_known_factor(rewards):
    if not varied(rewards):
        return
    group_size = rewards.size
    np.testing.assert_allclose(
        group_advantages(rewards, eps=0.0, ddof=1),
        group_advantages(rewards, eps=0.0) * math.sqrt((group_size - 1) / group_size),
        atol=1e-9,
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"rewards": [1.0]}, ValueError, "G >= 2"),
        ({"rewards": [[1.0], [2.0]]}, ValueError, "G >= 2"),
        ({"rewards": [1.0, np.nan]}, ValueError, "finite"),
        ({"rewards": [1.0, np.inf]}, ValueError, "finite"),
        ({"rewards": np.ones((2, 2, 2))}, ValueError, "dimension"),
        ({"rewards": "abc"}, TypeError, "rewards"),
        ({"rewards": [1.0, 2.0], "eps": -1e-8}, ValueError, "eps"),
        ({"rewards": [1.0, 2.0], "ddof": 2}, ValueError, "ddof"),
        ({"rewards": [1.0, 2.0], "ddof": 0.5}, TypeError, "ddof"),
        ({"rewards": [1.0, 2.0], "scale": "prompt"}, ValueError, "scale"),
    ],
)
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        group_advantages(**kwargs)


@pytest.mark.parametrize(
    ("args", "error"),
    [((1.5, 4), ValueError), ((0.5, 2.0), TypeError), ((0.5, 0), ValueError), ((np.nan, 4), ValueError)],
)
def test_zero_signal_probability_bad_input(args, error):
    with pytest.raises(error):
        zero_signal_probability(*args)


@given(arrays(np.float64, st.integers(2, 12), elements=st.floats(-1e3, 1e3)), st.sampled_from([0, 1]))
def test_group_std_is_the_denominator_of_eq_3(rewards, ddof):
    std = group_std(rewards, ddof=ddof)
    np.testing.assert_allclose(std, rewards.std(ddof=ddof), rtol=1e-9, atol=1e-12)
    if np.ptp(rewards) > 1e-6:
        np.testing.assert_allclose(
            group_advantages(rewards, eps=0.0, ddof=ddof), centered_rewards(rewards) / std, rtol=1e-9, atol=1e-9
        )


def test_group_std_is_exactly_zero_for_a_zero_variance_group():
    assert group_std(np.full(14, 0.97, dtype=np.float32)) == 0.0
    np.testing.assert_allclose(group_std([[1e9, 1e9, 0.0], [1.0, 1.0, 1.0]]), [np.sqrt(2) / 3 * 1e9, 0.0])
    with pytest.raises(ValueError, match="ddof"):
        group_std([0.0, 1.0], ddof=2)
