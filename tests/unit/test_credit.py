"""§2's credit-assignment cost (grpo_core.course.credit), against brute force over every setting a user can reach."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core.course.credit import explained_variance, prefix_values, resampled_baseline_steps


@st.composite
def settings_(draw, max_length=10):
    length = draw(st.integers(min_value=1, max_value=max_length))
    threshold = draw(st.integers(min_value=1, max_value=length))
    p = draw(st.floats(min_value=0.05, max_value=0.95))
    return length, threshold, p


@settings(max_examples=60, deadline=None)
@given(settings_(max_length=8))
def test_prefix_values_are_the_conditional_probabilities_by_enumeration(setting):
    length, threshold, p = setting
    values = prefix_values(length, threshold, p)
    for t in range(length + 1):
        for k in range(t + 1):
            rest = length - t
            exact = sum(
                p ** sum(tail) * (1 - p) ** (rest - sum(tail))
                for tail in itertools.product((0, 1), repeat=rest)
                if k + sum(tail) >= threshold
            )
            assert values[t, k] == pytest.approx(exact, abs=1e-12)
        assert np.isnan(values[t, t + 1 :]).all()


@settings(max_examples=100, deadline=None)
@given(settings_(max_length=64))
def test_the_prefix_explains_nothing_at_the_prompt_everything_at_the_end_and_more_each_token(setting):
    length, threshold, p = setting
    shares = explained_variance(length, threshold, p)
    assert shares[0] == pytest.approx(0, abs=1e-9) and shares[-1] == pytest.approx(1, abs=1e-9)
    assert (np.diff(shares) >= -1e-9).all()


def test_explained_variance_matches_a_seeded_monte_carlo():
    length, threshold, p = 16, 9, 0.5
    rng = np.random.default_rng(0)
    tokens = rng.random((200_000, length)) < p
    reward = tokens.sum(axis=1) >= threshold
    values = prefix_values(length, threshold, p)
    for t in (0, 4, 8, 12, 16):
        predicted = values[t, tokens[:, :t].sum(axis=1)]
        share = np.var(predicted) / np.var(reward)
        assert share == pytest.approx(explained_variance(length, threshold, p)[t], abs=0.01)


@pytest.mark.parametrize(("horizon", "group_size"), [(1, 2), (10, 8), (1000, 8), (3, 64)])
def test_resampled_baseline_steps_sum_the_remaining_steps(horizon, group_size):
    assert resampled_baseline_steps(horizon, group_size) == group_size * sum(horizon - t for t in range(horizon))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: prefix_values(0, 0), ValueError, "length"),
        (lambda: prefix_values(4, 5), ValueError, "threshold"),
        (lambda: prefix_values(4, 2, 1.5), ValueError, "p"),
        (lambda: prefix_values(4.0, 2), TypeError, "length"),
        (lambda: explained_variance(4, 0), ValueError, "constant"),
        (lambda: explained_variance(4, 2, 1.0), ValueError, "constant"),
        (lambda: resampled_baseline_steps(10, 1), ValueError, "group_size"),
        (lambda: resampled_baseline_steps(0, 8), ValueError, "horizon"),
    ],
)
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
