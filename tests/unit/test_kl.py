"""Eq. (8): k1, k2, k3 estimators and the exact categorical KL."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_core import categorical_kl, entropy, kl_k1, kl_k2, kl_k3

logps = st.floats(-20, 0)


def test_k3_golden():
    # π_θ(o) = 0.5, π_ref(o) = 0.25: ρ = 0.5, k3 = 0.5 - log 0.5 - 1
    assert kl_k3(np.log(0.5), np.log(0.25)) == pytest.approx(0.5 - math.log(0.5) - 1)
    assert kl_k1(np.log(0.5), np.log(0.25)) == pytest.approx(math.log(2))
    assert kl_k2(np.log(0.5), np.log(0.25)) == pytest.approx(0.5 * math.log(2) ** 2)


def test_k3_direction_is_ref_over_policy():
    # swapping the arguments inverts ρ and changes the value: the order matters
    assert kl_k3(np.log(0.5), np.log(0.25)) != pytest.approx(kl_k3(np.log(0.25), np.log(0.5)))


def test_categorical_kl_golden():
    p, q = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert categorical_kl(p, q) == pytest.approx(expected)
    assert categorical_kl(p, p) == 0.0
    assert entropy(np.full(4, 0.25)) == pytest.approx(math.log(4))


@given(logps, logps)
def test_k3_nonnegative_and_zero_only_on_agreement(logp, ref_logp):
    value = kl_k3(np.array(logp), np.array(ref_logp))
    assert value >= 0
    if logp == ref_logp:
        assert value == 0


@given(logps, logps)
def test_k2_nonnegative(logp, ref_logp):
    assert kl_k2(np.array(logp), np.array(ref_logp)) >= 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_k1_and_k3_are_unbiased_k2_is_not(seed):
    rng = np.random.default_rng(seed)
    policy = rng.dirichlet(np.ones(5))
    ref = rng.dirichlet(np.ones(5))
    exact = categorical_kl(policy, ref)
    samples = rng.choice(5, size=400_000, p=policy)  # samples from π_θ, as eq. (8) assumes
    logp, ref_logp = np.log(policy[samples]), np.log(ref[samples])
    for estimator in (kl_k1, kl_k3):
        values = estimator(logp, ref_logp)
        standard_error = values.std() / math.sqrt(values.size)
        assert abs(values.mean() - exact) < 4 * standard_error, estimator.__name__
    k2 = kl_k2(logp, ref_logp)
    assert abs(k2.mean() - exact) > 4 * k2.std() / math.sqrt(k2.size)


@given(st.lists(st.floats(0.01, 1), min_size=2, max_size=8), st.lists(st.floats(0.01, 1), min_size=2, max_size=8))
def test_categorical_kl_nonnegative(a, b):
    size = min(len(a), len(b))
    p = np.array(a[:size]) / sum(a[:size])
    q = np.array(b[:size]) / sum(b[:size])
    assert categorical_kl(p, q) >= 0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: kl_k3([0.0, 0.0], [0.0]), ValueError),
        (lambda: kl_k3([np.nan], [0.0]), ValueError),
        (lambda: kl_k1(None, [0.0]), TypeError),
        (lambda: categorical_kl([0.5, 0.6], [0.5, 0.5]), ValueError),
        (lambda: categorical_kl([0.5, 0.5], [1.0, 0.0]), ValueError),  # issue 14: p may hold an exact 0
        (lambda: categorical_kl([1.5, -0.5], [0.5, 0.5]), ValueError),
        (lambda: categorical_kl([0.5, 0.5], [0.2, 0.3, 0.5]), ValueError),
        (lambda: entropy([[[1.0]]]), ValueError),
    ],
)
def test_bad_input(call, error):
    with pytest.raises(error):
        call()
