"""§9: binary and noisy rewards, the std floor, and zero-variance groups kept, masked or resampled."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core import GRPOConfig, centered_rewards, group_advantages, zero_std_fraction, zero_std_mask
from grpo_core.advantages import std_floor_advantages, zero_signal_probability
from grpo_core.bandit.failure_modes import (
    PromptSetGRPO,
    PromptSetStep,
    noisy_reward_model,
    verifier_rewards,
)

TABLE = np.array([0.2, 0.9, 0.4, 0.1])
PROMPTS = np.array([[0.9, 1.0, 0.9, 0.8], [0.2, 1.0, 0.5, 0.1], [0.0, 1.0, 0.1, 0.0], [0.0, 0.2, 0.0, 0.0]])


def test_verifier_rewards():
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(verifier_rewards(np.array([0, 1, 0, 1]), [0.0, 1.0], rng), [0.0, 1.0, 0.0, 1.0])
    rewards = verifier_rewards(np.zeros(20_000, dtype=int), [0.3, 1.0], rng)
    assert set(np.unique(rewards)) == {0.0, 1.0}
    assert rewards.mean() == pytest.approx(0.3, abs=0.01)


def test_zero_std_frequency_matches_the_binary_formula():
    # one arm with success rate p, groups of G: all equal with probability p^G + (1-p)^G
    rng = np.random.default_rng(1)
    groups = np.array([verifier_rewards(np.zeros(4, dtype=int), [0.7], rng) for _ in range(20_000)])
    assert zero_std_fraction(groups) == pytest.approx(float(zero_signal_probability(0.7, 4)), abs=0.01)


def test_noisy_reward_model():
    rng = np.random.default_rng(2)
    actions = np.array([0, 1, 2, 3] * 5000)
    np.testing.assert_array_equal(noisy_reward_model(actions[:4], TABLE, rng, noise_std=0.0), TABLE)
    scores = noisy_reward_model(actions, TABLE, rng, noise_std=0.1)
    noise = scores - TABLE[actions]
    assert noise.mean() == pytest.approx(0.0, abs=0.005) and noise.std() == pytest.approx(0.1, rel=0.03)
    lucky = noisy_reward_model(actions, TABLE, rng, 0.0, lucky_action=3, lucky_prob=0.25, lucky_reward=2.0)
    np.testing.assert_array_equal(lucky[actions != 3], TABLE[actions[actions != 3]])
    assert set(np.unique(lucky[actions == 3])) == {0.1, 2.0}
    assert (lucky[actions == 3] == 2.0).mean() == pytest.approx(0.25, abs=0.02)
    always = noisy_reward_model(actions[:8], TABLE, rng, 0.5, lucky_action=1, lucky_prob=1.0, lucky_reward=-1.0)
    assert np.all(always[actions[:8] == 1] == -1.0)


def test_std_floor_golden():
    # a spread of 1e-6: std = 5e-7, so eq. (3) gives ±5e-7 / (5e-7 + 1e-8) ≈ ±0.98 but a 0.01 floor ±5e-5
    tiny = [0.5, 0.5 + 1e-6, 0.5, 0.5 + 1e-6]
    np.testing.assert_allclose(group_advantages(tiny), np.array([-1, 1, -1, 1]) * 5e-7 / (5e-7 + 1e-8), rtol=1e-6)
    np.testing.assert_allclose(std_floor_advantages(tiny, 0.01), [-5e-5, 5e-5, -5e-5, 5e-5], rtol=1e-6)
    # a healthy group (std 0.308 > 0.01) is untouched: eq. (3) with ε = 0
    np.testing.assert_allclose(
        std_floor_advantages([0.9, 0.4, 0.9, 0.2], 0.01), group_advantages([0.9, 0.4, 0.9, 0.2], eps=0)
    )
    np.testing.assert_array_equal(std_floor_advantages([0.3, 0.3, 0.3], 0.01), [0.0, 0.0, 0.0])


@given(arrays(float, st.integers(2, 16), elements=st.floats(-10, 10)), st.floats(1e-6, 10.0))
def test_std_floor_property(rewards, floor):
    advantages = std_floor_advantages(rewards, floor)
    centered = centered_rewards(rewards)
    assert np.all(np.abs(advantages) <= np.abs(centered) / floor + 1e-12)
    if rewards.std() >= floor:
        np.testing.assert_allclose(advantages, group_advantages(rewards, eps=0.0), rtol=1e-9, atol=1e-12)


def test_masking_only_changes_the_normalizer():
    # β = 0, one inner epoch: same seed, same groups; the masked update is the kept one times P / n
    config = GRPOConfig(lr=2.0, beta=0.0, inner_epochs=1)
    keep, mask = PromptSetGRPO(PROMPTS, config, "keep", seed=5), PromptSetGRPO(PROMPTS, config, "mask", seed=5)
    kept, masked = keep.step(), mask.step()
    degenerate = zero_std_mask(kept.rewards)
    informative = int((~degenerate).sum())
    assert 0 < informative < 4  # this seed draws both kinds of group
    np.testing.assert_array_equal(masked.rewards, kept.rewards[~degenerate])
    np.testing.assert_allclose(mask.logits, keep.logits * 4 / informative, atol=1e-15)
    np.testing.assert_array_equal(keep.logits[degenerate], 0.0)
    assert kept.zero_std_fraction == masked.zero_std_fraction == degenerate.mean()


def test_kept_zero_variance_groups_still_pull_towards_the_reference():
    # with β > 0 a kept all-correct group has Â = 0 but its KL term still moves the policy back
    config = GRPOConfig(lr=1.0, beta=0.5, inner_epochs=1)
    run = PromptSetGRPO(np.array([[1.0, 1.0], [0.0, 1.0]]), config, "keep", seed=0)
    run.logits = np.array([[2.0, -1.0], [0.0, 0.0]])
    run.step()
    assert run.logits[0, 0] < 2.0 and run.logits[0, 1] > -1.0
    masked = PromptSetGRPO(np.array([[1.0, 1.0], [0.0, 1.0]]), config, "mask", seed=0)
    masked.logits = np.array([[2.0, -1.0], [0.0, 0.0]])
    masked.step()
    np.testing.assert_array_equal(masked.logits[0], [2.0, -1.0])


def test_dynamic_sampling_fills_the_batch_and_counts_every_sample():
    run = PromptSetGRPO(PROMPTS, GRPOConfig(group_size=6), "resample", seed=3)
    for step in run.run(5):
        assert isinstance(step, PromptSetStep)
        assert step.rewards.shape == (4, 6)
        assert not zero_std_mask(step.rewards).any()
        assert step.groups_drawn >= 4 and step.samples_drawn == 6 * step.groups_drawn
    assert run.samples_drawn == sum(step.samples_drawn for step in run.history)


def test_reset_replays_the_run():
    run = PromptSetGRPO(PROMPTS, GRPOConfig(inner_epochs=1), "mask", seed=9)
    run.run(3)
    logits, spent = run.logits.copy(), run.samples_drawn
    run.reset()
    assert run.samples_drawn == 0 and run.history == []
    np.testing.assert_array_equal(run.probs, np.full((4, 4), 0.25))
    run.run(3)
    np.testing.assert_array_equal(run.logits, logits)
    assert run.samples_drawn == spent == 3 * 4 * 8


def test_dynamic_sampling_gives_up_after_max_groups():
    # prompts nobody can solve: every group is all-wrong, nothing is kept, nothing moves
    run = PromptSetGRPO(np.zeros((2, 3)), GRPOConfig(group_size=4), "resample", seed=0, max_groups=7)
    step = run.step()
    assert step.groups_drawn == 7 and step.samples_drawn == 28 and step.rewards.shape == (0, 4)
    np.testing.assert_array_equal(run.logits, 0.0)
    assert step.zero_std_fraction == 1.0


def test_zero_std_fraction_rises_as_the_policy_sharpens():
    run = PromptSetGRPO(PROMPTS, GRPOConfig(lr=2.0, beta=0.0, inner_epochs=1), "keep", seed=0)
    fractions = [step.zero_std_fraction for step in run.run(40)]
    assert np.mean(fractions[:5]) < 0.45 < 0.6 < np.mean(fractions[-10:])
    assert run.success_rate[:3].min() > 0.9


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: PromptSetGRPO(PROMPTS, zero_std="drop"), ValueError),
        (lambda: PromptSetGRPO(PROMPTS * 2), ValueError),
        (lambda: PromptSetGRPO(PROMPTS[0]), ValueError),
        (lambda: PromptSetGRPO(PROMPTS[:, :1]), ValueError),
        (lambda: PromptSetGRPO(PROMPTS, config={"lr": 1}), TypeError),
        (lambda: PromptSetGRPO(PROMPTS, max_groups=3), ValueError),
        (lambda: verifier_rewards(np.array([0, 2]), [0.5, 0.5], np.random.default_rng(0)), ValueError),
        (lambda: verifier_rewards(np.array([0.0]), [0.5], np.random.default_rng(0)), TypeError),
        (lambda: noisy_reward_model(np.array([0]), TABLE, np.random.default_rng(0), -1.0), ValueError),
        (lambda: noisy_reward_model(np.array([0]), TABLE, np.random.default_rng(0), 0.1, 3, 1.5), ValueError),
        (lambda: noisy_reward_model(np.array([0]), TABLE, np.random.default_rng(0), 0.1, 7, 0.5), ValueError),
        (lambda: noisy_reward_model(np.array([0]), TABLE, None, 0.1), TypeError),
        (lambda: std_floor_advantages([1.0, 2.0], 0.0), ValueError),
        (lambda: std_floor_advantages([1.0], 0.1), ValueError),
        (lambda: std_floor_advantages("12", 0.1), TypeError),
    ],
)
def test_bad_inputs(call, error):
    with pytest.raises(error):
        call()
