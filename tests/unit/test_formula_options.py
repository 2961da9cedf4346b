"""The formula options of issue 13: k3·ratio, k3+, two-sided clipping (δ) and the sequence ratio.

Expected gradients are checked by exact enumeration over a categorical policy
(every action weighted by its probability) and once by Monte Carlo; the token
loss's options are checked against a line-by-line transcription of TRL 1.16.0's
``_compute_loss`` (token/sequence level, ``use_bias_correction_kl``, ``delta``).
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_core.clipping import clip_masks, clipped_surrogate, importance_ratio, sequence_importance_ratio
from grpo_core.kl import kl_k1, kl_k2, kl_k3, kl_k3_plus, kl_k3_ratio
from grpo_core.objective import KL_ESTIMATORS, grpo_objective
from grpo_core.token_loss import grpo_token_loss

logits_of = st.integers(2, 6).flatmap(lambda k: st.tuples(*(arrays(np.float64, k, elements=st.floats(-3, 3)),) * 3))


def policy(logits):
    theta = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    return theta, torch.log_softmax(theta, -1)


def grad(value, theta):
    (g,) = torch.autograd.grad(value, theta, retain_graph=True)
    return g


def exact_kl(p_log, q_log):
    """KL(p‖q) over the actions, from log-probabilities."""
    return (p_log.exp() * (p_log - q_log)).sum()


# -- expected gradients, by exact enumeration ------------------------------------------------------


@settings(max_examples=40)
@given(logits_of)
def test_expected_gradients_of_the_estimators(logits):
    theta_logits, ref_logits, _ = logits
    theta, logp = policy(theta_logits)
    ref = torch.log_softmax(torch.tensor(ref_logits), -1)
    weights = logp.exp().detach()  # a ~ π_θ, the distribution held fixed: E[∇ estimator(a)]

    def expected(estimator):
        return grad((weights * estimator(logp, ref)).sum(), theta)

    forward_kl = grad(exact_kl(logp, ref), theta)
    reverse_kl = grad(exact_kl(ref, logp), theta)
    torch.testing.assert_close(expected(kl_k1), torch.zeros_like(theta), atol=1e-12, rtol=0)
    torch.testing.assert_close(expected(kl_k2), forward_kl, atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(expected(kl_k3), reverse_kl, atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(expected(kl_k3_plus), forward_kl, atol=1e-12, rtol=1e-10)


@settings(max_examples=40)
@given(logits_of)
def test_ratio_weighted_k3_sampled_from_the_old_policy_gives_the_forward_kl_gradient(logits):
    theta_logits, ref_logits, old_logits = logits
    theta, logp = policy(theta_logits)
    ref = torch.log_softmax(torch.tensor(ref_logits), -1)
    old = torch.log_softmax(torch.tensor(old_logits), -1)
    expected = grad((old.exp() * kl_k3_ratio(logp, ref, old)).sum(), theta)  # a ~ π_θ_old
    torch.testing.assert_close(expected, grad(exact_kl(logp, ref), theta), atol=1e-12, rtol=1e-10)


def test_forward_and_reverse_kl_gradients_differ():  # so the enumeration above tells the estimators apart
    theta, logp = policy([0.5, -0.3, 1.2, 0.0])
    ref = torch.log_softmax(torch.tensor([0.0, 0.4, -0.5, 0.3], dtype=torch.float64), -1)
    forward, reverse = grad(exact_kl(logp, ref), theta), grad(exact_kl(ref, logp), theta)
    assert (forward - reverse).abs().max() > 0.01


def test_ratio_weighted_k3_by_monte_carlo():
    generator = torch.Generator().manual_seed(0)
    theta, logp = policy([0.5, -0.3, 1.2, 0.0])
    ref = torch.log_softmax(torch.tensor([0.0, 0.4, -0.5, 0.3], dtype=torch.float64), -1)
    old = torch.log_softmax(torch.tensor([0.2, 0.1, 0.9, -0.2], dtype=torch.float64), -1)
    samples = torch.multinomial(old.exp(), 200_000, replacement=True, generator=generator)
    per_sample = kl_k3_ratio(logp[samples], ref[samples], old[samples])
    estimate = grad(per_sample.mean(), theta)
    # the standard error of each coordinate, from the per-action gradients
    per_action = torch.stack([grad(kl_k3_ratio(logp[a], ref[a], old[a]), theta) for a in range(4)])
    spread = (old.exp()[:, None] * (per_action - (old.exp()[:, None] * per_action).sum(0)) ** 2).sum(0).sqrt()
    exact = grad(exact_kl(logp, ref), theta)
    assert bool(((estimate - exact).abs() <= 5 * spread / 200_000**0.5).all()), (estimate, exact)
    wrong = grad((kl_k3(logp[samples], ref[samples])).mean(), theta)  # no ratio: a biased estimate
    assert not bool(((wrong - exact).abs() <= 5 * spread / 200_000**0.5).all())


# -- values and autograd ---------------------------------------------------------------------------

values = arrays(np.float64, st.integers(1, 6), elements=st.floats(-30, 0))


@given(values, values.map(lambda a: a[::-1].copy()))
def test_k3_plus_has_the_value_of_k3_and_the_gradient_of_k2(a, b):
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    assert np.array_equal(kl_k3_plus(a, b), kl_k3(a, b))  # NumPy: the value
    logp = torch.tensor(a, requires_grad=True)
    value = kl_k3_plus(logp, torch.tensor(b))
    assert torch.equal(value.detach(), kl_k3(torch.tensor(a), torch.tensor(b)))  # bit for bit
    inside = torch.tensor(np.abs(a - b) <= 20)
    torch.testing.assert_close(grad(value.sum(), logp), torch.where(inside, logp.detach() - torch.tensor(b), 0.0))


@given(values)
def test_k3_ratio_is_the_ratio_times_k3(a):
    b, c = a[::-1].copy() * 0.5, a * 0.9
    expected = importance_ratio(a, c) * kl_k3(a, b)
    np.testing.assert_array_equal(kl_k3_ratio(a, b, c), expected)


def test_gradcheck_of_the_new_functions():
    generator = torch.Generator().manual_seed(1)
    logp = (-torch.rand(3, 5, dtype=torch.float64, generator=generator)).requires_grad_()
    ref = -torch.rand(3, 5, dtype=torch.float64, generator=generator)
    old = -torch.rand(3, 5, dtype=torch.float64, generator=generator)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    adv = torch.tensor([0.7, -1.3, 0.4], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda x: kl_k3_ratio(x, ref, old), (logp,))
    assert torch.autograd.gradcheck(lambda x: sequence_importance_ratio(x, old, mask), (logp,))
    ratio = (1 + 0.5 * torch.rand(3, 5, dtype=torch.float64, generator=generator)).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda r: clipped_surrogate(r, adv[:, None].expand(3, 5), 0.2, delta=1.35), (ratio,)
    )
    for estimator in ("k3", "k3_ratio"):
        for level in ("token", "sequence"):
            assert torch.autograd.gradcheck(
                lambda x, estimator=estimator, level=level: grpo_token_loss(
                    x, old, ref, adv, mask, beta=0.3, kl_estimator=estimator, importance_sampling_level=level
                )[0],
                (logp,),
            )


# -- delta (two-sided clipping) --------------------------------------------------------------------


@given(
    arrays(np.float64, 8, elements=st.floats(0.01, 10)),
    arrays(np.float64, 8, elements=st.floats(-3, 3)),
    st.floats(0.0, 0.5),
    st.floats(0.01, 5),
)
def test_delta_caps_only_the_unclipped_branch_of_negative_advantages(ratio, adv, eps, excess):
    delta = 1 + eps + excess
    plain = clipped_surrogate(ratio, adv, eps)
    capped = clipped_surrogate(ratio, adv, eps, delta=delta)
    np.testing.assert_array_equal(
        capped, np.minimum(np.minimum(ratio, delta) * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)
    )
    untouched = (adv >= 0) | (ratio <= delta)
    np.testing.assert_array_equal(capped[untouched], plain[untouched])
    assert (capped[adv < 0] >= delta * adv[adv < 0]).all()  # bounded below, whatever the ratio
    low, high = clip_masks(ratio, adv, eps)  # the masks do not depend on δ
    np.testing.assert_array_equal(low | high, clip_masks(np.minimum(ratio, delta), adv, eps)[0] | high)


def test_delta_zeroes_the_gradient_beyond_the_cap():
    ratio = torch.tensor([3.0, 3.0, 1.1], dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([-1.0, 1.0, -1.0], dtype=torch.float64)
    clipped_surrogate(ratio, adv, 0.2, delta=2.0).sum().backward()
    assert ratio.grad.tolist() == [0.0, 0.0, -1.0]  # capped; clipped (Â > 0, r > 1 + ε); in the band


@pytest.mark.parametrize("delta", [1.2, 1.0, 0.5, -3.0])
def test_delta_must_exceed_the_upper_clip_bound(delta):
    with pytest.raises(ValueError, match="delta"):
        clipped_surrogate(np.ones(2), np.ones(2), 0.2, delta=delta)
    with pytest.raises(ValueError, match="delta"):
        grpo_objective(np.zeros(2), np.zeros(2), np.zeros(2), np.ones(2), 0.2, delta=delta)


@pytest.mark.parametrize("delta", ["2", True, complex(2, 0), float("nan"), float("inf")])
def test_delta_must_be_a_finite_real_number(delta):
    with pytest.raises((TypeError, ValueError), match="delta"):
        clipped_surrogate(np.ones(2), np.ones(2), 0.2, delta=delta)


# -- the sequence ratio ----------------------------------------------------------------------------


@settings(max_examples=40)
@given(st.integers(1, 4), st.integers(1, 6), st.data())
def test_sequence_ratio_is_the_geometric_mean_of_the_unmasked_token_ratios(batch, length, data):
    logps = torch.tensor(data.draw(arrays(np.float64, (batch, length), elements=st.floats(-5, 0))))
    old = torch.tensor(data.draw(arrays(np.float64, (batch, length), elements=st.floats(-5, 0))))
    mask = torch.tensor(data.draw(arrays(np.bool_, (batch, length))))
    ratio = sequence_importance_ratio(logps, old, mask)
    assert ratio.shape == (batch, 1)
    for i in range(batch):
        kept = mask[i]
        expected = torch.exp((logps[i][kept] - old[i][kept]).sum() / max(int(kept.sum()), 1))
        torch.testing.assert_close(ratio[i, 0], expected, rtol=1e-12, atol=0)
    garbage = torch.where(mask, logps, torch.tensor(float("nan")))
    assert torch.equal(sequence_importance_ratio(garbage, old, mask), ratio)


def test_sequence_ratio_rejects_bad_input_by_name():
    ok = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="mask"):
        sequence_importance_ratio(ok, ok, torch.full((2, 3), 2))
    with pytest.raises(ValueError, match="old_logps"):
        sequence_importance_ratio(ok, torch.zeros(2, 4), torch.ones(2, 3))
    with pytest.raises(TypeError, match="logps"):
        sequence_importance_ratio(np.zeros((2, 3)), ok, torch.ones(2, 3))


# -- the token loss against TRL: tests/unit/test_production_formulas.py calls TRL's own _compute_loss over every option
# (test_trl_compute_loss_equals_grpo_token_loss); no transcription of it is kept here.


def test_k3_plus_in_the_token_loss_has_the_k3_value_and_the_k2_gradient():
    generator = torch.Generator().manual_seed(3)
    old = -torch.rand(3, 4, dtype=torch.float64, generator=generator)
    ref = old + 0.3 * torch.randn(3, 4, dtype=torch.float64, generator=generator)
    adv = torch.tensor([1.0, -0.5, 0.2], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 0]])
    logps = old.clone().requires_grad_()
    plus, plus_metrics = grpo_token_loss(logps, old, ref, adv, mask, beta=0.5, kl_estimator="k3_plus")
    k3, k3_metrics = grpo_token_loss(logps, old, ref, adv, mask, beta=0.5)
    assert torch.equal(plus.detach(), k3.detach()) and plus_metrics == k3_metrics  # the same value and metrics
    beta0, _ = grpo_token_loss(logps, old, ref, adv, mask, beta=0.0)
    weights = mask.double() / mask.sum(-1, keepdim=True) / 3  # "grpo": 1 / (B |o_i|)
    k2_grad = 0.5 * weights * (logps.detach() - ref)  # β ∂k2/∂logp = β (logp - ref)
    (g_plus,) = torch.autograd.grad(plus, logps)
    (g_zero,) = torch.autograd.grad(beta0, logps)
    torch.testing.assert_close(g_plus - g_zero, k2_grad, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("estimator", KL_ESTIMATORS)
@pytest.mark.parametrize("delta", [None, 1.4])
def test_one_token_completions_give_minus_the_objective_for_every_option(estimator, delta):
    logp = np.array([-0.4, -1.3, -2.0, -0.9])
    old = np.array([-0.7, -1.0, -2.5, -0.2])
    ref = np.array([-0.5, -1.6, -1.9, -1.1])
    adv = np.array([1.2, -0.8, -1.5, 0.4])
    expected = -grpo_objective(logp, old, ref, adv, 0.2, 0.3, 0.1, kl_estimator=estimator, delta=delta)
    for level in ("token", "sequence"):
        loss, _ = grpo_token_loss(
            torch.tensor(logp[:, None]),
            torch.tensor(old[:, None]),
            torch.tensor(ref[:, None]),
            torch.tensor(adv),
            torch.ones(4, 1),
            eps_low=0.2,
            eps_high=0.3,
            beta=0.1,
            kl_estimator=estimator,
            delta=delta,
            importance_sampling_level=level,
        )
        assert float(loss) == pytest.approx(expected, rel=1e-12)


def test_the_defaults_are_the_plain_k3_token_loss():
    generator = torch.Generator().manual_seed(5)
    old = -torch.rand(4, 6, generator=generator)
    logps, ref = old + 0.2 * torch.randn(4, 6, generator=generator), old + 0.2 * torch.randn(4, 6, generator=generator)
    adv, mask = torch.randn(4, generator=generator), torch.ones(4, 6, dtype=torch.bool)
    default = grpo_token_loss(logps, old, ref, adv, mask)
    explicit = grpo_token_loss(
        logps, old, ref, adv, mask, kl_estimator="k3", delta=None, importance_sampling_level="token"
    )
    assert torch.equal(default[0], explicit[0]) and default[1] == explicit[1]
    ratio = torch.exp(logps - old)
    k3 = torch.expm1(ref - logps) - (ref - logps)
    per_token = -torch.min(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None]) + 0.04 * k3
    assert float(default[0]) == pytest.approx(float(per_token.mean(-1).mean()), rel=1e-6)


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("kl_estimator", "k2", ValueError),
        ("kl_estimator", None, ValueError),
        ("importance_sampling_level", "sequences", ValueError),
        ("importance_sampling_level", 1, ValueError),
        ("delta", 1.1, ValueError),
        ("delta", "3", TypeError),
    ],
)
def test_bad_options_are_named(option, value, error):
    ones = torch.zeros(2, 3)
    with pytest.raises(error, match=option):
        grpo_token_loss(ones, ones, ones, torch.ones(2), torch.ones(2, 3), **{option: value})
