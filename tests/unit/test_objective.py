"""Eqs. (7) and (9) for one-action-per-sample data."""

import numpy as np
import pytest
import torch

from grpo_core import clip_objective, clipped_surrogate, grpo_objective, kl_k3


def test_objective_golden():
    logp = np.log([0.4, 0.2, 0.4])
    old = np.log([0.25, 0.25, 0.25])
    ref = np.log([0.25, 0.25, 0.25])
    adv = np.array([1.0, -1.0, 1.0])
    # ratios 1.6, 0.8, 1.6 -> min terms 1.2, -0.8, 1.2 (ε = 0.2)
    assert clip_objective(logp, old, adv) == pytest.approx((1.2 - 0.8 + 1.2) / 3)
    k3 = [0.625 - np.log(0.625) - 1, 1.25 - np.log(1.25) - 1, 0.625 - np.log(0.625) - 1]
    assert grpo_objective(logp, old, ref, adv, beta=0.1) == pytest.approx((1.2 - 0.8 + 1.2) / 3 - 0.1 * np.mean(k3))


def test_objective_is_surrogate_minus_beta_k3():
    rng = np.random.default_rng(0)
    logp, old, ref = (np.log(rng.dirichlet(np.ones(6))) for _ in range(3))
    adv = rng.normal(size=6)
    expected = clipped_surrogate(np.exp(logp - old), adv).mean() - 0.3 * kl_k3(logp, ref).mean()
    assert grpo_objective(logp, old, ref, adv, beta=0.3) == pytest.approx(expected)


def test_torch_path_is_differentiable_and_equal():
    logp = np.log([0.4, 0.2, 0.4])
    args = (np.log([0.3, 0.3, 0.4]), np.log([0.25, 0.5, 0.25]), np.array([1.0, -1.0, 0.5]))
    value = grpo_objective(logp, *args)
    logp_t = torch.tensor(logp, requires_grad=True)
    value_t = grpo_objective(logp_t, *(torch.tensor(a) for a in args))
    value_t.backward()
    assert value_t.item() == pytest.approx(value)
    assert torch.isfinite(logp_t.grad).all()


def test_bad_beta():
    with pytest.raises(ValueError, match="beta"):
        grpo_objective([0.0], [0.0], [0.0], [1.0], beta=-1.0)
