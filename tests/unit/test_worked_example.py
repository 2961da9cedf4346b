"""Golden numbers of the chapter's worked example (§12), computed independently.

Every expected value is derived here with plain arithmetic from the group
R = [0.9, 0.4, 0.9, 0.2] (sums of squares, ``math.sqrt``), never by calling the
code under test; ``grpo_core`` is then checked against them. The last tests
check the branch of the min in eq. (7) and its zero gradient with torch autograd.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from grpo_core import CHAPTER_REWARDS, GRPOConfig, clipped_surrogate, group_advantages, grpo_step

R = [0.9, 0.4, 0.9, 0.2]
G = len(R)
MEAN = (0.9 + 0.4 + 0.9 + 0.2) / 4  # 0.6
SUM_SQUARES = 0.3**2 + 0.2**2 + 0.3**2 + 0.4**2  # 0.38
POP_STD = math.sqrt(SUM_SQUARES / 4)  # sqrt(0.095) = 0.308221...
SAMPLE_STD = math.sqrt(SUM_SQUARES / 3)  # 0.355903...
DEVIATIONS = [0.3, -0.2, 0.3, -0.4]
ADVANTAGES = [d / POP_STD for d in DEVIATIONS]
CLIP_EPS = 0.2
RATIO = 1.31


def test_hand_arithmetic_constants():
    """The hand-derived constants themselves, against independently written decimals."""
    assert math.isclose(MEAN, 0.6, rel_tol=0, abs_tol=1e-15)
    assert math.isclose(SUM_SQUARES, 0.38, rel_tol=0, abs_tol=1e-15)
    assert math.isclose(POP_STD, 0.3082207001, rel_tol=0, abs_tol=1e-10)
    assert math.isclose(SAMPLE_STD, 0.3559026084, rel_tol=0, abs_tol=1e-10)
    assert ADVANTAGES[0] == pytest.approx(0.9733285268, abs=1e-9)
    assert ADVANTAGES[1] == pytest.approx(-0.6488856845, abs=1e-9)
    assert ADVANTAGES[3] == pytest.approx(-1.2977713690, abs=1e-9)


def test_group_statistics_use_the_population_std():
    rewards = np.array(R)
    assert rewards.mean() == pytest.approx(MEAN, abs=1e-12)
    assert rewards.std(ddof=0) == pytest.approx(POP_STD, abs=1e-12)


@pytest.mark.parametrize("eps", [0.0, 1e-8])
def test_advantages_match_the_hand_values(eps):
    expected = [d / (POP_STD + eps) for d in DEVIATIONS]
    np.testing.assert_allclose(group_advantages(R, eps=eps), expected, rtol=0, atol=1e-12)


def test_eps_1e8_makes_no_visible_difference():
    difference = np.abs(group_advantages(R, eps=0.0) - group_advantages(R, eps=1e-8))
    assert difference.max() < 1e-7
    assert difference.max() > 0  # it does change something, just far below the printed digits
    np.testing.assert_array_equal(np.round(group_advantages(R, eps=1e-8), 2), np.round(ADVANTAGES, 2))


def test_rounded_advantages_versus_the_chapter():
    """Â_1..3 round to the chapter's values; Â_4 rounds to -1.30, not the printed -1.29."""
    rounded = np.round(group_advantages(R, eps=0.0), 2)
    np.testing.assert_array_equal(rounded[:3], [0.97, -0.65, 0.97])
    assert rounded[3] == -1.30
    # The chapter's -1.29 is what its rounded std 0.309 gives: -0.4 / 0.309 = -1.2945...
    assert round(-0.4 / 0.309, 2) == -1.29
    assert round(POP_STD, 3) == 0.308


def test_advantages_are_a_z_score():
    advantages = group_advantages(R, eps=0.0)
    assert advantages.mean() == pytest.approx(0.0, abs=1e-12)
    assert advantages.std() == pytest.approx(1.0, abs=1e-12)


def test_unclipped_and_clipped_terms():
    a1 = ADVANTAGES[0]
    unclipped, clipped = RATIO * a1, (1 + CLIP_EPS) * a1
    assert unclipped == pytest.approx(1.2750603701, abs=1e-9)
    assert clipped == pytest.approx(1.1679942321, abs=1e-9)
    term = clipped_surrogate(np.array([RATIO]), np.array([a1]), CLIP_EPS)
    assert term[0] == pytest.approx(clipped, abs=1e-12)
    assert term[0] < unclipped
    # The chapter multiplied the rounded 0.97.
    assert round(1.31 * 0.97, 3) == 1.271
    assert round(1.2 * 0.97, 3) == 1.164


def test_production_defaults_trl():
    """ddof=1 and eps=1e-4 (TRL): Â_1 = 0.3 / (sqrt(0.38/3) + 1e-4) = 0.84269..."""
    expected = [d / (SAMPLE_STD + 1e-4) for d in DEVIATIONS]
    advantages = group_advantages(R, eps=1e-4, ddof=1)
    np.testing.assert_allclose(advantages, expected, rtol=0, atol=1e-12)
    assert advantages[0] == pytest.approx(0.8426904, abs=1e-7)
    # Without eps the two conventions differ by exactly sqrt((G-1)/G).
    ratio = group_advantages(R, eps=0.0, ddof=1) / group_advantages(R, eps=0.0, ddof=0)
    np.testing.assert_allclose(ratio, math.sqrt(3 / 4), rtol=1e-12)
    # torch.std (what TRL calls) is the sample std.
    assert torch.tensor(R, dtype=torch.float64).std().item() == pytest.approx(SAMPLE_STD, abs=1e-12)


def _slope(ratio: float, advantage: float, eps: float = CLIP_EPS) -> float:
    r = torch.tensor(ratio, dtype=torch.float64, requires_grad=True)
    clipped_surrogate(r, torch.tensor(advantage, dtype=torch.float64), eps).backward()
    return r.grad.item()


def test_gradient_is_zero_on_the_clipped_branch():
    assert _slope(RATIO, ADVANTAGES[0]) == 0.0


def test_gradient_is_the_advantage_inside_the_band():
    assert _slope(1.1, ADVANTAGES[0]) == pytest.approx(ADVANTAGES[0], abs=1e-12)


def test_negative_advantage_clip_is_one_sided():
    """Â_4 < 0: flat below 1 - ε, but the unclipped branch (slope Â_4) above 1 + ε."""
    assert _slope(0.7, ADVANTAGES[3]) == 0.0
    assert _slope(RATIO, ADVANTAGES[3]) == pytest.approx(ADVANTAGES[3], abs=1e-12)


@given(
    ratio=st.floats(min_value=0.05, max_value=5.0),
    advantage=st.floats(min_value=0.01, max_value=10.0),
    sign=st.sampled_from([1.0, -1.0]),
    eps=st.floats(min_value=0.05, max_value=0.5),
)
def test_slope_is_zero_exactly_where_the_clip_binds(ratio, advantage, sign, eps):
    advantage *= sign
    low, high = 1 - eps, 1 + eps
    assume(min(abs(ratio - low), abs(ratio - high)) > 1e-9)  # the kinks themselves have no derivative
    binds = (advantage > 0 and ratio > high) or (advantage < 0 and ratio < low)
    expected = 0.0 if binds else advantage
    assert _slope(ratio, advantage, eps) == pytest.approx(expected, abs=1e-12)


def _softmax(logits):
    shifted = [math.exp(x - max(logits)) for x in logits]
    return [x / sum(shifted) for x in shifted]


def test_chapter_group_on_the_bandit():
    """Actions B, C, B, A with the §11 table give the §12 rewards."""
    actions = np.array([1, 2, 1, 0])
    rewards = np.array(CHAPTER_REWARDS)[actions]
    np.testing.assert_array_equal(rewards, R)


@pytest.mark.parametrize("lr", [0.3, 1.0])
def test_one_inner_epoch_from_uniform_matches_hand_gradient(lr):
    """From θ = θ_ref = 0 the k3 term has zero gradient, and every ratio is 1, so one
    sub-step is θ = lr/G · Σ_i Â_i (e_{a_i} - π) with π uniform and Σ Â_i = 0:
    θ = lr/4 · [Â_4, 2Â_1, Â_2, 0] for the actions B, C, B, A."""
    actions = np.array([1, 2, 1, 0])
    config = GRPOConfig(group_size=4, inner_epochs=1, lr=lr)
    result = grpo_step(np.zeros(4), np.zeros(4), actions, np.array(R), config)
    a1, a2, _, a4 = (d / (POP_STD + 1e-8) for d in DEVIATIONS)
    theta = [lr / 4 * a4, lr / 4 * 2 * a1, lr / 4 * a2, 0.0]
    np.testing.assert_allclose(result.logits, theta, rtol=0, atol=1e-12)
    probs = _softmax(theta)
    expected_ratios = [probs[a] / 0.25 for a in actions]
    np.testing.assert_allclose(result.ratios, expected_ratios, rtol=1e-12)
    expected_clipped = [
        (ratio > 1 + CLIP_EPS and adv > 0) or (ratio < 1 - CLIP_EPS and adv < 0)
        for ratio, adv in zip(expected_ratios, (a1, a2, a1, a4), strict=True)
    ]
    np.testing.assert_array_equal(result.clipped, expected_clipped)


def test_default_step_clips_the_two_b_samples_after_one_sub_step():
    """lr = 1: θ_B = Â_1/2, so r_B = 4 e^{θ_B} / Σ_a e^{θ_a} = 1.5494 > 1.2: clipped, like the chapter's r = 1.31."""
    a1, a2, a4 = ADVANTAGES[0], ADVANTAGES[1], ADVANTAGES[3]
    partition = math.exp(a4 / 4) + math.exp(a1 / 2) + math.exp(a2 / 4) + 1.0
    ratio_b, ratio_c, ratio_a = (4 * math.exp(x) / partition for x in (a1 / 2, a2 / 4, a4 / 4))
    assert ratio_b == pytest.approx(1.5494, abs=5e-5)
    assert ratio_c == pytest.approx(0.8098, abs=5e-5)
    assert ratio_a == pytest.approx(0.6885, abs=5e-5)
    actions = np.array([1, 2, 1, 0])
    result = grpo_step(np.zeros(4), np.zeros(4), actions, np.array(R), GRPOConfig(group_size=4, inner_epochs=1))
    np.testing.assert_allclose(result.ratios, [ratio_b, ratio_c, ratio_b, ratio_a], rtol=1e-7)
    np.testing.assert_array_equal(result.clipped, [True, False, True, True])  # C at 0.81 is still inside the band
