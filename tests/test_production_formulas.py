"""grpo_core against the formulas production trainers publish (book/production-formulas.md).

Each ``trl_*``/``verl_*``/``openrlhf_*`` function below is a straight transcription
of the library's source, read in the released wheels (versions named in each
docstring), reduced to the code path the defaults take. They are the
independent reference: the goldens are computed from them or by hand, never
from grpo_core.
"""

import math
from collections import defaultdict

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core.advantages import group_advantages, rloo_advantages
from grpo_core.kl import kl_k3
from grpo_core.token_loss import grpo_token_loss

# -- transcriptions -----------------------------------------------------------------------------


def trl_advantages(rewards, num_generations, scale_rewards="group"):
    """TRL 1.16.0 ``GRPOTrainer._generate_and_score_completions`` ("sum_then_normalize", one reward function).

    Group mean; std by ``nanstd`` (Bessel-corrected, i.e. ``torch.std``) of the
    group or of the batch; ``advantages / (std + 1e-4)`` unless "none".
    """
    mean = rewards.view(-1, num_generations).mean(dim=1).repeat_interleave(num_generations, dim=0)
    if scale_rewards in ["group", "none"]:
        std = rewards.view(-1, num_generations).std(dim=1).repeat_interleave(num_generations, dim=0)
    else:  # "batch"
        std = rewards.std().expand_as(rewards)
    advantages = rewards - mean
    if scale_rewards != "none":
        advantages = advantages / (std + 1e-4)
    return advantages


def trl_loss(per_token_logps, old_per_token_logps, ref_per_token_logps, advantages, mask, *, beta, epsilon_low,
             epsilon_high, loss_type, max_completion_length=None, num_items_in_batch=None):  # fmt: skip
    """TRL 1.16.0 ``GRPOTrainer._compute_loss``, token-level ratios, one process, no gradient accumulation."""
    advantages = advantages.unsqueeze(1)
    coef_1 = torch.exp(per_token_logps - old_per_token_logps)
    if beta != 0.0:
        per_token_kl = torch.exp(ref_per_token_logps - per_token_logps) - (ref_per_token_logps - per_token_logps) - 1
    coef_2 = torch.clamp(coef_1, 1 - epsilon_low, 1 + epsilon_high)
    per_token_loss = -torch.min(coef_1 * advantages, coef_2 * advantages)
    if beta != 0.0:
        per_token_loss = per_token_loss + beta * per_token_kl
    if loss_type == "grpo":
        loss = ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type == "bnpo":
        loss = (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0)
    elif loss_type == "dr_grpo":
        loss = (per_token_loss * mask).sum() / (per_token_loss.size(0) * max_completion_length)
    else:  # "dapo": num_items_in_batch / num_processes with one process
        loss = (per_token_loss * mask).sum() / torch.as_tensor(num_items_in_batch).clamp(min=1.0)
    is_low = (coef_1 < 1 - epsilon_low) & (advantages < 0)
    is_high = (coef_1 > 1 + epsilon_high) & (advantages > 0)
    metrics = {
        "clip_ratio/low_mean": float((is_low * mask).sum() / mask.sum()),
        "clip_ratio/high_mean": float((is_high * mask).sum() / mask.sum()),
        "clip_ratio/region_mean": float(((is_low | is_high) * mask).sum() / mask.sum()),
    }
    return loss, metrics


def verl_grpo_advantages(scores, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True):
    """verl 0.9.1 ``verl/trainer/ppo/core_algos.py::compute_grpo_outcome_advantage`` (scores = summed rewards)."""
    scores = scores.clone()
    id2score, id2mean, id2std = defaultdict(list), {}, {}
    for i in range(scores.shape[0]):
        id2score[index[i]].append(scores[i])
    for idx in id2score:
        if len(id2score[idx]) == 1:
            id2mean[idx], id2std[idx] = torch.tensor(0.0), torch.tensor(1.0)
        else:
            id2mean[idx] = torch.mean(torch.stack(id2score[idx]))
            id2std[idx] = torch.std(torch.stack(id2score[idx]))
    for i in range(scores.shape[0]):
        if norm_adv_by_std_in_grpo:
            scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + epsilon)
        else:
            scores[i] = scores[i] - id2mean[index[i]]
    return scores


def verl_agg_loss(loss_mat, loss_mask, loss_agg_mode, loss_scale_factor=None):
    """verl 0.9.1 ``core_algos.agg_loss`` with ``dp_size = 1`` and no global batch info."""
    if loss_agg_mode == "token-mean":
        return (loss_mat * loss_mask).sum() / loss_mask.sum()
    seq_mask = (loss_mask.sum(-1) > 0).float()
    if loss_agg_mode == "seq-mean-token-mean":
        seq_losses = (loss_mat * loss_mask).sum(-1) / (loss_mask.sum(-1) + 1e-8)
        return (seq_losses * seq_mask).sum() / seq_mask.sum()
    seq_losses = (loss_mat * loss_mask).sum(-1)  # "seq-mean-token-sum(-norm)"
    loss = (seq_losses * seq_mask).sum() / seq_mask.sum()
    if loss_agg_mode == "seq-mean-token-sum-norm":
        loss = loss / (loss_mask.shape[-1] if loss_scale_factor is None else loss_scale_factor)
    return loss


def verl_low_var_kl(logprob, ref_logprob):
    """verl 0.9.1 ``core_algos.kl_penalty_forward(..., "low_var_kl")``."""
    kl = torch.clamp(ref_logprob - logprob, min=-20, max=20)
    return torch.clamp(torch.exp(kl) - kl - 1, min=-10, max=10)


def verl_actor_loss(old_log_prob, log_prob, ref_log_prob, advantages, response_mask, loss_agg_mode, *,
                    clip_ratio=0.2, clip_ratio_c=3.0, kl_loss_coef=0.0, loss_scale_factor=None):  # fmt: skip
    """verl 0.9.1 ``compute_policy_loss_vanilla`` (dual clip) + ``workers/utils/losses.py`` KL loss term."""
    ratio = torch.exp(log_prob - old_log_prob)
    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1 - clip_ratio, 1 + clip_ratio)
    clip_pg_losses1 = torch.maximum(pg_losses1, pg_losses2)
    clip_pg_losses2 = torch.min(-advantages * clip_ratio_c, clip_pg_losses1)
    pg_losses = torch.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)
    loss = verl_agg_loss(pg_losses, response_mask, loss_agg_mode, loss_scale_factor)
    kl = verl_agg_loss(verl_low_var_kl(log_prob, ref_log_prob), response_mask, loss_agg_mode, loss_scale_factor)
    return loss + kl * kl_loss_coef


def openrlhf_advantages(rewards, estimator):
    """OpenRLHF 0.11.2 ``ExperienceMaker.compute_advantages_and_returns``, rewards shaped (prompts, n_samples)."""
    n = rewards.shape[-1]
    if estimator == "rloo":
        return rewards - (rewards.sum(-1, keepdim=True) - rewards) / (n - 1)
    if estimator == "dr_grpo":
        return rewards - rewards.mean(-1, keepdim=True)
    return (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)  # "group_norm"


def openrlhf_k3(log_probs, log_probs_base):
    """OpenRLHF 0.11.2 ``openrlhf/models/utils.py::compute_approx_kl(kl_estimator="k3")``."""
    log_ratio = (log_probs.float() - log_probs_base.float()).clamp(min=-10)
    return ((-log_ratio).exp() - 1 + log_ratio).clamp(min=-10, max=10)


# -- strategies -----------------------------------------------------------------------------------

rewards_batches = st.tuples(st.integers(1, 4), st.integers(2, 8)).flatmap(
    lambda shape: st.lists(
        st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(-2, 2),
        min_size=shape[0] * shape[1],
        max_size=shape[0] * shape[1],
    ).map(lambda values: np.array(values).reshape(shape))
)


@st.composite
def token_batches(draw, max_log_ratio=0.5):
    batch, width = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    lengths = draw(st.lists(st.integers(1, width), min_size=batch, max_size=batch))
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    cells = batch * width
    old = torch.tensor(draw(st.lists(st.floats(-4, -0.05), min_size=cells, max_size=cells)), dtype=torch.float64)
    shift = torch.tensor(
        draw(st.lists(st.floats(-max_log_ratio, max_log_ratio), min_size=cells, max_size=cells)), dtype=torch.float64
    )
    ref_shift = torch.tensor(draw(st.lists(st.floats(-1, 1), min_size=cells, max_size=cells)), dtype=torch.float64)
    adv = torch.tensor(draw(st.lists(st.floats(-2, 2), min_size=batch, max_size=batch)), dtype=torch.float64)
    old = old.reshape(batch, width)
    logps = old + shift.reshape(batch, width)
    return logps, old, logps + ref_shift.reshape(batch, width), adv, mask.to(torch.int32)


# -- the advantage ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("eps", "golden"),
    [(1e-4, 0.8658754297607016), (1e-6, 0.8660239037870368), (1e-9, 0.8660254022844387)],
    ids=["TRL 1e-4", "verl 1e-6", "OpenRLHF 1e-9"],
)
def test_advantage_golden_sample_std(eps, golden):
    # rewards [1, 0, 0, 1]: mean 0.5, sample std sqrt(((0.5)² × 4)/3) = sqrt(1/3); Â = ±0.5/(sqrt(1/3) + eps)
    assert golden == pytest.approx(0.5 / (math.sqrt(1 / 3) + eps), rel=1e-15)
    advantages = group_advantages([1.0, 0.0, 0.0, 1.0], eps=eps, ddof=1)
    np.testing.assert_allclose(advantages, [golden, -golden, -golden, golden], rtol=1e-13)


def test_the_chapter_default_is_the_population_std():
    # ddof = 0: std of [1, 0, 0, 1] is 0.5, so Â = ±0.5/(0.5 + 1e-8); TRL's ±0.865875 is not what eq. (3) prints
    np.testing.assert_allclose(group_advantages([1.0, 0.0, 0.0, 1.0]), [1, -1, -1, 1], rtol=1e-7)
    assert trl_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=torch.float64), 4)[0] == pytest.approx(
        0.865875, abs=5e-7
    )


@settings(max_examples=80, deadline=None)
@given(rewards_batches, st.sampled_from(["group", "batch", "none"]))
def test_trl_advantages_are_group_advantages_with_eps_1e4_ddof_1(rewards, scale):
    if scale == "batch" and rewards.size < 2:
        return
    expected = trl_advantages(torch.tensor(rewards.reshape(-1)), rewards.shape[1], scale).numpy()
    ours = group_advantages(rewards, eps=1e-4, ddof=1, scale=scale).reshape(-1)
    np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(rewards_batches, st.booleans())
def test_verl_advantages_are_group_advantages_with_eps_1e6_ddof_1(rewards, norm_by_std):
    index = np.repeat(np.arange(rewards.shape[0]), rewards.shape[1])
    expected = verl_grpo_advantages(torch.tensor(rewards.reshape(-1)), index, 1e-6, norm_by_std).numpy()
    ours = group_advantages(rewards, eps=1e-6, ddof=1, scale="group" if norm_by_std else "none").reshape(-1)
    np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(rewards_batches)
def test_openrlhf_estimators(rewards):
    torch_rewards = torch.tensor(rewards)
    np.testing.assert_allclose(
        group_advantages(rewards, eps=1e-9, ddof=1), openrlhf_advantages(torch_rewards, "group_norm"), atol=1e-9
    )
    np.testing.assert_allclose(
        group_advantages(rewards, scale="none"), openrlhf_advantages(torch_rewards, "dr_grpo"), atol=1e-12
    )
    np.testing.assert_allclose(rloo_advantages(rewards), openrlhf_advantages(torch_rewards, "rloo"), atol=1e-12)


# -- the KL estimator -----------------------------------------------------------------------------


def test_k3_direction_golden():
    # log π_θ = −1, log π_ref = −2: TRL's exp(ref − logp) − (ref − logp) − 1 = e^-1 + 1 − 1
    logp, ref = torch.tensor([-1.0], dtype=torch.float64), torch.tensor([-2.0], dtype=torch.float64)
    assert float(kl_k3(logp, ref)) == pytest.approx(math.exp(-1), rel=1e-15)
    reversed_direction = math.exp(1) - 1 - 1  # k3 of KL(π_ref ‖ π_θ): not what eq. (8) or TRL compute
    assert float(kl_k3(logp, ref)) != pytest.approx(reversed_direction)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(-8, -0.01), st.floats(-8, -0.01)), min_size=1, max_size=20))
def test_k3_is_verl_low_var_kl_and_openrlhf_k3_inside_their_clamps(pairs):
    logp, ref = (torch.tensor(column, dtype=torch.float64) for column in zip(*pairs, strict=True))
    ours = kl_k3(logp, ref)
    inside = ours < 10  # both libraries clamp the estimate to [-10, 10]
    torch.testing.assert_close(ours[inside], verl_low_var_kl(logp, ref)[inside], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours[inside].float(), openrlhf_k3(logp, ref)[inside], rtol=1e-5, atol=1e-6)
    assert bool((verl_low_var_kl(logp, ref) <= 10).all())


# -- the loss --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("loss_type", "golden"), [("grpo", 0.0), ("bnpo", 1 / 3), ("dapo", 1 / 3), ("dr_grpo", 1 / 4)])
def test_two_completion_golden_from_trl_formula(loss_type, golden):
    logps = torch.tensor([[-1.0, -1.0, -0.5, -0.5], [-1.0, -1.0, -1.0, -1.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.int32)
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    options = {"max_completion_length": 4, "num_items_in_batch": 6}
    trl, _ = trl_loss(
        logps, logps, None, adv, mask, beta=0.0, epsilon_low=0.2, epsilon_high=0.2, loss_type=loss_type, **options
    )
    ours, _ = grpo_token_loss(logps, logps, None, adv, mask, beta=0.0, loss_type=loss_type, **options)
    assert float(trl) == pytest.approx(golden, abs=1e-15)
    assert float(ours) == pytest.approx(golden, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(token_batches(), st.sampled_from(["grpo", "bnpo", "dr_grpo", "dapo"]), st.floats(0.0, 0.1), st.floats(0.0, 0.1))
def test_trl_compute_loss_equals_grpo_token_loss(batch, loss_type, beta, extra):
    logps, old, ref, adv, mask = batch
    width = logps.shape[1]
    options = {"max_completion_length": width + 2, "num_items_in_batch": int(mask.sum()) + 3}
    trl, trl_metrics = trl_loss(
        logps, old, ref, adv, mask, beta=beta, epsilon_low=0.2, epsilon_high=0.2 + extra, loss_type=loss_type, **options
    )
    ours, metrics = grpo_token_loss(
        logps, old, ref, adv, mask, beta=beta, eps_low=0.2, eps_high=0.2 + extra, loss_type=loss_type, **options
    )
    assert float(ours) == pytest.approx(float(trl), rel=1e-10, abs=1e-12)
    for name, value in trl_metrics.items():
        assert metrics[name] == pytest.approx(value, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    token_batches(),
    st.sampled_from([("token-mean", "bnpo"), ("seq-mean-token-mean", "grpo"), ("seq-mean-token-sum-norm", "dr_grpo")]),
    st.floats(0.0, 0.1),
)
def test_verl_actor_loss_equals_grpo_token_loss_below_the_dual_clip(batch, modes, beta):
    # log-ratios within ±0.5 keep every ratio below verl's clip_ratio_c = 3, where dual clip never acts
    logps, old, ref, adv, mask = batch
    verl_mode, loss_type = modes
    width = logps.shape[1]
    expected = verl_actor_loss(
        old, logps, ref, adv[:, None], mask, verl_mode, kl_loss_coef=beta, loss_scale_factor=width
    )
    ours, _ = grpo_token_loss(logps, old, ref, adv, mask, beta=beta, loss_type=loss_type, max_completion_length=width)
    assert float(ours) == pytest.approx(float(expected), rel=1e-7, abs=1e-9)


def test_verl_dual_clip_is_a_divergence():
    # Â = −1 and ratio 4: eq. (7) gives −min(4·(−1), 1.2·(−1)) = 4; verl's dual clip caps it at −Â·3 = 3
    old = torch.zeros(1, 1, dtype=torch.float64)
    logps = old + math.log(4.0)
    adv, mask = torch.tensor([-1.0], dtype=torch.float64), torch.ones(1, 1)
    ours, _ = grpo_token_loss(logps, old, None, adv, mask, beta=0.0)
    assert float(ours) == pytest.approx(4.0)
    assert float(verl_actor_loss(old, logps, old, adv[:, None], mask, "token-mean")) == pytest.approx(3.0)


def test_trl_zero_rows_count_in_the_grpo_mean_ours_are_rejected():
    # TRL clamps an empty row's token count to 1, so a masked truncation adds 0 to the sum and 1 to B
    logps = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1], [0, 0]], dtype=torch.int32)
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    trl, _ = trl_loss(logps, logps, None, adv, mask, beta=0.0, epsilon_low=0.2, epsilon_high=0.2, loss_type="grpo")
    assert float(trl) == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="all zeros"):
        grpo_token_loss(logps, logps, None, adv, mask, beta=0.0)
    kept, _ = grpo_token_loss(logps[:1], logps[:1], None, adv[:1], mask[:1], beta=0.0)
    assert float(kept) == pytest.approx(-1.0)  # dropping the row first: the mean is over the kept completion
