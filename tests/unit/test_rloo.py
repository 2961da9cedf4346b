"""§8, RLOO: REINFORCE with a leave-one-out baseline, no ratio, no clip."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core import GRPOConfig, dr_grpo_advantages
from grpo_core.bandit.policy_gradient import expected_policy_gradient, reinforce_gradient
from grpo_core.bandit.rloo import BanditRLOO, RLOOConfig, RLOOStep, rloo_gradient

logits_4 = arrays(float, 4, elements=st.floats(-3, 3))


def test_golden_gradient_by_hand():
    # uniform π; group B, A, B, D with rewards 0.9, 0.2, 0.9, 0.1
    # b_0 = (0.2 + 0.9 + 0.1) / 3 = 0.4      -> A_0 = 0.5
    # b_1 = (0.9 + 0.9 + 0.1) / 3 = 19/30    -> A_1 = 0.2 - 19/30 = -13/30
    # b_2 = b_0                              -> A_2 = 0.5
    # b_3 = (0.9 + 0.2 + 0.9) / 3 = 2/3      -> A_3 = 0.1 - 2/3 = -17/30
    # Σ A_i = 0, so the gradient is (1/4) Σ A_i e_{a_i}
    grad = rloo_gradient(np.zeros(4), np.array([1, 0, 1, 3]), [0.9, 0.2, 0.9, 0.1])
    np.testing.assert_allclose(grad, [-13 / 120, 1 / 4, 0.0, -17 / 120], atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(logits_4, st.lists(st.integers(0, 3), min_size=2, max_size=12), st.data())
def test_gradient_matches_torch_autograd(logits, actions, data):
    rewards = data.draw(st.lists(st.floats(-2, 2), min_size=len(actions), max_size=len(actions)))
    actions = np.array(actions)
    # leave-one-out baseline written out independently of the library
    rewards_arr = np.array(rewards)
    loo = (rewards_arr.sum() - rewards_arr) / (len(actions) - 1)
    theta = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    surrogate = (torch.tensor(rewards_arr - loo) * torch.log_softmax(theta, 0)[torch.from_numpy(actions)]).mean()
    surrogate.backward()
    np.testing.assert_allclose(rloo_gradient(logits, actions, rewards), theta.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("group_size", [2, 3])
def test_leave_one_out_baseline_is_unbiased_and_group_mean_is_not(group_size):
    # enumerate every group of a 3-armed bandit: E[RLOO gradient] is the true gradient,
    # while the group-mean baseline (Dr. GRPO's numerator) shrinks it by (G - 1) / G
    logits, table = np.array([0.3, -0.5, 0.1]), np.array([1.0, 0.2, -0.4])
    probs = np.exp(logits) / np.exp(logits).sum()
    expected_rloo, expected_mean = np.zeros(3), np.zeros(3)
    for actions in itertools.product(range(3), repeat=group_size):
        actions = np.array(actions)
        weight = np.prod(probs[actions])
        expected_rloo += weight * rloo_gradient(logits, actions, table[actions])
        expected_mean += weight * reinforce_gradient(logits, actions, dr_grpo_advantages(table[actions]))
    truth = expected_policy_gradient(logits, table)
    np.testing.assert_allclose(expected_rloo, truth, atol=1e-12)
    np.testing.assert_allclose(expected_mean, (group_size - 1) / group_size * truth, atol=1e-12)


def test_one_step_by_hand():
    config = RLOOConfig(group_size=4, lr=2.0, beta=0.1)
    run = BanditRLOO(config=config, seed=3)
    rng = np.random.default_rng(3)
    actions = rng.choice(4, size=4, p=np.full(4, 0.25))
    table = np.array([0.2, 0.9, 0.4, 0.1])
    result = run.step()
    assert isinstance(result, RLOOStep)
    np.testing.assert_array_equal(result.actions, actions)
    # at π = π_ref the KL penalty is 0, so the shaped rewards are the rewards
    np.testing.assert_allclose(result.shaped_rewards, table[actions])
    np.testing.assert_allclose(run.logits, 2.0 * rloo_gradient(np.zeros(4), actions, table[actions]))
    assert run.samples_drawn == 4


def test_second_step_folds_the_kl_into_the_reward():
    run = BanditRLOO(config=RLOOConfig(group_size=6, lr=3.0, beta=0.5), seed=1)
    run.step()
    logits = run.logits.copy()
    result = run.step()
    log_probs = logits - np.log(np.exp(logits).sum())
    expected = np.array([0.2, 0.9, 0.4, 0.1])[result.actions] - 0.5 * (log_probs[result.actions] - np.log(0.25))
    np.testing.assert_allclose(result.shaped_rewards, expected, rtol=1e-12)
    np.testing.assert_allclose(run.logits, logits + 3.0 * rloo_gradient(logits, result.actions, expected), rtol=1e-12)
    assert run.samples_drawn == 12 and len(run.history) == 2


def test_learns_the_best_arm_and_reset_replays():
    run = BanditRLOO(config=RLOOConfig(lr=4.0, beta=0.0), seed=0)
    run.run(40)
    assert run.probs[1] > 0.9
    final = run.logits.copy()
    run.reset()
    np.testing.assert_array_equal(run.logits, np.zeros(4))
    assert run.samples_drawn == 0 and run.history == []
    run.run(40)
    np.testing.assert_array_equal(run.logits, final)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"group_size": 1}, ValueError),
        ({"group_size": 2.5}, TypeError),
        ({"lr": 0.0}, ValueError),
        ({"lr": "fast"}, TypeError),
        ({"beta": -0.1}, ValueError),
    ],
)
def test_bad_config(kwargs, error):
    with pytest.raises(error):
        RLOOConfig(**kwargs)


def test_bad_inputs():
    with pytest.raises(TypeError, match="RLOOConfig"):
        BanditRLOO(config=GRPOConfig())
    with pytest.raises(ValueError, match="one entry per action"):
        rloo_gradient(np.zeros(4), np.array([0, 1, 2]), [1.0, 0.0])
    with pytest.raises(ValueError, match="G >= 2"):
        rloo_gradient(np.zeros(4), np.array([0]), [1.0])
    with pytest.raises(ValueError, match="finite"):
        rloo_gradient(np.zeros(4), np.array([0, 1]), [1.0, np.nan])
    with pytest.raises(TypeError, match="seed"):
        BanditRLOO(seed=1.5)
