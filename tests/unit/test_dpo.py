"""§8, DPO on the bandit: the loss, its hand gradient (checked by autograd), the pair data, the optimum."""

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core import GRPOConfig, categorical_kl
from grpo_core.bandit.dpo import (
    BanditDPO,
    DPOConfig,
    DPOStep,
    dpo_gradient,
    dpo_loss,
    dpo_margins,
    implicit_rewards,
    kl_regularized_optimum,
    preference_pairs,
    preference_probability,
)

TABLE = np.array([0.2, 0.9, 0.4, 0.1])
logits_4 = arrays(float, 4, elements=st.floats(-4, 4))
pairs_4 = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 3)).filter(lambda p: p[0] != p[1]), min_size=1, max_size=10
)


def torch_dpo_loss(theta, ref_logits, pairs, beta):
    """The DPO loss of Rafailov et al. (2023), eq. (7), written with torch primitives."""
    log_ratio = torch.log_softmax(theta, 0) - torch.log_softmax(torch.as_tensor(ref_logits), 0)
    pairs = torch.as_tensor(np.asarray(pairs))
    margins = beta * (log_ratio[pairs[:, 0]] - log_ratio[pairs[:, 1]])
    return -torch.nn.functional.logsigmoid(margins).mean()


def test_preference_probability_golden():
    assert preference_probability(0.9, 0.4, temperature=0.1) == pytest.approx(1 / (1 + math.exp(-5)), abs=1e-15)
    assert preference_probability(0.9, 0.4, temperature=0.1) == pytest.approx(0.9933071, abs=1e-7)
    np.testing.assert_array_equal(preference_probability([0.9, 0.1, 0.4], [0.4, 0.4, 0.4]), [1.0, 0.0, 0.5])


def test_loss_and_gradient_golden():
    # at θ = θ_ref every margin is 0: loss ln 2, gradient -β/2 (e_w - e_l)
    pairs = np.array([[1, 2]])
    assert dpo_loss(np.zeros(4), np.zeros(4), pairs, beta=0.5) == pytest.approx(math.log(2), abs=1e-15)
    np.testing.assert_allclose(dpo_gradient(np.zeros(4), np.zeros(4), pairs, beta=0.5), [0, -0.25, 0.25, 0])
    # π = [1/2, 1/4, 1/8, 1/8] vs uniform, pair (A ≻ B), β = 1: h = ln 2, loss = -ln σ(ln 2) = ln 1.5,
    # gradient = -σ(-ln 2) (e_A - e_B) = -(1/3) (e_A - e_B)
    logits = np.log([0.5, 0.25, 0.125, 0.125])
    assert dpo_margins(logits, np.zeros(4), np.array([[0, 1]]), 1.0)[0] == pytest.approx(math.log(2), abs=1e-15)
    assert dpo_loss(logits, np.zeros(4), np.array([[0, 1]]), 1.0) == pytest.approx(math.log(1.5), abs=1e-15)
    np.testing.assert_allclose(dpo_gradient(logits, np.zeros(4), np.array([[0, 1]]), 1.0), [-1 / 3, 1 / 3, 0, 0])


@settings(max_examples=80, deadline=None)
@given(logits_4, logits_4, pairs_4, st.floats(0.01, 5.0))
def test_hand_gradient_and_loss_match_torch_autograd(logits, ref_logits, pairs, beta):
    theta = torch.tensor(logits, requires_grad=True)
    loss = torch_dpo_loss(theta, ref_logits, pairs, beta)
    loss.backward()
    assert dpo_loss(logits, ref_logits, pairs, beta) == pytest.approx(loss.item(), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(dpo_gradient(logits, ref_logits, pairs, beta), theta.grad.numpy(), atol=1e-12)


def test_loss_is_stable_for_huge_margins():
    logits = np.array([60.0, -60.0, 0.0, 0.0])
    assert dpo_loss(logits, np.zeros(4), np.array([[1, 0]]), beta=10.0) == pytest.approx(1200.0)
    assert dpo_loss(logits, np.zeros(4), np.array([[0, 1]]), beta=10.0) == 0.0
    assert np.all(np.isfinite(dpo_gradient(logits, np.zeros(4), np.array([[1, 0], [0, 1]]), beta=10.0)))


def test_implicit_rewards_and_optimum_golden():
    np.testing.assert_allclose(
        implicit_rewards(np.log([0.5, 0.25, 0.25]), np.zeros(3), 0.1), 0.1 * np.log([1.5, 0.75, 0.75])
    )
    # two arms, uniform reference, r = [1, 0], β = 1: π* = [e, 1] / (e + 1)
    np.testing.assert_allclose(kl_regularized_optimum([0.5, 0.5], [1.0, 0.0], 1.0), [0.7310586, 0.2689414], atol=1e-7)


@given(arrays(float, 4, elements=st.floats(-3, 3)), st.floats(0.05, 2.0))
def test_optimum_maximises_the_kl_regularised_reward(perturbation, beta):
    ref = np.array([0.1, 0.2, 0.3, 0.4])
    best = kl_regularized_optimum(ref, TABLE, beta)

    def value(p):
        return p @ TABLE - beta * categorical_kl(p, ref)

    other = best * np.exp(perturbation)
    other /= other.sum()
    assert value(other) <= value(best) + 1e-12


def expected_dpo_gradient(logits, ref, beta, temperature):
    """E over the population of pairs: drawn from π_ref, labelled by Bradley–Terry at τ."""
    expected = np.zeros(4)
    for a, b in itertools.permutations(range(4), 2):
        drawn = ref[a] * ref[b] / (1 - ref[a])  # a first, then b, without replacement
        prefer = preference_probability(TABLE[a], TABLE[b], temperature)
        expected += drawn * (
            prefer * dpo_gradient(logits, np.log(ref), np.array([[a, b]]), beta)
            + (1 - prefer) * dpo_gradient(logits, np.log(ref), np.array([[b, a]]), beta)
        )
    return expected


@pytest.mark.parametrize(("beta", "temperature"), [(0.5, 0.4), (0.1, 0.2), (1.0, 1.0)])
def test_population_optimum_is_the_kl_regularised_policy_with_beta_times_tau(beta, temperature):
    ref = np.array([0.4, 0.1, 0.3, 0.2])
    target = kl_regularized_optimum(ref, TABLE, beta * temperature)
    np.testing.assert_allclose(expected_dpo_gradient(np.log(target), ref, beta, temperature), 0.0, atol=1e-12)
    # elsewhere (at π_ref, or at the optimum for another β) it does not vanish
    assert np.abs(expected_dpo_gradient(np.log(ref), ref, beta, temperature)).max() > 1e-3
    other = kl_regularized_optimum(ref, TABLE, 2 * beta * temperature)
    assert np.abs(expected_dpo_gradient(np.log(other), ref, beta, temperature)).max() > 1e-3


def test_preference_pairs_frequencies():
    ref = np.array([0.4, 0.1, 0.3, 0.2])
    pairs = preference_pairs(TABLE, ref, 60_000, np.random.default_rng(0), temperature=0.2)
    assert pairs.shape == (60_000, 2) and np.all(pairs[:, 0] != pairs[:, 1])
    # unordered pair {a, b} is drawn with probability π_a π_b (1/(1-π_a) + 1/(1-π_b))
    for a, b in itertools.combinations(range(4), 2):
        expected = ref[a] * ref[b] * (1 / (1 - ref[a]) + 1 / (1 - ref[b]))
        rows = ((pairs[:, 0] == a) & (pairs[:, 1] == b)) | ((pairs[:, 0] == b) & (pairs[:, 1] == a))
        assert rows.mean() == pytest.approx(expected, abs=0.01)
        # and the better arm wins with the Bradley–Terry probability
        hi, lo = (a, b) if TABLE[a] > TABLE[b] else (b, a)
        wins = ((pairs[:, 0] == hi) & (pairs[:, 1] == lo)).sum() / rows.sum()
        assert wins == pytest.approx(1 / (1 + math.exp(-(TABLE[hi] - TABLE[lo]) / 0.2)), abs=0.02)


def test_deterministic_labels_always_prefer_the_higher_reward():
    pairs = preference_pairs(TABLE, np.full(4, 0.25), 500, np.random.default_rng(1), temperature=0.0)
    assert np.all(TABLE[pairs[:, 0]] > TABLE[pairs[:, 1]])


def test_trainer_by_hand_and_the_loss_is_convex_in_theta():
    config = DPOConfig(num_pairs=16, temperature=0.2, beta=0.5, lr=2.0)
    run = BanditDPO(config=config, seed=4)
    expected_pairs = preference_pairs(TABLE, np.full(4, 0.25), 16, np.random.default_rng(4), temperature=0.2)
    np.testing.assert_array_equal(run.pairs, expected_pairs)
    assert run.samples_drawn == 32
    result = run.step()
    assert isinstance(result, DPOStep)
    assert result.loss == pytest.approx(math.log(2))
    np.testing.assert_allclose(run.logits, -2.0 * dpo_gradient(np.zeros(4), np.zeros(4), expected_pairs, 0.5))
    # log π(w) - log π(l) = θ_w - θ_l: the loss is a logistic regression in θ, so small full-batch
    # steps never increase it
    losses = [step.loss for step in run.run(30)]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(losses))
    assert run.samples_drawn == 32  # no sampling during training


def test_minibatches_are_seeded():
    config = DPOConfig(num_pairs=32, batch_size=4, lr=3.0)
    first, second = BanditDPO(config=config, seed=2), BanditDPO(config=config, seed=2)
    first.run(5)
    second.run(5)
    np.testing.assert_array_equal(first.logits, second.logits)
    assert all(step.batch.shape == (4,) for step in first.history)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"num_pairs": 0}, ValueError),
        ({"temperature": -0.1}, ValueError),
        ({"beta": 0.0}, ValueError),
        ({"lr": -1.0}, ValueError),
        ({"batch_size": 0}, ValueError),
        ({"batch_size": 2.0}, TypeError),
    ],
)
def test_bad_config(kwargs, error):
    with pytest.raises(error):
        DPOConfig(**kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match="must differ"):
        dpo_loss(np.zeros(4), np.zeros(4), np.array([[1, 1]]), 0.1)
    with pytest.raises(TypeError, match=r"\(N, 2\)"):
        dpo_loss(np.zeros(4), np.zeros(4), np.array([[1.0, 0.0]]), 0.1)
    with pytest.raises(TypeError, match=r"\(N, 2\)"):
        dpo_gradient(np.zeros(4), np.zeros(4), np.array([1, 0]), 0.1)
    with pytest.raises(ValueError, match="pairs must hold actions"):
        dpo_gradient(np.zeros(4), np.zeros(4), np.array([[0, 4]]), 0.1)
    with pytest.raises(ValueError, match="beta"):
        dpo_loss(np.zeros(4), np.zeros(4), np.array([[0, 1]]), 0.0)
    with pytest.raises(ValueError, match="ref_probs"):
        preference_pairs(TABLE, np.full(3, 1 / 3), 4, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        preference_pairs(TABLE, np.full(4, 0.25), 4, rng=0)
    with pytest.raises(ValueError, match="temperature"):
        preference_probability(1.0, 0.0, temperature=-1.0)
    with pytest.raises(TypeError, match="DPOConfig"):
        BanditDPO(config=GRPOConfig())
    with pytest.raises(ValueError, match="shape of ref_probs"):
        kl_regularized_optimum(np.full(4, 0.25), [1.0, 0.0], 0.1)
