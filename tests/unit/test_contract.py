"""The contract of the package docstring (issue 14), class by class of hostile input.

Masked positions never matter; no silent inf/NaN from finite input; scale-safe
advantages; NumPy and torch agree; one error type and a message that names the
argument. Every test here failed on the code before issue 14.
"""

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import grpo_core
from grpo_core import (
    PromptSetGRPO,
    categorical_kl,
    clip_masks,
    clipped_surrogate,
    dpo_gradient,
    dpo_loss,
    entropy,
    fit_value,
    group_advantages,
    grpo_objective,
    grpo_step,
    importance_ratio,
    kl_k3,
    log_softmax,
    objective_gradient,
    rloo_advantages,
    softmax,
    zero_signal_probability,
)
from grpo_core._validate import MAX_MAGNITUDE
from grpo_core.course import exact_match_reward, normalize_answer
from grpo_core.sequence import DigitSumTask, GRUPolicy, SequenceGRPO, SequenceGRPOConfig, warm_start
from grpo_core.token_loss import LOSS_TYPES, grpo_token_loss

# -- masked positions never matter -------------------------------------------------------------------

GARBAGE = st.sampled_from([0.0, -200.0, 1e30, -1e308, 5e-324, float("nan"), float("inf"), -float("inf")])


@settings(max_examples=80)
@given(
    st.integers(1, 4),
    st.integers(2, 6),
    st.sampled_from(LOSS_TYPES),
    st.sampled_from([torch.bool, torch.int64, torch.float32]),
    st.floats(0.0, 0.5),
    st.data(),
)
def test_the_token_loss_ignores_whatever_sits_at_masked_positions(batch, length, loss_type, mask_dtype, beta, data):
    generator = torch.Generator().manual_seed(data.draw(st.integers(0, 1000)))
    old = -3 * torch.rand(batch, length, generator=generator)
    logps = old + 0.3 * torch.randn(batch, length, generator=generator)
    ref = old + 0.3 * torch.randn(batch, length, generator=generator)
    adv = torch.randn(batch, generator=generator)
    lengths = torch.tensor(data.draw(st.lists(st.integers(1, length - 1), min_size=batch, max_size=batch)))
    keep = torch.arange(length) < lengths[:, None]
    mask = keep.to(mask_dtype)

    def run(garbage):
        def dirty(x):
            return torch.where(keep, x, torch.tensor(garbage))

        leaf = dirty(logps).requires_grad_()
        loss, metrics = grpo_token_loss(
            leaf, dirty(old), dirty(ref), adv, mask, beta=beta, loss_type=loss_type, max_completion_length=length
        )
        loss.backward()
        return loss.detach(), leaf.grad, metrics

    clean = run(0.0)
    dirty = run(data.draw(GARBAGE))
    assert torch.equal(clean[0], dirty[0])  # bit for bit
    assert torch.equal(clean[1], dirty[1])
    assert torch.equal(clean[1][~keep], torch.zeros_like(clean[1][~keep]))  # no gradient reaches padding
    assert clean[2] == dirty[2]


def test_padding_of_minus_200_does_not_turn_the_loss_into_nan():  # the case of the issue
    logps = torch.tensor([[-1.0, -1.2, -200.0]], requires_grad=True)
    old = torch.tensor([[-1.1, -1.0, 0.0]])
    loss, metrics = grpo_token_loss(logps, old, old, torch.tensor([1.0]), torch.tensor([[1, 1, 0]]))
    clean = logps.detach().clone().index_fill_(1, torch.tensor([2]), 0.0)
    zero, _ = grpo_token_loss(clean, old, old, torch.tensor([1.0]), torch.tensor([[1, 1, 0]]))
    assert math.isfinite(float(loss.detach())) and math.isfinite(metrics["kl"])
    assert float(loss.detach()) == float(zero)


def test_non_finite_unmasked_values_are_refused_by_name():
    ok = torch.zeros(1, 2)
    bad = torch.tensor([[0.0, float("nan")]])
    for position, name in ((0, "logps"), (1, "old_logps"), (2, "ref_logps")):
        args = [ok, ok, ok]
        args[position] = bad
        with pytest.raises(ValueError, match=rf"^{name} must be finite"):
            grpo_token_loss(*args, torch.ones(1), torch.ones(1, 2))


# -- no silent inf/NaN from finite input ---------------------------------------------------------------


def test_huge_log_ratios_are_clamped_at_verls_bound():
    bound = math.exp(20.0)
    assert importance_ratio(np.array([1000.0]), np.array([0.0]))[0] == pytest.approx(bound)
    assert float(importance_ratio(torch.tensor([100.0]), torch.tensor([0.0]))) == pytest.approx(bound, rel=1e-6)
    assert np.isfinite(kl_k3(np.array([-1000.0]), np.array([0.0]))).all()
    gradient = objective_gradient([0.0, 0.0], [0, 1], [-1000.0, -0.7], [-0.7, 1000.0 - 0.7], [1.0, -1.0])
    assert np.isfinite(gradient).all()
    logp = torch.tensor([0.0], dtype=torch.float64, requires_grad=True)
    grpo_objective(logp, torch.tensor([-1000.0], dtype=torch.float64), logp.detach(), torch.tensor([-1.0])).backward()
    assert torch.isfinite(logp.grad).all()


def test_logits_at_the_edges_of_the_range_and_beyond():
    np.testing.assert_array_equal(softmax([MAX_MAGNITUDE, -MAX_MAGNITUDE]), [1.0, 0.0])
    assert log_softmax([MAX_MAGNITUDE, -MAX_MAGNITUDE]).tolist() == [0.0, -2 * MAX_MAGNITUDE]
    with pytest.raises(ValueError, match="logits"):
        log_softmax([2 * MAX_MAGNITUDE, 0.0])
    with pytest.raises(ValueError, match=r"^ref_logits"):
        grpo_step([0.0, 0.0], [0.0, np.nan], [0, 1], [1.0, 0.0], grpo_core.GRPOConfig(group_size=2))


def test_dpo_at_the_largest_beta_is_finite_and_takes_torch_logits():
    assert np.isfinite(dpo_loss([-300.0, 300.0], [0.0, 0.0], [[0, 1]], MAX_MAGNITUDE))
    with pytest.raises(ValueError, match="beta"):
        dpo_loss([300.0, -300.0], [0.0, 0.0], [[0, 1]], 2 * MAX_MAGNITUDE)
    logits = torch.tensor([0.3, -0.2, 0.1], requires_grad=True)
    expected = dpo_gradient(np.array([0.3, -0.2, 0.1]), [0.0, 0.0, 0.0], [[0, 1]], 0.5)
    np.testing.assert_allclose(dpo_gradient(logits, torch.zeros(3), [[0, 1]], 0.5), expected, rtol=1e-6)
    np.testing.assert_allclose(
        dpo_loss(logits, torch.zeros(3), [[0, 1]], 0.5), dpo_loss(logits.tolist(), [0.0] * 3, [[0, 1]], 0.5)
    )


def test_the_critic_fit_at_the_edges_of_the_range():
    assert fit_value(MAX_MAGNITUDE, [-MAX_MAGNITUDE, -MAX_MAGNITUDE], 0.5, 3) == -0.75 * MAX_MAGNITUDE


# -- advantages: the visible formula over the whole range, exact zeros for zero variance --------------------


def exact_advantages(rewards, ddof=0):
    """Eq. (3) with ε = 0 on the exact rationals of the float inputs, to about 1e-30."""
    values = [Fraction(x) for x in rewards]
    mean = sum(values) / len(values)
    variance = sum((x - mean) ** 2 for x in values) / (len(values) - ddof)
    std = math.sqrt(variance)
    return [float((x - mean) / Fraction(std)) for x in values]


def one_line_eq3(R, eps, ddof):
    """Eq. (3) as the chapter prints it, in one line of NumPy (what ``group_advantages`` must equal)."""
    return (R - R.mean(-1, keepdims=True)) / (R.std(-1, ddof=ddof, keepdims=True) + eps)


def test_on_20000_ordinary_groups_eq3_is_its_one_line_formula_bit_for_bit():
    """G from 2 to 64, rewards within ±10 (seeded): ``group_advantages`` is the one line, not an approximation."""
    rng = np.random.default_rng(39)
    for G in range(2, 65):
        R = np.round(rng.uniform(-10, 10, size=(318, G)), rng.integers(0, 4))  # rounded: ties, equal groups
        R[::7] = R[::7, :1]  # every seventh group has zero variance
        for eps, ddof in ((1e-8, 0), (1e-4, 1)):
            A = group_advantages(R, eps=eps, ddof=ddof)
            constant = R.max(-1) == R.min(-1)
            assert not A[constant].any()
            np.testing.assert_array_equal(A[~constant], one_line_eq3(R[~constant], eps, ddof))


@settings(max_examples=300)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 3), st.integers(2, 64)),
        elements=st.one_of(st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE), st.sampled_from([0.0, 0.97, -MAX_MAGNITUDE])),
    ),
    st.sampled_from([0.0, 1e-8, 1e-4]),
    st.sampled_from([0, 1]),
)
def test_over_the_whole_range_eq3_is_its_one_line_formula_or_exactly_zero(R, eps, ddof):
    """Every reward the range allows: the one line wherever its divisor is > 0 and the group has a spread, Â = 0
    exactly elsewhere (a zero-variance group; a spread whose square underflows, with ε = 0). Never NaN or inf."""
    A = group_advantages(R, eps=eps, ddof=ddof)
    assert np.isfinite(A).all()
    divisor = R.std(-1, ddof=ddof) + eps
    visible = (divisor > 0) & (R.max(-1) > R.min(-1))
    np.testing.assert_array_equal(A[visible], one_line_eq3(R[visible], eps, ddof))
    assert not A[~visible].any()


def test_advantages_at_the_edges_of_the_range():
    np.testing.assert_allclose(
        group_advantages([MAX_MAGNITUDE, MAX_MAGNITUDE, 0.0]), [2**-0.5, 2**-0.5, -(2**0.5)], rtol=1e-14
    )
    np.testing.assert_array_equal(rloo_advantages([MAX_MAGNITUDE, MAX_MAGNITUDE, 0.0]), [5e8, 5e8, -1e9])
    np.testing.assert_array_equal(group_advantages([1e-100, 0.0], eps=0.0), [1.0, -1.0])
    np.testing.assert_array_equal(group_advantages([1e-200, 0.0], eps=0.0), [0.0, 0.0])  # std(R)² underflows
    with pytest.raises(ValueError, match="rewards"):
        group_advantages([2 * MAX_MAGNITUDE, 0.0])


def test_advantages_of_offset_rewards_are_the_one_line_formula():
    rewards = 1e8 + np.array([0.1, 0.2, 0.3, 0.5, 0.9])
    np.testing.assert_array_equal(group_advantages(rewards, eps=0.0), one_line_eq3(rewards, 0.0, 0))
    np.testing.assert_allclose(group_advantages(rewards, eps=0.0), exact_advantages(rewards), rtol=1e-6)


def test_zero_variance_groups_are_exactly_zero_at_every_scale():
    assert group_advantages(np.float32([0.97] * 14)).tolist() == [0.0] * 14
    assert group_advantages(torch.full((14,), 0.97, dtype=torch.float32)).tolist() == [0.0] * 14
    huge = np.full(10**6, 0.3)
    assert not group_advantages(huge).any() and not rloo_advantages(huge).any()
    assert not group_advantages([MAX_MAGNITUDE] * 5).any() and not group_advantages([5e-324] * 3, eps=0.0).any()


@settings(max_examples=100)
@given(
    arrays(np.float64, st.integers(2, 12), elements=st.floats(-1e3, 1e3).filter(lambda x: x == 0 or abs(x) > 1e-100)),
    st.integers(-300, 19),
    st.sampled_from([0, 1]),
)
def test_advantages_are_invariant_to_a_power_of_two_scale_bit_for_bit(rewards, power, ddof):
    scaled = rewards * 2.0**power  # exact, and within the range: every step of eq. (3) scales exactly
    np.testing.assert_array_equal(
        group_advantages(scaled, eps=0.0, ddof=ddof), group_advantages(rewards, eps=0.0, ddof=ddof)
    )


@settings(max_examples=100)
@given(
    arrays(np.float64, st.integers(2, 12), elements=st.floats(-10, 10)),
    st.floats(1e-6, 1e6),
    st.floats(-1e6, 1e6),
)
def test_advantages_are_invariant_to_an_affine_map_of_the_rewards(rewards, scale, offset):
    if np.ptp(rewards) < 1e-6:
        return
    moved = rewards * scale + offset
    if np.ptp(moved) == 0:
        return
    # the one line's rounding: the mean's, relative to the offset, over the spread
    conditioning = 1e-14 * np.abs(moved).max() / np.ptp(moved)
    np.testing.assert_array_equal(group_advantages(moved, eps=0.0), one_line_eq3(moved, 0.0, 0))
    np.testing.assert_allclose(group_advantages(moved, eps=0.0), exact_advantages(moved), atol=1e-9 + conditioning)
    np.testing.assert_allclose(
        group_advantages(moved, eps=0.0), group_advantages(rewards, eps=0.0), rtol=1e-5, atol=1e-5 + conditioning
    )


# -- NumPy and torch agree ---------------------------------------------------------------------------------

DTYPES = [(torch.float64, 1e-12), (torch.float32, 1e-6), (torch.float16, 2e-3), (torch.bfloat16, 2e-2)]


@pytest.mark.parametrize(("dtype", "tolerance"), DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "requires_grad"])
def test_numpy_and_torch_agree_for_every_dtype_and_layout(dtype, tolerance, layout):
    generator = np.random.default_rng(0)
    old = -generator.random((4, 3))
    logp = old + 0.2 * generator.standard_normal((4, 3))
    ref = old + 0.2 * generator.standard_normal((4, 3))
    adv = generator.standard_normal((4, 3))

    def tensor(x):
        x = torch.tensor(x).to(dtype)
        if layout == "transposed":
            x = x.T.contiguous().T
            assert not x.is_contiguous() or x.shape[0] == 1
        if layout == "requires_grad":
            x.requires_grad_()
        return x

    # the inputs as the tensor holds them, in float64: the references see the same rounded numbers
    def rounded(x):
        return tensor(x).detach().double().numpy()

    for function, args in [
        (importance_ratio, (logp, old)),
        (kl_k3, (logp, ref)),
        (grpo_core.kl_k1, (logp, ref)),
        (grpo_core.kl_k3_ratio, (logp, ref, old)),
        (grpo_core.kl_k3_plus, (logp, ref)),
        (clipped_surrogate, (np.exp(logp - old), adv)),
    ]:
        ours = function(*map(tensor, args))
        assert ours.dtype == (torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype)
        expected = function(*map(rounded, args))
        np.testing.assert_allclose(ours.detach().double().numpy(), expected, rtol=tolerance, atol=tolerance)
    objective = grpo_objective(*map(tensor, (logp, old, ref, adv)))
    assert float(objective.detach()) == pytest.approx(
        grpo_objective(*map(rounded, (logp, old, ref, adv))), rel=tolerance, abs=tolerance
    )


@pytest.mark.parametrize("function", [group_advantages, rloo_advantages, softmax, log_softmax])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_numpy_side_functions_take_any_tensor(function, dtype):
    values = torch.tensor([0.25, 0.25, 0.5], dtype=dtype, requires_grad=True)
    expected = function(values.detach().double().numpy())
    np.testing.assert_array_equal(function(values), expected)
    np.testing.assert_array_equal(function(values.detach()[::2]), function(values.detach().double().numpy()[::2]))


def test_numpy_and_torch_float32_clip_masks_agree_on_the_edge():
    edge = np.float32(1.2)  # the float32 nearest 1.2 lies above the float64 1.2
    ratio = np.array([edge, np.float32(0.8), np.float32(1.0)], dtype=np.float32)
    adv = np.array([1.0, -1.0, 1.0], dtype=np.float32)
    numpy_masks = clip_masks(ratio, adv, 0.2)
    torch_masks = clip_masks(torch.from_numpy(ratio), torch.from_numpy(adv), 0.2)
    for ours, theirs in zip(numpy_masks, torch_masks, strict=True):
        np.testing.assert_array_equal(ours, theirs.numpy())
    np.testing.assert_array_equal(
        clipped_surrogate(ratio, adv), clipped_surrogate(torch.from_numpy(ratio), torch.from_numpy(adv)).numpy()
    )


# -- one error type, the right name, the same kinds refused everywhere ------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: group_advantages([10**400, 0]), ValueError, "rewards"),
        (lambda: zero_signal_probability(0.5, 2**64), ValueError, "group_size"),
        (lambda: grpo_core.sample_group([0.5, 0.5], 2**64, np.random.default_rng(0)), ValueError, "group_size"),
        (lambda: PromptSetGRPO([[0.5, 0.5]], seed=None), TypeError, "seed"),
        (lambda: grpo_core.BanditGRPO(seed=2**64), ValueError, "seed"),
        (lambda: group_advantages(["1.0", "2.0"]), TypeError, "rewards"),
        (lambda: group_advantages(np.array(["1.0", "2.0"])), TypeError, "rewards"),
        (lambda: group_advantages([1 + 2j, 0.5]), TypeError, "rewards"),
        (lambda: group_advantages([True, False]), TypeError, "rewards"),
        (lambda: kl_k3([True, False], [0.0, 0.0]), TypeError, "logp"),
        (lambda: grpo_core.clip_fractions(np.array([True]), np.array([1.0])), TypeError, "ratio"),
        (lambda: group_advantages([0.2, 0.5], eps=True), TypeError, "eps"),
        (lambda: group_advantages([0.2, 0.5], eps=complex(1e-8, 0)), TypeError, "eps"),
        (lambda: group_advantages([0.2, 0.5], eps="1e-8"), TypeError, "eps"),
        (lambda: group_advantages([0.2, 0.5], eps=10**400), ValueError, "eps"),
        (lambda: importance_ratio(torch.tensor([1 + 1j]), torch.tensor([0j])), TypeError, "logp"),
        (lambda: grpo_core.GRPOConfig(lr=10**400), ValueError, "lr"),
        (lambda: grpo_core.ppo_advantages([0.2, 0.5], 0.1, normalize=1), TypeError, "normalize"),
        (
            lambda: grpo_core.noisy_reward_model([0], [0.2, 0.5], np.random.default_rng(0), 0.1, lucky_action=5),
            ValueError,
            "lucky_action",
        ),
        (
            lambda: grpo_core.noisy_reward_model([0], [0.2, 0.5], np.random.default_rng(0), 0.1, lucky_prob=True),
            TypeError,
            "lucky_prob",
        ),
    ],
)
def test_wrong_input_raises_the_documented_class_naming_the_argument(call, error, name):
    with pytest.raises((ValueError, TypeError)) as raised:
        call()
    assert type(raised.value) is error
    assert name in str(raised.value)


def test_requires_grad_tensors_work_in_the_numpy_side_functions():
    rewards = torch.tensor([0.2, 0.9, 0.4], dtype=torch.float64, requires_grad=True)
    np.testing.assert_array_equal(group_advantages(rewards), group_advantages([0.2, 0.9, 0.4]))
    logits = torch.zeros(3, requires_grad=True)
    np.testing.assert_array_equal(softmax(logits), [1 / 3] * 3)


def test_a_policy_that_reached_an_exact_zero_is_a_probability_vector():
    assert categorical_kl([1.0, 0.0], [0.5, 0.5]) == pytest.approx(math.log(2))
    assert entropy([1.0, 0.0]) == 0.0
    run = grpo_core.BanditGRPO()
    run.logits = np.array([800.0, 0.0, 0.0, 0.0])  # softmax underflows to exact zeros
    result = run.step()
    assert np.isfinite(result.kl) and np.isfinite(result.entropy)


# -- configs reject bad values at construction; the sequence modules validate ---------------------------


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"adv_ddof": 2}, "adv_ddof"),
        ({"eps_low": True}, "eps_low"),
        ({"mask_truncated": 1}, "mask_truncated"),
        ({"lr": "1e-3"}, "lr"),
    ],
)
def test_sequence_config_rejects_at_construction(changes, name):
    with pytest.raises((ValueError, TypeError), match=name):
        SequenceGRPOConfig(**changes)


TASK = DigitSumTask()


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: GRUPolicy(TASK).token_logps(torch.tensor([3]), torch.tensor([[7, 0]])), ValueError, "completions"),
        (lambda: GRUPolicy(TASK).token_logps(torch.tensor([3]), torch.tensor([[1.0, 0.0]])), TypeError, "completions"),
        (lambda: GRUPolicy(TASK).token_logps(torch.tensor([30]), torch.tensor([[1, 0]])), ValueError, "targets"),
        (lambda: GRUPolicy(TASK).sample(torch.tensor([99]), torch.Generator()), ValueError, "targets"),
        (lambda: GRUPolicy(TASK).sample([3], torch.Generator()), TypeError, "targets"),
        (lambda: GRUPolicy(TASK).sample(torch.tensor([3]), None), TypeError, "generator"),
        (
            lambda: GRUPolicy(TASK).sample(torch.tensor([3]), torch.Generator(), temperature=1e-45),
            ValueError,
            "temperature",
        ),
        (lambda: GRUPolicy(TASK, seed=-1), ValueError, "seed"),
        (lambda: GRUPolicy(TASK, seed=2**64), ValueError, "seed"),
        (lambda: GRUPolicy(TASK, hidden=10**9), ValueError, "hidden"),
        (lambda: DigitSumTask(max_target=2**64), ValueError, "max_target"),
        (lambda: TASK.reward(6, [3, 3.5, 0]), TypeError, "completion"),
        (lambda: TASK.reward(6, "330"), TypeError, "completion"),
        (lambda: TASK.reward(6, [3, -1, 0]), ValueError, "completion"),
        (lambda: TASK.reward("6", [3, 3, 0]), TypeError, "target"),
        (lambda: TASK.sample_targets(3, None), TypeError, "generator"),
        (lambda: TASK.demonstrations(torch.tensor([3]), torch.Generator(), noise=2.0), ValueError, "noise"),
        (lambda: warm_start(GRUPolicy(TASK), torch.Generator(), noise=1.5), ValueError, "noise"),
        (lambda: SequenceGRPO(GRUPolicy(TASK), seed=None), TypeError, "seed"),
    ],
)
def test_the_sequence_modules_validate_their_arguments(call, error, name):
    with pytest.raises((ValueError, TypeError)) as raised:
        call()
    assert type(raised.value) is error
    assert name in str(raised.value)


def test_sequence_statistics_are_finite_when_every_completion_is_truncated():
    task = DigitSumTask(max_length=2, max_target=2, max_digit=2)
    run = SequenceGRPO(
        GRUPolicy(task, seed=0), SequenceGRPOConfig(mask_truncated=True, group_size=2, prompts_per_step=2), seed=0
    )
    batch = run.collect()
    truncated = dataclasses.replace(batch, loss_mask=torch.zeros_like(batch.loss_mask))
    run.collect = lambda: truncated
    stats = run.step()
    values = dataclasses.asdict(stats)
    assert all(math.isfinite(v) for v in values.values()), values
    assert stats.loss == 0.0 and stats.clip_region == 0.0


# -- the verifier ----------------------------------------------------------------------------------------


def test_the_verifier_compares_numbers_beyond_4300_digits():
    long = "9" * 5000
    assert exact_match_reward([f"the answer is {long}"], long).tolist() == [1.0]
    assert exact_match_reward([f"the answer is 000{long}.000"], long).tolist() == [1.0]
    assert exact_match_reward([f"the answer is {long}"], long[:-1]).tolist() == [0.0]
    assert normalize_answer("0" * 5000 + "42.50") == "85/2"
    with pytest.raises(ValueError, match="reference"):
        exact_match_reward(["4"], 10**5000)


def test_the_verifier_normalises_a_long_adversarial_answer():
    answer = " $" * 50_000 + "42" + " .$" * 50_000
    assert normalize_answer(answer) == "42"


def test_the_largest_terms_of_the_range_are_finite_in_float32():
    """r·Â at the range's edges (a ratio e^20, Â = 1e9) and β·r·k3 (β = 1e9) stay far inside float32."""
    ratio, advantages = torch.tensor([math.exp(20.0), 1.0]), torch.tensor([-MAX_MAGNITUDE, MAX_MAGNITUDE])
    assert torch.isfinite(clipped_surrogate(ratio, advantages, 0.5)).all()
    logp = torch.tensor([[-20.0, 0.0]])
    loss, _ = grpo_token_loss(
        logp, logp - 20, torch.zeros(1, 2), torch.tensor([MAX_MAGNITUDE]), torch.ones(1, 2),
        beta=MAX_MAGNITUDE, kl_estimator="k3_ratio",
    )  # fmt: skip
    assert torch.isfinite(loss)


# -- issue 28: the trainers and course helpers at their edges, one reproducer per line of the issue ------------


def test_exact_zeros_are_probabilities_where_no_logarithm_is_taken():
    assert grpo_core.state_value([1.0, 0, 0, 0]) == pytest.approx(0.2)
    dpo = grpo_core.BanditDPO(init_logits=[0, 800, 0, 0])  # π_ref = [0, 1, 0, 0]: the pairs still draw two arms
    assert np.isfinite(dpo.snapshot()["kl"]) and (dpo.pairs[:, 0] != dpo.pairs[:, 1]).all()
    with pytest.raises(ValueError, match="probs must have every entry in \\(0, 1\\]"):
        grpo_core.BanditGRPO().set_policy([1.0, 0, 0, 0])  # θ = log π: here a zero cannot be
    with pytest.raises(ValueError, match="ref_probs must give at least 2 actions"):
        grpo_core.preference_pairs([0.2, 0.9], [1.0, 0.0], 4, np.random.default_rng(0))


def test_the_kl_of_a_collapsed_reference_is_finite():
    run = grpo_core.BanditGRPO(init_logits=[0.0, 800.0, 0.0, 0.0])
    run.logits = np.array([0.0, 0.0, 0.0, 0.0])  # π > 0 where π_ref underflowed to 0: KL = 600 - log 4, not inf
    assert run.snapshot()["kl"] == pytest.approx(3 / 4 * 800 - math.log(4), rel=1e-12)


@pytest.mark.parametrize("seed", [2**40, 2**64 - 1])
def test_seeds_are_any_integer_below_2_to_the_64(seed):
    assert grpo_core.run_seeds(lambda s: grpo_core.BanditGRPO(seed=s), 1, [seed]).kl.shape == (1, 2)
    with pytest.raises(ValueError, match="seed"):
        grpo_core.run_seeds(lambda s: grpo_core.BanditGRPO(seed=s), 1, [2**64])


def test_seeds_that_are_not_a_list_are_named():
    with pytest.raises(TypeError, match="seeds must be an iterable"):
        grpo_core.run_seeds(lambda s: grpo_core.BanditGRPO(seed=s), 1, None)


def test_a_global_token_count_may_exceed_ten_million():
    ones = torch.ones(1, 2)
    _, metrics = grpo_token_loss(
        -ones, -ones, None, torch.ones(1), ones, beta=0.0, loss_type="dapo", num_items_in_batch=2 * 10**7
    )
    assert metrics["loss"] == pytest.approx(-2 / (2 * 10**7))
    with pytest.raises(ValueError, match="num_items_in_batch must be <= 9007199254740992"):
        grpo_token_loss(
            -ones, -ones, None, torch.ones(1), ones, beta=0.0, loss_type="dapo", num_items_in_batch=2**53 + 1
        )


def test_integer_log_probs_are_numbers_in_the_token_loss():
    zeros = torch.zeros(2, 3, dtype=torch.int64)
    loss, _ = grpo_token_loss(zeros, zeros, zeros, torch.tensor([1.0, -1.0]), torch.ones(2, 3))
    assert loss.dtype == torch.float64 and float(loss) == 0.0


def test_tensors_are_copied_as_the_contract_promises():
    table = torch.tensor([0.2, 0.9, 0.4, 0.1], dtype=torch.float64)
    run = grpo_core.BanditGRPO(rewards=table)
    table[1] = 100.0
    assert run.reward_table.tolist() == [0.2, 0.9, 0.4, 0.1]


def test_longdouble_is_not_a_dtype_of_the_range():
    with pytest.raises(TypeError, match="rewards"):
        group_advantages(np.array([1.0, 0.0], dtype=np.longdouble))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (
            lambda: grpo_core.rloo_gradient([0.0, 0.0], [0, 1], [1.0, 2.0, 3.0]),
            "rewards must have one entry per action",
        ),
        (lambda: SequenceGRPO(GRUPolicy(TASK)).evaluate(prompts=0), "prompts must be >= 1"),
        (lambda: grpo_core.course.memory_by_model(7e9, "ppo", reward_model=1), "reward_model must be a bool"),
    ],
)
def test_a_refusal_names_the_argument_the_caller_passed(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_the_verifier_at_its_edges():
    assert exact_match_reward(["answer is 7"], 10**3979).tolist() == [0.0]  # 3,980 digits: compared exactly
    assert exact_match_reward([f"answer is {10**3979}"], 10**3979).tolist() == [1.0]
    with pytest.raises(ValueError, match="more than 4000 digits"):
        exact_match_reward(["answer is 7"], 10**4000)  # 4,001 digits
    assert exact_match_reward(["answer is 1e-07", "answer is 0.0000001", "answer is 1e-7"], 1e-07).tolist() == [1, 1, 0]
    assert exact_match_reward(["answer is 0.5", "answer is 1/2"], 0.5).tolist() == [1.0, 1.0]
    assert grpo_core.course.memory_by_model(7e9, "ppo", reward_model=np.bool_(True))["reward model"] == 14.0
