"""§10: the token-level GRPO loss — bandit limit, clipping gradients, aggregation goldens, metrics, bad input."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core.objective import grpo_objective
from grpo_core.token_loss import LOSS_TYPES, grpo_token_loss

log_probs = st.floats(-4.0, -0.01)
advantage = st.floats(-3.0, 3.0)


def t(values, dtype=torch.float64):
    return torch.tensor(values, dtype=dtype)


def two_completions():
    """The golden of the brief: lengths 2 and 4, Â = +1 and -1, every ratio 1, β = 0."""
    logps = t([[-1.0, -1.0, 0.0, 0.0], [-1.0, -1.0, -1.0, -1.0]])
    mask = t([[1, 1, 0, 0], [1, 1, 1, 1]])
    return logps, logps.clone(), t([1.0, -1.0]), mask


# -- the bandit limit: one token per completion --------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 8).flatmap(
        lambda n: st.tuples(
            *(st.lists(s, min_size=n, max_size=n) for s in (log_probs, log_probs, log_probs, advantage))
        )
    ),
    st.floats(0.05, 0.4),
    st.floats(0.0, 0.3),
    st.floats(0.0, 0.2),
    st.sampled_from(LOSS_TYPES),
    st.integers(1, 3),
)
def test_one_token_completions_give_minus_the_bandit_objective(columns, eps_low, extra, beta, loss_type, width):
    logp, old, ref, adv = map(np.array, columns)
    expected = -grpo_objective(logp, old, ref, adv, eps_low, eps_low + extra, beta)  # NumPy, eq. (9)

    def padded(values):  # the single token in column 0, arbitrary padding after it
        return torch.cat([t(values)[:, None], torch.full((len(values), width - 1), -7.0, dtype=torch.float64)], 1)

    mask = torch.zeros(len(logp), width, dtype=torch.bool)
    mask[:, 0] = True
    loss, _ = grpo_token_loss(
        padded(logp),
        padded(old),
        padded(ref),
        t(adv),
        mask,
        eps_low=eps_low,
        eps_high=eps_low + extra,
        beta=beta,
        loss_type=loss_type,
        max_completion_length=1,
    )
    assert float(loss) == pytest.approx(expected, rel=1e-10, abs=1e-12)


# -- aggregation goldens ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loss_type", "expected"),
    [("grpo", 0.0), ("bnpo", 1 / 3), ("dapo", 1 / 3), ("dr_grpo", 1 / 4)],
)
def test_loss_type_goldens(loss_type, expected):
    # per-token terms: -1 on the 2 tokens of completion 1, +1 on the 4 tokens of completion 2
    # grpo (-1 + 1)/2 = 0; bnpo/dapo (-2 + 4)/6 = 1/3; dr_grpo (-2 + 4)/(2 × 4) = 1/4
    logps, old, adv, mask = two_completions()
    loss, metrics = grpo_token_loss(logps, old, None, adv, mask, beta=0.0, loss_type=loss_type, max_completion_length=4)
    assert float(loss) == pytest.approx(expected, abs=1e-15)
    assert metrics["loss"] == pytest.approx(expected, abs=1e-15)
    assert "kl" not in metrics


def test_dapo_divides_by_the_global_token_count():
    logps, old, adv, mask = two_completions()
    loss, _ = grpo_token_loss(logps, old, None, adv, mask, beta=0.0, loss_type="dapo", num_items_in_batch=12)
    assert float(loss) == pytest.approx(2 / 12)  # token sum 2 over the 12 tokens of all processes


def test_dr_grpo_needs_its_configured_length():
    """No default: the padded width T is the batch's longest completion, not the configured L_max (notebooks 09, 10)."""
    logps, old, adv, mask = two_completions()
    with pytest.raises(ValueError, match="max_completion_length is required"):
        grpo_token_loss(logps, old, None, adv, mask, beta=0.0, loss_type="dr_grpo")
    loss, _ = grpo_token_loss(logps, old, None, adv, mask, beta=0.0, loss_type="dr_grpo", max_completion_length=8)
    assert float(loss) == pytest.approx(2 / (2 * 8))


def test_clipped_and_kl_golden_by_hand():
    # one completion, two tokens, Â = +1, ratios e^0.1 (inside the band) and e^0.3 (clipped to 1.2)
    # and log π_ref − log π_θ = −0.2 on both tokens: k3 = e^-0.2 + 0.2 − 1
    logps = t([[-1.0, -1.0]])
    old = t([[-1.1, -1.3]])
    ref = t([[-1.2, -1.2]])
    k3 = math.exp(-0.2) + 0.2 - 1
    expected = -(math.exp(0.1) + 1.2) / 2 + 0.1 * k3
    loss, metrics = grpo_token_loss(logps, old, ref, t([1.0]), t([[1, 1]]), eps_low=0.2, beta=0.1)
    assert float(loss) == pytest.approx(expected, rel=1e-12)
    assert metrics["kl"] == pytest.approx(k3, rel=1e-12)
    assert metrics["clip_ratio/high_mean"] == 0.5


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.data())
def test_all_loss_types_agree_when_lengths_are_equal(batch, length, data):
    values = data.draw(st.lists(log_probs, min_size=3 * batch * length, max_size=3 * batch * length))
    logps, old, ref = t(values).reshape(3, batch, length)
    adv = t(data.draw(st.lists(advantage, min_size=batch, max_size=batch)))
    mask = torch.ones(batch, length)
    losses = [
        float(grpo_token_loss(logps, old, ref, adv, mask, beta=0.05, loss_type=kind, max_completion_length=length)[0])
        for kind in LOSS_TYPES
    ]
    assert losses == pytest.approx([losses[0]] * 4, rel=1e-12, abs=1e-14)


def test_mask_dtypes_agree():
    logps, old, adv, mask = two_completions()
    losses = {
        str(m.dtype): float(grpo_token_loss(logps, old, None, adv, m, beta=0.0, loss_type="bnpo")[0])
        for m in (mask, mask.bool(), mask.int(), mask.float())
    }
    assert list(losses.values()) == pytest.approx([1 / 3] * 4)
    assert len(losses) == 4


# -- gradients ----------------------------------------------------------------------------------


def test_gradient_is_zero_on_clipped_tokens_and_minus_a_r_w_elsewhere():
    # one completion of 4 tokens, so every token weighs w = 1/4 under "grpo"
    # ratios 1.5, 0.5 with Â = +1: 1.5 is clipped (high), 0.5 is not; second row Â = −1: 0.5 clipped (low)
    log_ratio = torch.log(t([[1.5, 0.5, 1.1, 0.9], [0.5, 1.5, 1.1, 0.9]]))
    old = t([[-1.0] * 4, [-1.0] * 4])
    logps = (old + log_ratio).requires_grad_()
    adv = t([1.0, -1.0])
    loss, metrics = grpo_token_loss(logps, old, None, adv, torch.ones(2, 4), beta=0.0, eps_low=0.2)
    loss.backward()
    ratio = log_ratio.exp()
    w = 1 / (2 * 4)  # "grpo": 1/|o_i| within a completion, then 1/B over completions
    expected = -adv[:, None] * ratio * w
    expected[0, 0] = 0.0  # r = 1.5 > 1.2 with Â > 0
    expected[1, 0] = 0.0  # r = 0.5 < 0.8 with Â < 0
    torch.testing.assert_close(logps.grad, expected, rtol=1e-12, atol=1e-15)
    assert metrics["clip_ratio/high_mean"] == 1 / 8
    assert metrics["clip_ratio/low_mean"] == 1 / 8


@settings(max_examples=50, deadline=None)
@given(st.floats(-1.5, 1.5), advantage.filter(lambda a: abs(a) > 1e-3), st.floats(0.01, 0.5), st.floats(-1.0, 1.0))
def test_clipped_tokens_keep_only_the_kl_gradient(log_ratio, adv, beta, ref_gap):
    old = t([[-1.0]])
    logps = (old + log_ratio).requires_grad_()
    ref = old + log_ratio + ref_gap  # log π_ref − log π_θ = ref_gap
    loss, metrics = grpo_token_loss(logps, old, ref, t([adv]), t([[1.0]]), beta=beta, eps_low=0.2)
    loss.backward()
    kl_grad = beta * (1 - math.exp(ref_gap))  # ∂k3/∂log π_θ = 1 − ρ with ρ = π_ref/π_θ
    r = math.exp(log_ratio)
    if metrics["clip_ratio/region_mean"] == 1.0:
        assert float(logps.grad) == pytest.approx(kl_grad, rel=1e-9, abs=1e-12)
    elif abs(r - 1.2) > 1e-9 and abs(r - 0.8) > 1e-9:
        assert float(logps.grad) == pytest.approx(-adv * r + kl_grad, rel=1e-9, abs=1e-12)


def test_no_gradient_reaches_old_or_reference_logps():
    logps, old, adv, mask = two_completions()
    logps = logps.clone().requires_grad_()
    old = old.clone().requires_grad_()
    ref = (old.detach() - 0.1).requires_grad_()
    loss, _ = grpo_token_loss(logps, old, ref, adv, mask, beta=0.1)
    loss.backward()
    assert old.grad is None and ref.grad is None
    assert logps.grad is not None


def test_length_weights_per_loss_type():
    # ∂loss/∂log π per token at ratio 1: −Â_i × (weight of a token of completion i)
    logps, old, adv, mask = two_completions()
    weights = {}
    for kind in LOSS_TYPES:
        x = logps.clone().requires_grad_()
        grpo_token_loss(x, old, None, adv, mask, beta=0.0, loss_type=kind, max_completion_length=4)[0].backward()
        weights[kind] = (-x.grad / adv[:, None])[:, 0].tolist()
    assert weights["grpo"] == pytest.approx([1 / (2 * 2), 1 / (2 * 4)])  # short completions weigh more per token
    assert weights["bnpo"] == pytest.approx([1 / 6, 1 / 6])
    assert weights["dapo"] == pytest.approx([1 / 6, 1 / 6])
    assert weights["dr_grpo"] == pytest.approx([1 / 8, 1 / 8])


# -- metrics --------------------------------------------------------------------------------------


def test_metrics_names_and_values_on_a_hand_built_batch():
    # 2 completions × 3 tokens; the padding token (ratio 5, far from ref) must be ignored
    ratio = t([[1.5, 1.0, 0.9], [0.5, 1.3, 5.0]])
    old = t([[-1.0, -2.0, -1.5], [-0.5, -1.0, -1.0]])
    logps = old + ratio.log()
    ref = logps.clone()
    ref[0, 1] = logps[0, 1] + math.log(2.0)  # ρ = 2: k3 = 2 − log 2 − 1
    ref[1, 2] = logps[1, 2] + 3.0  # padding
    mask = t([[1, 1, 1], [1, 1, 0]])
    _, metrics = grpo_token_loss(logps, old, ref, t([1.0, -1.0]), mask, eps_low=0.2, beta=0.0)
    assert set(metrics) == {"kl", "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "loss"}
    # 5 tokens: high-clipped (1.5, Â>0) once, low-clipped (0.5, Â<0) once; 1.3 with Â<0 is not clipped
    assert metrics["clip_ratio/high_mean"] == pytest.approx(1 / 5)
    assert metrics["clip_ratio/low_mean"] == pytest.approx(1 / 5)
    assert metrics["clip_ratio/region_mean"] == pytest.approx(2 / 5)
    assert metrics["kl"] == pytest.approx((2 - math.log(2) - 1) / 5)
    # loss ("grpo"): row 0 terms −min(rÂ, clip(r)Â) = −1.2, −1.0, −0.9; row 1: +0.8, +1.3
    assert metrics["loss"] == pytest.approx(((-1.2 - 1.0 - 0.9) / 3 + (0.8 + 1.3) / 2) / 2)


def test_eps_high_widens_the_band_above_only():
    logps, old = t([[0.0, 0.0]]), torch.log(t([[1 / 1.25, 1 / 0.75]]))  # ratios 1.25 and 0.75
    _, symmetric = grpo_token_loss(logps, old, None, t([1.0]), t([[1, 1]]), beta=0.0, eps_low=0.2)
    _, dapo = grpo_token_loss(logps, old, None, t([1.0]), t([[1, 1]]), beta=0.0, eps_low=0.2, eps_high=0.28)
    assert symmetric["clip_ratio/high_mean"] == 0.5 and dapo["clip_ratio/high_mean"] == 0.0


# -- bad input --------------------------------------------------------------------------------------


def call(**changes):
    logps, old, adv, mask = two_completions()
    kwargs = {"logps": logps, "old_logps": old, "ref_logps": old - 0.1, "advantages": adv, "mask": mask}
    kwargs.update(changes)
    options = {key: kwargs.pop(key) for key in list(kwargs) if key not in {"logps", "old_logps", "ref_logps"}}
    return grpo_token_loss(
        kwargs["logps"],
        kwargs["old_logps"],
        kwargs["ref_logps"],
        options.pop("advantages"),
        options.pop("mask"),
        **options,
    )


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"mask": t([[1, 1, 0, 0], [0, 0, 0, 0]])}, ValueError, "rows \\[1\\] are all zeros"),
        ({"mask": t([[1, 2, 0, 0], [1, 1, 1, 1]])}, ValueError, "only 0 and 1"),
        ({"mask": torch.ones(2, 3)}, ValueError, "mask must have the shape"),
        ({"old_logps": torch.zeros(2, 3, dtype=torch.float64)}, ValueError, "old_logps must have the shape"),
        ({"ref_logps": torch.zeros(3, 4, dtype=torch.float64)}, ValueError, "ref_logps must have the shape"),
        ({"advantages": t([1.0, -1.0, 0.5])}, ValueError, "advantages must have shape"),
        ({"logps": torch.zeros(4, dtype=torch.float64)}, ValueError, "logps must have shape"),
        ({"logps": t([[float("nan"), -1.0, 0.0, 0.0], [-1.0] * 4])}, ValueError, "finite"),
        ({"old_logps": t([[-1.0, float("inf"), 0.0, 0.0], [-1.0] * 4])}, ValueError, "finite"),
        ({"ref_logps": t([[-1.0, float("-inf"), 0.0, 0.0], [-1.0] * 4])}, ValueError, "finite"),
        ({"advantages": t([float("nan"), 1.0])}, ValueError, "finite"),
        ({"logps": [[-1.0] * 4] * 2}, TypeError, "logps must be a torch.Tensor"),
        ({"mask": np.ones((2, 4))}, TypeError, "mask must be a torch.Tensor"),
        ({"loss_type": "token_mean"}, ValueError, "loss_type must be one of"),
        ({"beta": -0.1}, ValueError, "beta must be a finite number >= 0"),
        ({"beta": "0.1"}, TypeError, "beta must be a real number"),
        ({"ref_logps": None, "beta": 0.04}, TypeError, "ref_logps must be a torch.Tensor when beta > 0"),
        ({"loss_type": "dr_grpo", "max_completion_length": 3}, ValueError, "longest completion \\(4\\)"),
        ({"loss_type": "dr_grpo", "max_completion_length": 0}, ValueError, "max_completion_length must be >= 1"),
        ({"loss_type": "dapo", "num_items_in_batch": 5}, ValueError, "this batch's 6 tokens"),
        ({"eps_low": -0.2}, ValueError, "eps_low"),
    ],
)
def test_bad_input_is_rejected(changes, error, message):
    with pytest.raises(error, match=message):
        call(**changes)


def test_valid_call_through_the_helper_works():
    loss, metrics = call()
    assert math.isfinite(float(loss)) and metrics["kl"] > 0
