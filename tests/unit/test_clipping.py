"""Eqs. (6)-(7): the importance ratio, the clipped surrogate and its clip fractions."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grpo_core import clip_fractions, clip_masks, clipped_surrogate, group_advantages, importance_ratio

ratios = st.floats(0.01, 5.0)
advantages = st.floats(-5.0, 5.0).filter(lambda a: abs(a) > 1e-6)
eps = st.floats(0.01, 0.5)


def test_worked_example_clipped_term():
    a1 = group_advantages([0.9, 0.4, 0.9, 0.2], eps=0.0)[0]
    term = clipped_surrogate(np.array([1.31]), np.array([a1]), eps_low=0.2)
    assert term[0] == pytest.approx(1.2 * a1, rel=1e-12)  # min(1.31 Â, 1.2 Â) takes the clipped branch
    assert term[0] == pytest.approx(1.16799, abs=1e-5)
    low, high = clip_masks(np.array([1.31]), np.array([a1]), 0.2)
    assert not low[0] and high[0]


def test_importance_ratio_from_logprobs():
    ratio = importance_ratio(np.log([0.3, 0.5]), np.log([0.2, 0.5]))
    np.testing.assert_allclose(ratio, [1.5, 1.0])


def test_clip_fractions_split_like_trainers():
    ratio = np.array([0.5, 0.5, 1.5, 1.5, 1.0, 1.25])
    adv = np.array([-1.0, 1.0, 1.0, -1.0, 1.0, 1.0])
    # low: r < 0.8 with Â < 0 -> index 0; high: r > 1.2 with Â > 0 -> indices 2 and 5
    assert clip_fractions(ratio, adv, 0.2) == {"low": 1 / 6, "high": 2 / 6, "region": 3 / 6}
    # DAPO clip-higher: eps_high = 0.28 frees index 5 (1.25 < 1.28)
    assert clip_fractions(ratio, adv, 0.2, eps_high=0.28) == {"low": 1 / 6, "high": 1 / 6, "region": 2 / 6}


@given(ratios, advantages, eps)
def test_surrogate_is_pessimistic_bound(r, a, e):
    term = clipped_surrogate(np.array([r]), np.array([a]), e)[0]
    assert term <= r * a + 1e-12
    assert term <= np.clip(r, 1 - e, 1 + e) * a + 1e-12


@given(ratios, advantages, eps, st.floats(0.0, 0.5))
def test_gradient_is_zero_exactly_where_clip_is_active(r, a, e_low, extra):
    e_high = e_low + extra
    ratio = torch.tensor([r], dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([a], dtype=torch.float64)
    clipped_surrogate(ratio, adv, e_low, e_high).sum().backward()
    low, high = clip_masks(np.array([r]), np.array([a]), e_low, e_high)
    if low[0] or high[0]:
        assert ratio.grad.item() == 0.0
    elif abs(r - (1 + e_high)) > 1e-9 and abs(r - (1 - e_low)) > 1e-9:
        assert ratio.grad.item() == pytest.approx(a)


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=16))
def test_numpy_and_torch_agree(values):
    logp = np.array(values) - 3.5
    old = logp[::-1].copy()
    adv = np.linspace(-1, 1, logp.size)
    np_term = clipped_surrogate(importance_ratio(logp, old), adv, 0.2, 0.3)
    torch_term = clipped_surrogate(importance_ratio(torch.tensor(logp), torch.tensor(old)), torch.tensor(adv), 0.2, 0.3)
    np.testing.assert_allclose(torch_term.numpy(), np_term, rtol=1e-12)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: importance_ratio([0.0, 0.0], [0.0]), ValueError),
        (lambda: importance_ratio([np.nan], [0.0]), ValueError),
        (lambda: clipped_surrogate([1.0], [1.0], eps_low=-0.1), ValueError),
        (lambda: clipped_surrogate([1.0], [1.0], eps_low="0.2"), TypeError),
        (lambda: clipped_surrogate([1.0], [1.0], eps_high=np.inf), ValueError),
        (lambda: clipped_surrogate([1.0, 2.0], [1.0], 0.2), ValueError),
        (lambda: clip_fractions([np.inf], [1.0]), ValueError),
    ],
)
def test_bad_input(call, error):
    with pytest.raises(error):
        call()
