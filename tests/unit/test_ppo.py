"""§8, RLHF-style PPO on the bandit: scalar critic, KL in the reward, clipped surrogate."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core import categorical_kl, clip_objective, group_advantages, objective_gradient, state_value
from grpo_core.bandit.ppo import BanditPPO, PPOConfig, PPOStep, fit_value, kl_penalized_rewards, ppo_advantages

TABLE = np.array([0.2, 0.9, 0.4, 0.1])
rewards_1d = arrays(float, st.integers(2, 16), elements=st.floats(-5, 5))


def test_kl_penalized_rewards_golden():
    # R̃ = R - β (log π - log π_ref): [1 - 0.1 ln 2, 0 - 0.1 * 0]
    shaped = kl_penalized_rewards([1.0, 0.0], np.log([0.5, 0.25]), np.log([0.25, 0.25]), beta=0.1)
    np.testing.assert_allclose(shaped, [1 - 0.1 * math.log(2), 0.0], rtol=1e-12)
    assert shaped[0] == pytest.approx(0.9306853, abs=1e-7)


def test_kl_in_reward_is_an_unbiased_estimate_of_the_kl_gradient():
    # E_{a~π}[-β log(π(a)/π_ref(a)) ∇log π(a)] = -β ∇_θ KL(π‖π_ref), the KL gradient by autograd
    logits, ref_logits, beta = np.array([0.4, 1.1, -0.3, 0.0]), np.array([0.0, 0.2, 0.5, -0.1]), 0.3
    probs = np.exp(logits) / np.exp(logits).sum()
    log_probs, ref_log_probs = np.log(probs), ref_logits - np.log(np.exp(ref_logits).sum())
    expected = sum(
        probs[a]
        * objective_gradient(
            logits, np.array([a]), log_probs[[a]], ref_log_probs[[a]],
            kl_penalized_rewards([0.0], log_probs[[a]], ref_log_probs[[a]], beta), beta=0.0,
        )
        for a in range(4)
    )  # fmt: skip
    theta = torch.tensor(logits, requires_grad=True)
    p = torch.softmax(theta, 0)
    (p * (torch.log(p) - torch.tensor(ref_log_probs))).sum().backward()
    np.testing.assert_allclose(expected, -beta * theta.grad.numpy(), atol=1e-12)


def test_fit_value_golden():
    # V=0, targets mean 0.5, lr 0.5: 0 -> 0.25 -> 0.375
    assert fit_value(0.0, [1.0, 0.0, 1.0, 0.0], lr=0.5, steps=2) == pytest.approx(0.375, abs=1e-15)
    assert fit_value(3.0, [1.0, 2.0], lr=1.0, steps=1) == 1.5


@given(st.floats(-5, 5), rewards_1d, st.floats(0.01, 1.0), st.integers(1, 8))
def test_fit_value_is_an_exponential_moving_average(value, targets, lr, steps):
    mean = targets.mean()
    fitted = fit_value(value, targets, lr, steps)
    assert fitted == pytest.approx(mean + (1 - lr) ** steps * (value - mean), abs=1e-9)
    assert abs(fitted - mean) <= abs(value - mean) + 1e-12


def test_fit_value_steps_are_gradient_descent_on_squared_error():
    targets = torch.tensor([0.3, 0.9, -0.2], dtype=torch.float64)
    v = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    (0.5 * ((v - targets) ** 2).mean()).backward()
    assert fit_value(0.7, targets.numpy(), lr=0.2, steps=1) == pytest.approx(0.7 - 0.2 * v.grad.item(), abs=1e-15)


def test_ppo_advantages_golden():
    np.testing.assert_allclose(ppo_advantages([0.9, 0.4], value=0.5), [0.4, -0.1])
    np.testing.assert_allclose(ppo_advantages([0.9, 0.4], value=0.5, normalize=True, eps=0.0), [1.0, -1.0])


@given(rewards_1d, st.floats(-10, 10))
def test_whitening_makes_the_critic_drop_out(rewards, value):
    # one state, one batch: (A - mean A) / std A is eq. (3) of the rewards, whatever V is
    whitened = ppo_advantages(rewards, value, normalize=True)
    np.testing.assert_allclose(whitened, group_advantages(rewards), atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(arrays(float, 4, elements=st.floats(-2, 2)), st.lists(st.integers(0, 3), min_size=2, max_size=8), st.data())
def test_clipped_update_matches_torch_autograd(logits, actions, data):
    # the PPO policy step is objective_gradient with β = 0: check it against autograd of eq. (7)
    actions = np.array(actions)
    n = len(actions)
    advantages = np.array(data.draw(st.lists(st.floats(-2, 2), min_size=n, max_size=n)))
    old_logits = logits + np.array(data.draw(st.lists(st.floats(-0.5, 0.5), min_size=4, max_size=4)))
    old_logp = (old_logits - np.log(np.exp(old_logits).sum()))[actions]
    theta = torch.tensor(logits, requires_grad=True)
    logp = torch.log_softmax(theta, 0)[torch.from_numpy(actions)]
    ratio = np.exp(logp.detach().numpy() - old_logp)
    # stay away from the kinks of the clip, where the gradient is one-sided
    if np.any(np.abs(ratio - 0.8) < 1e-6) or np.any(np.abs(ratio - 1.2) < 1e-6):
        return
    clip_objective(logp, torch.from_numpy(old_logp), torch.from_numpy(advantages)).backward()
    hand = objective_gradient(logits, actions, old_logp, old_logp, advantages, beta=0.0)
    np.testing.assert_allclose(hand, theta.grad.numpy(), atol=1e-10)


def test_one_step_by_hand():
    config = PPOConfig(batch_size=5, lr=0.5, inner_epochs=3, value_lr=0.3, value_steps=2, value_init=0.1, beta=0.2)
    run = BanditPPO(config=config, seed=7)
    actions = np.random.default_rng(7).choice(4, size=5, p=np.full(4, 0.25))
    result = run.step()
    assert isinstance(result, PPOStep)
    np.testing.assert_array_equal(result.actions, actions)
    rewards = TABLE[actions]  # π = π_ref at the start: no KL penalty yet
    np.testing.assert_allclose(result.shaped_rewards, rewards)
    np.testing.assert_allclose(result.advantages, rewards - 0.1)
    assert result.value == 0.1
    mean = rewards.mean()
    assert run.value == pytest.approx(mean + 0.7**2 * (0.1 - mean), abs=1e-12)
    theta, old_logp = np.zeros(4), np.full(5, np.log(0.25))
    for _ in range(3):
        theta = theta + 0.5 * objective_gradient(theta, actions, old_logp, old_logp, rewards - 0.1, beta=0.0)
    np.testing.assert_allclose(run.logits, theta, rtol=1e-12)
    assert run.samples_drawn == 5


def test_critic_tracks_the_shaped_value_and_policy_learns():
    run = BanditPPO(config=PPOConfig(beta=0.1), seed=0)
    run.run(150)
    probs = run.probs
    # V tracks E_π[R̃] = V^π - β KL(π‖π_ref) (the k1 penalty averages to the exact KL)
    target = state_value(probs, TABLE) - 0.1 * categorical_kl(probs, np.full(4, 0.25))
    assert run.value == pytest.approx(target, abs=0.05)
    assert probs[1] > 0.85
    run.reset(0)
    assert run.value == 0.0 and run.samples_drawn == 0


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"batch_size": 1}, ValueError),
        ({"lr": 0.0}, ValueError),
        ({"inner_epochs": 0}, ValueError),
        ({"value_lr": 1.5}, ValueError),
        ({"value_lr": 0.0}, ValueError),
        ({"value_steps": 0}, ValueError),
        ({"value_init": float("nan")}, ValueError),
        ({"normalize_advantages": 1}, TypeError),
        ({"beta": -1.0}, ValueError),
        ({"eps_high": -0.1}, ValueError),
    ],
)
def test_bad_config(kwargs, error):
    with pytest.raises(error):
        PPOConfig(**kwargs)


def test_bad_inputs():
    with pytest.raises(TypeError, match="PPOConfig"):
        BanditPPO(config={"lr": 1.0})
    with pytest.raises(ValueError, match="shapes must match"):
        kl_penalized_rewards([1.0, 0.0], np.log([0.5]), np.log([0.5]), beta=0.1)
    with pytest.raises(ValueError, match="beta"):
        kl_penalized_rewards([1.0], [0.0], [0.0], beta=-0.1)
    with pytest.raises(ValueError, match=r"lr must lie in \(0, 1\]"):
        fit_value(0.0, [1.0], lr=2.0, steps=1)
    with pytest.raises(TypeError, match="steps"):
        fit_value(0.0, [1.0], lr=0.5, steps=1.0)
    with pytest.raises(ValueError, match="value"):
        ppo_advantages([1.0, 0.0], value=np.inf)
    with pytest.raises(TypeError, match="normalize"):
        ppo_advantages([1.0, 0.0], value=0.0, normalize="yes")
    with pytest.raises(ValueError, match="init_logits"):
        BanditPPO(init_logits=np.zeros(3))
