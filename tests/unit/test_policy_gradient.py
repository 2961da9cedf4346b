"""REINFORCE on the softmax bandit (grpo_core.bandit.policy_gradient): chapter §4–§5.

Golden numbers are worked out by hand in the comments; the property tests
compare the closed forms with torch autograd of the published definitions
(log-softmax, the surrogate mean(Â · log π(a)), and V^π = π · r).
"""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core.advantages import centered_rewards, rloo_advantages
from grpo_core.bandit.policy_gradient import expected_policy_gradient, reinforce_gradient, score

CHAPTER_R = np.array([0.2, 0.9, 0.4, 0.1])
finite = st.floats(-5, 5, allow_nan=False, allow_infinity=False)


def logit_vectors(min_size=2, max_size=6):
    return st.integers(min_size, max_size).flatmap(lambda k: arrays(float, k, elements=finite))


@st.composite
def groups(draw):
    """(logits, actions, advantages) for one group of G samples from K actions."""
    logits = draw(logit_vectors())
    size = draw(st.integers(1, 8))
    actions = np.array(draw(st.lists(st.integers(0, logits.size - 1), min_size=size, max_size=size)))
    advantages = draw(arrays(float, size, elements=finite))
    return logits, actions, advantages


def autograd_log_softmax_jacobian(logits: np.ndarray) -> np.ndarray:
    theta = torch.tensor(logits, dtype=torch.float64)
    return torch.autograd.functional.jacobian(lambda t: torch.log_softmax(t, -1), theta).numpy()


# --- score -----------------------------------------------------------------


def test_score_uniform_golden():
    # π = 1/4 everywhere, so row a is e_a - 1/4.
    expected = np.array(
        [
            [0.75, -0.25, -0.25, -0.25],
            [-0.25, 0.75, -0.25, -0.25],
            [-0.25, -0.25, 0.75, -0.25],
            [-0.25, -0.25, -0.25, 0.75],
        ]
    )
    np.testing.assert_allclose(score(np.zeros(4)), expected, atol=1e-15)


def test_score_two_actions_golden():
    # θ = (log 3, 0): π = (3/4, 1/4); rows e_0 - π = (1/4, -1/4), e_1 - π = (-3/4, 3/4).
    np.testing.assert_allclose(score(np.array([np.log(3.0), 0.0])), [[0.25, -0.25], [-0.75, 0.75]], atol=1e-15)


@given(logit_vectors())
def test_score_rows_sum_to_zero(logits):
    np.testing.assert_allclose(score(logits).sum(axis=1), 0.0, atol=1e-12)


@given(logit_vectors())
@settings(deadline=None)
def test_score_matches_autograd_of_log_softmax(logits):
    # Row a of the Jacobian of log_softmax(θ) is ∇_θ log π_θ(a).
    np.testing.assert_allclose(score(logits), autograd_log_softmax_jacobian(logits), atol=1e-12)


def test_score_is_invariant_to_a_logit_shift():
    logits = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(score(logits + 100.0), score(logits), atol=1e-12)


# --- reinforce_gradient ----------------------------------------------------


def test_reinforce_gradient_single_sample_golden():
    # Uniform over 4, one sample of action 1 with Â = 2: 2 · (e_1 - 1/4) = (-0.5, 1.5, -0.5, -0.5).
    np.testing.assert_allclose(reinforce_gradient(np.zeros(4), np.array([1]), np.array([2.0])), [-0.5, 1.5, -0.5, -0.5])


def test_reinforce_gradient_group_golden():
    # Uniform over 4, actions (0, 1) with Â = (1, -1): ((e_0 - π) - (e_1 - π)) / 2 = (e_0 - e_1) / 2.
    grad = reinforce_gradient(np.zeros(4), np.array([0, 1]), np.array([1.0, -1.0]))
    np.testing.assert_allclose(grad, [0.5, -0.5, 0.0, 0.0], atol=1e-15)


def test_reinforce_gradient_chapter_group_golden():
    # §12's group: actions B, C, B, A (rewards 0.9, 0.4, 0.9, 0.2), uniform π, Â = R - mean(R) = (0.3, -0.2, 0.3, -0.4).
    # Σ Â = 0, so the estimate is (1/4) Σ Â_i e_{a_i} = (1/4)(-0.4, 0.6, -0.2, 0) = (-0.1, 0.15, -0.05, 0).
    grad = reinforce_gradient(np.zeros(4), np.array([1, 2, 1, 0]), np.array([0.3, -0.2, 0.3, -0.4]))
    np.testing.assert_allclose(grad, [-0.1, 0.15, -0.05, 0.0], atol=1e-15)


@given(groups())
@settings(deadline=None)
def test_reinforce_gradient_matches_autograd_of_surrogate(group):
    logits, actions, advantages = group
    theta = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    surrogate = (torch.tensor(advantages) * torch.log_softmax(theta, -1)[torch.as_tensor(actions)]).mean()
    surrogate.backward()
    np.testing.assert_allclose(reinforce_gradient(logits, actions, advantages), theta.grad.numpy(), atol=1e-10)


@given(groups())
def test_reinforce_gradient_sums_to_zero(group):
    # Every score row sums to 0, so does any combination of them.
    np.testing.assert_allclose(reinforce_gradient(*group).sum(), 0.0, atol=1e-10)


@given(groups(), st.randoms(use_true_random=False))
def test_reinforce_gradient_ignores_the_order_of_the_group(group, random):
    logits, actions, advantages = group
    order = list(range(actions.size))
    random.shuffle(order)
    np.testing.assert_allclose(
        reinforce_gradient(logits, actions[order], advantages[order]),
        reinforce_gradient(logits, actions, advantages),
        atol=1e-12,
    )


def test_reinforce_gradient_is_zero_for_zero_advantages():
    assert not reinforce_gradient(np.array([1.0, -2.0, 0.5]), np.array([0, 2, 2]), np.zeros(3)).any()


# --- expected_policy_gradient ----------------------------------------------


@pytest.mark.parametrize("baseline", [0.0, 0.4, 1.0, -3.0])
def test_expected_gradient_uniform_golden(baseline):
    # Uniform π: V = mean(R) = 0.4 and E[grad] = π ∘ (R - V) = 0.25 · (-0.2, 0.5, 0, -0.3).
    np.testing.assert_allclose(
        expected_policy_gradient(np.zeros(4), CHAPTER_R, baseline), [-0.05, 0.125, 0.0, -0.075], atol=1e-15
    )


def test_expected_gradient_two_actions_golden():
    # π = (3/4, 1/4), r = (1, 0): V = 3/4, E[grad] = π ∘ (r - V) = (3/16, -3/16).
    np.testing.assert_allclose(
        expected_policy_gradient(np.array([np.log(3.0), 0.0]), np.array([1.0, 0.0])), [0.1875, -0.1875], atol=1e-15
    )


@st.composite
def policies_and_rewards(draw):
    logits = draw(logit_vectors())
    rewards = draw(arrays(float, logits.size, elements=st.floats(-3, 3)))
    return logits, rewards


@given(policies_and_rewards(), st.floats(-10, 10), st.floats(-10, 10))
def test_expected_gradient_does_not_depend_on_the_baseline(policy, first, second):
    logits, rewards = policy
    np.testing.assert_allclose(
        expected_policy_gradient(logits, rewards, first), expected_policy_gradient(logits, rewards, second), atol=1e-10
    )


@given(policies_and_rewards())
@settings(deadline=None)
def test_expected_gradient_is_the_gradient_of_the_value(policy):
    # V^π(θ) = softmax(θ) · r (eq. 4); its autograd gradient is the policy gradient.
    logits, rewards = policy
    theta = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    (torch.softmax(theta, -1) @ torch.tensor(rewards)).backward()
    np.testing.assert_allclose(expected_policy_gradient(logits, rewards), theta.grad.numpy(), atol=1e-12)


@given(policies_and_rewards(), st.floats(-5, 5))
def test_expected_gradient_is_the_mean_of_single_sample_estimates(policy, baseline):
    # E_a~π[(r(a) - b)(e_a - π)] by weighting each one-sample REINFORCE estimate with π(a).
    logits, rewards = policy
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    mixture = sum(
        probs[a] * reinforce_gradient(logits, np.array([a]), np.array([rewards[a] - baseline]))
        for a in range(logits.size)
    )
    np.testing.assert_allclose(expected_policy_gradient(logits, rewards, baseline), mixture, atol=1e-10)


# --- the group-mean baseline versus leave-one-out, exactly (§5) -------------


def exact_group_expectation(probs, rewards, group_size, advantage_fn):
    """E over all K^G groups of reinforce_gradient(advantage_fn(R)), each weighted by Π π(a_i)."""
    logits = np.log(probs)
    total = np.zeros(probs.size)
    for group in itertools.product(range(probs.size), repeat=group_size):
        actions = np.array(group)
        total += probs[actions].prod() * reinforce_gradient(logits, actions, advantage_fn(rewards[actions]))
    return total


@pytest.mark.parametrize("group_size", [2, 3, 4])
def test_group_mean_baseline_shrinks_the_gradient_by_g_minus_one_over_g(group_size):
    # R_i - mean(R) = (G-1)/G · (R_i - b_i^LOO), and the leave-one-out baseline is independent of sample i.
    probs = np.array([0.4, 0.1, 0.3, 0.2])
    true = expected_policy_gradient(np.log(probs), CHAPTER_R)
    centered = exact_group_expectation(probs, CHAPTER_R, group_size, centered_rewards)
    np.testing.assert_allclose(centered, (group_size - 1) / group_size * true, atol=1e-12)


@pytest.mark.parametrize("group_size", [2, 3, 4])
def test_leave_one_out_baseline_is_exactly_unbiased(group_size):
    probs = np.array([0.4, 0.1, 0.3, 0.2])
    true = expected_policy_gradient(np.log(probs), CHAPTER_R)
    np.testing.assert_allclose(exact_group_expectation(probs, CHAPTER_R, group_size, rloo_advantages), true, atol=1e-12)


# --- bad input -------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: score(np.zeros((2, 4))), ValueError, "logits"),
        (lambda: score(np.zeros((1, 4))), ValueError, "logits"),
        (lambda: score([0.0, np.nan]), ValueError, "logits"),
        (lambda: score("abc"), TypeError, "logits"),
        (lambda: score([]), ValueError, "logits"),
        (lambda: reinforce_gradient(np.zeros((2, 4)), [0], [1.0]), ValueError, "logits"),
        (lambda: reinforce_gradient(np.zeros(4), np.array([0.0, 1.0]), [1.0, 2.0]), TypeError, "actions"),
        (lambda: reinforce_gradient(np.zeros(4), np.array([0, 4]), [1.0, 2.0]), ValueError, "actions"),
        (lambda: reinforce_gradient(np.zeros(4), np.array([-1]), [1.0]), ValueError, "actions"),
        (lambda: reinforce_gradient(np.zeros(4), np.array([], dtype=int), []), TypeError, "actions"),
        (lambda: reinforce_gradient(np.zeros(4), np.array([0, 1]), [1.0]), ValueError, "advantages"),
        (lambda: reinforce_gradient(np.zeros(4), np.array([0, 1]), [1.0, np.inf]), ValueError, "advantages"),
        (lambda: reinforce_gradient(np.zeros(4), np.array([0, 1]), [[1.0, 2.0]]), ValueError, "advantages"),
        (lambda: expected_policy_gradient(np.zeros(4), CHAPTER_R[:3]), ValueError, "rewards"),
        (lambda: expected_policy_gradient(np.zeros(4), [0.1, 0.2, np.nan, 0.4]), ValueError, "rewards"),
        (lambda: expected_policy_gradient(np.zeros((1, 4)), CHAPTER_R), ValueError, "logits"),
        (lambda: expected_policy_gradient(np.zeros(4), CHAPTER_R, np.nan), ValueError, "baseline"),
        (lambda: expected_policy_gradient(np.zeros(4), CHAPTER_R, "0.4"), TypeError, "baseline"),
        (lambda: expected_policy_gradient(np.zeros(4), CHAPTER_R, [0.1, 0.2]), ValueError, "baseline"),
    ],
)
def test_bad_input_raises_with_the_argument_name(call, error, match):
    with pytest.raises(error, match=match):
        call()
