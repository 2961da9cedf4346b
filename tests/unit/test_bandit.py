"""§7 and §11: the bandit engine, its hand-derived gradient and its behaviour."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core import (
    CHAPTER_REWARDS,
    BanditGRPO,
    GRPOConfig,
    group_advantages,
    grpo_objective,
    grpo_step,
    log_softmax,
    objective_gradient,
    sample_group,
    softmax,
)

logit_vectors = st.lists(st.floats(-4, 4), min_size=4, max_size=4).map(np.array)


def autograd_gradient(logits, actions, old_logp, ref_logp, advantages, eps_low, eps_high, beta):
    theta = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(theta, dim=-1)[torch.as_tensor(actions)]
    objective = grpo_objective(
        logp, torch.tensor(old_logp), torch.tensor(ref_logp), torch.tensor(advantages), eps_low, eps_high, beta
    )
    objective.backward()
    return theta.grad.numpy()


@settings(max_examples=200, deadline=None)
@given(
    logit_vectors,
    logit_vectors,
    logit_vectors,
    st.lists(st.integers(0, 3), min_size=2, max_size=12),
    st.floats(0.0, 0.4),
    st.floats(0.0, 0.4),
    st.floats(0.0, 1.0),
)
def test_hand_gradient_equals_autograd(theta, theta_old, theta_ref, actions, eps_low, eps_high, beta):
    actions = np.array(actions)
    rewards = np.asarray(CHAPTER_REWARDS)[actions] + np.linspace(0, 0.05, actions.size)
    advantages = group_advantages(rewards)
    old_logp = log_softmax(theta_old)[actions]
    ref_logp = log_softmax(theta_ref)[actions]
    ratio = softmax(theta)[actions] / np.exp(old_logp)
    # away from the clip boundaries, where the objective is not differentiable
    edges = np.concatenate([np.abs(ratio - (1 - eps_low)), np.abs(ratio - (1 + eps_high))])
    if edges.min() < 1e-6:
        return
    by_hand = objective_gradient(theta, actions, old_logp, ref_logp, advantages, eps_low, eps_high, beta)
    by_autograd = autograd_gradient(theta, actions, old_logp, ref_logp, advantages, eps_low, eps_high, beta)
    np.testing.assert_allclose(by_hand, by_autograd, atol=1e-10)


def test_sample_group_is_seeded_and_follows_probs():
    probs = np.array([0.1, 0.6, 0.2, 0.1])
    first = sample_group(probs, 8, np.random.default_rng(7))
    second = sample_group(probs, 8, np.random.default_rng(7))
    assert np.array_equal(first, second)
    counts = np.bincount(sample_group(probs, 100_000, np.random.default_rng(0)), minlength=4) / 100_000
    np.testing.assert_allclose(counts, probs, atol=0.005)


def test_step_on_chapter_group_moves_mass_to_b():
    result = grpo_step(np.zeros(4), np.zeros(4), np.array([1, 2, 1, 0]), np.array([0.9, 0.4, 0.9, 0.2]))
    assert result.reward_mean == pytest.approx(0.6)
    assert result.reward_std == pytest.approx(np.sqrt(0.095))
    assert result.probs[1] > 0.25 > result.probs[0]
    assert result.probs[3] == pytest.approx(result.probs[3])  # D unseen: only renormalised
    np.testing.assert_allclose(result.ratios, result.probs[[1, 2, 1, 0]] / 0.25)
    assert result.kl > 0 and result.entropy < np.log(4)
    np.testing.assert_allclose(result.old_probs, 0.25)


def test_once_every_term_is_clipped_more_epochs_change_nothing():
    # a large step size overshoots the band in one inner step (the clip is no hard trust region);
    # after that every term is clipped, the gradient is exactly 0 and further epochs are no-ops
    group = (np.zeros(4), np.zeros(4), np.array([1, 2, 1, 0]), np.array([0.9, 0.4, 0.9, 0.2]))
    short = grpo_step(*group, GRPOConfig(lr=5.0, inner_epochs=20, beta=0.0))
    long = grpo_step(*group, GRPOConfig(lr=5.0, inner_epochs=40, beta=0.0))
    assert short.clipped.all() and short.clip_fraction == 1.0
    assert short.ratios[0] > 1.2 and short.ratios[3] < 0.8
    np.testing.assert_array_equal(short.logits, long.logits)


def test_zero_variance_group_moves_policy_only_through_kl():
    run = BanditGRPO(config=GRPOConfig(beta=0.0))
    run.set_policy([0.001, 0.997, 0.001, 0.001])
    before = run.probs.copy()
    result = run.step()
    assert result.zero_variance and np.array_equal(result.advantages, np.zeros(8))
    np.testing.assert_allclose(run.probs, before, rtol=1e-12)  # β = 0: Property 4.1, a no-op

    run = BanditGRPO(config=GRPOConfig(beta=0.5))
    run.set_policy([0.001, 0.997, 0.001, 0.001])
    result = run.step()
    assert result.zero_variance
    assert run.probs[1] < 0.997  # the KL term alone pulls π back toward π_ref (uniform)


def test_reset_restores_start_and_reference():
    run = BanditGRPO(seed=3)
    run.run(5)
    assert not np.allclose(run.probs, 0.25)
    run.reset()
    np.testing.assert_allclose(run.probs, 0.25)
    np.testing.assert_allclose(run.ref_probs, 0.25)
    assert run.history == [] and run.pending is None


def test_runs_are_deterministic_per_seed():
    a, b = BanditGRPO(seed=11), BanditGRPO(seed=11)
    a.run(10)
    b.run(10)
    np.testing.assert_array_equal(a.logits, b.logits)
    c = BanditGRPO(seed=12)
    c.run(10)
    assert not np.array_equal(a.logits, c.logits)


def test_step_uses_pending_group_then_clears_it():
    run = BanditGRPO(seed=0)
    actions, rewards = run.sample()
    np.testing.assert_array_equal(rewards, np.asarray(CHAPTER_REWARDS)[actions])
    result = run.step()
    np.testing.assert_array_equal(result.actions, actions)
    assert run.pending is None


@pytest.mark.parametrize("advantage", ["grpo", "rloo", "dr_grpo"])
def test_every_advantage_variant_learns_b(advantage):
    finals = []
    for seed in range(8):
        run = BanditGRPO(config=GRPOConfig(advantage=advantage), seed=seed)
        run.run(40)
        finals.append(run.probs[1])
    assert np.mean(finals) > 0.6
    assert run.expected_reward > 0.25 * sum(CHAPTER_REWARDS)


def test_beta_limits_drift_from_reference():
    kls = {}
    for beta in (0.0, 1.0):
        run = BanditGRPO(config=GRPOConfig(beta=beta), seed=0)
        kls[beta] = run.run(30)[-1].kl
    assert kls[1.0] < kls[0.0]


def test_configure_replaces_and_validates():
    run = BanditGRPO()
    run.configure(group_size=4, beta=0.1)
    assert run.config.group_size == 4 and run.config.beta == 0.1
    with pytest.raises(ValueError, match="group_size"):
        run.configure(group_size=1)
    with pytest.raises(TypeError, match="config"):
        run.config = {"beta": 0.1}


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: GRPOConfig(group_size=2.5), TypeError),
        (lambda: GRPOConfig(lr=0.0), ValueError),
        (lambda: GRPOConfig(eps_high=-0.1), ValueError),
        (lambda: GRPOConfig(advantage="ppo"), ValueError),
        (lambda: GRPOConfig(inner_epochs=0), ValueError),
        (lambda: sample_group([0.5, 0.5], 4, 0), TypeError),
        (lambda: sample_group([0.5, 0.6], 4, np.random.default_rng()), ValueError),
        (lambda: sample_group([0.5, 0.5], 0, np.random.default_rng()), ValueError),
        (lambda: grpo_step(np.zeros(4), np.zeros(3), [0, 1], [0.1, 0.2]), ValueError),
        (lambda: grpo_step(np.zeros(4), np.zeros(4), [0, 4], [0.1, 0.2]), ValueError),
        (lambda: grpo_step(np.zeros(4), np.zeros(4), [0.0, 1.0], [0.1, 0.2]), TypeError),
        (lambda: grpo_step(np.zeros(4), np.zeros(4), [0, 1], [0.1]), ValueError),
        (lambda: grpo_step(np.zeros(4), np.zeros(4), [0, 1], [0.1, 0.2], config={}), TypeError),
        (lambda: BanditGRPO(rewards=[1.0]), ValueError),
        (lambda: BanditGRPO(init_logits=[0.0, 0.0]), ValueError),
        (lambda: BanditGRPO(seed=-1), ValueError),
        (lambda: BanditGRPO().set_policy([0.5, 0.5]), ValueError),
        (lambda: BanditGRPO().run(0), ValueError),
        (lambda: softmax([np.nan, 0.0]), ValueError),
    ],
)
def test_bad_input(call, error):
    with pytest.raises(error):
        call()
