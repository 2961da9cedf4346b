"""grpo_core against the formulas production trainers publish (book/production-formulas.md).

Each ``trl_*``/``verl_*``/``openrlhf_*`` function below is a straight transcription
of the library's source, read in the released wheels (versions named in each
docstring), reduced to the code path the defaults take. They are the
independent reference: the goldens are computed from them or by hand, never
from grpo_core.
"""

import math
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core.advantages import group_advantages, rloo_advantages
from grpo_core.kl import kl_k1, kl_k2, kl_k3, kl_k3_plus, kl_k3_ratio
from grpo_core.objective import grpo_objective
from grpo_core.token_loss import grpo_token_loss

# -- transcriptions -----------------------------------------------------------------------------


def trl_advantages(rewards, num_generations, scale_rewards="group"):
    """TRL 1.16.0 ``GRPOTrainer._generate_and_score_completions`` ("sum_then_normalize", one reward function).

    Transcribed: these lines sit in the middle of the generation method, which
    cannot run without a model. It calls TRL's real ``nanstd`` (Bessel-corrected).
    The real trainer's advantages are checked in ``tests/unit/test_trl_bridge.py``.
    """
    from trl.trainer.utils import nanstd  # TRL takes 4 s to import: only the tests that call it pay that

    mean = rewards.view(-1, num_generations).mean(dim=1).repeat_interleave(num_generations, dim=0)
    if scale_rewards in ["group", "none"]:
        std = nanstd(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations, dim=0)
    else:  # "batch"
        std = nanstd(rewards).expand_as(rewards)
    advantages = rewards - mean
    if scale_rewards != "none":
        advantages = advantages / (std + 1e-4)
    return advantages


def trl_loss(per_token_logps, old_per_token_logps, ref_per_token_logps, advantages, mask, *, beta, epsilon_low,
             epsilon_high, loss_type, max_completion_length=None, num_items_in_batch=None,
             use_bias_correction_kl=True, delta=None, importance_sampling_level="token"):  # fmt: skip
    """TRL 1.16.0's own ``GRPOTrainer._compute_loss``, called on a minimal trainer state.

    Not a transcription: the method is TRL's, called unbound with a namespace
    that holds the attributes it reads (one process, no gradient accumulation,
    no vLLM, no entropy masking or bonus), and whose
    ``_get_per_token_logps_and_entropies`` returns ``per_token_logps`` instead
    of running a model. Returns the loss and the metrics TRL logged.
    """
    from trl import GRPOTrainer

    batch, width = per_token_logps.shape
    state = SimpleNamespace(
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level=importance_sampling_level,
        beta=beta,
        loss_type=loss_type,
        epsilon_low=epsilon_low,
        epsilon_high=epsilon_high,
        max_completion_length=max_completion_length,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        accelerator=SimpleNamespace(num_processes=1, reduce=lambda tensor, reduction: tensor, gather=lambda t: t),
        args=SimpleNamespace(use_bias_correction_kl=use_bias_correction_kl, delta=delta, steps_per_generation=1),
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        _metrics={"train": defaultdict(list)},
        _get_per_token_logps_and_entropies=lambda *args, **kwargs: (
            per_token_logps,
            torch.zeros_like(per_token_logps),
            None,
        ),
    )
    inputs = {
        "prompt_ids": torch.zeros(batch, 1, dtype=torch.long),
        "prompt_mask": torch.ones(batch, 1, dtype=torch.long),
        "completion_ids": torch.zeros(batch, width, dtype=torch.long),
        "completion_mask": mask,
        "advantages": advantages,
        "old_per_token_logps": old_per_token_logps,
        "ref_per_token_logps": ref_per_token_logps,
        "num_items_in_batch": torch.tensor(float(mask.sum() if num_items_in_batch is None else num_items_in_batch)),
    }
    loss = GRPOTrainer._compute_loss(state, None, inputs)
    return loss, {name: values[-1] for name, values in state._metrics["train"].items()}


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


def verl_k3_plus(logprob, ref_logprob):
    """verl 0.9.1 ``core_algos.kl_penalty(..., "k3+")``: k3's value, k2's gradient (straight through)."""
    forward_score = verl_low_var_kl(logprob, ref_logprob)
    backward_score = 0.5 * (logprob - ref_logprob).square()
    return backward_score - backward_score.detach() + forward_score.detach()


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


def openrlhf_advantages(rewards, estimator, no_std_norm=False):
    """OpenRLHF 0.11.2 ``ExperienceMaker.compute_advantages_and_returns``, rewards shaped (prompts, n_samples).

    One token per completion and no KL in the reward, so each completion's
    return is its reward and the batch whitening of "reinforce_baseline" is over
    completions (with longer completions it is token-weighted).
    """
    n = rewards.shape[-1]
    if estimator == "rloo":
        return rewards - (rewards.sum(-1, keepdim=True) - rewards) / (n - 1)
    if estimator in ["reinforce_baseline", "dr_grpo"]:
        rewards = rewards - rewards.mean(-1, keepdim=True)
        if estimator == "dr_grpo":
            return rewards
        mean = rewards.mean()  # "Normalize advantages across all experiences"
        rstd = 1 if no_std_norm else ((rewards - mean).pow(2).mean()).clamp(min=1e-8).rsqrt()
        return (rewards - mean) * rstd
    return (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)  # "group_norm"


def openrlhf_approx_kl(log_probs, log_probs_base, log_probs_old=None, kl_estimator="k3", unbiased_gradient=False):
    """OpenRLHF 0.11.2 ``openrlhf/models/utils.py::compute_approx_kl`` (k1 and k3; ``KL_IS_WEIGHT_CLIP = 10``)."""
    log_ratio = log_probs.float() - log_probs_base.float()
    if kl_estimator == "k1":
        value = log_ratio
    else:  # "k3"
        k3_log_ratio = log_ratio.clamp(min=-10)
        value = (-k3_log_ratio).exp() - 1 + k3_log_ratio
    value = value.clamp(min=-10, max=10)
    if not unbiased_gradient:
        return value
    w = 1.0 if log_probs_old is None else (log_probs.float() - log_probs_old.float()).exp().clamp(max=10.0).detach()
    grad_surrogate = w * (log_ratio**2 / 2.0)
    return value.detach() + grad_surrogate - grad_surrogate.detach()


def openrlhf_aggregate_loss(loss, loss_mask, token_level_loss=True):
    """OpenRLHF 0.11.2 ``openrlhf/models/loss.py::aggregate_loss`` (lines 11–39), one process, no global batch info.

    With ``batch_num_tokens`` and ``global_batch_size`` left at ``None`` the function returns
    ``masked_mean`` (``openrlhf/models/utils.py``, lines 199–202) of the token terms, or of the
    per-sequence token means over the non-empty sequences.
    """
    if token_level_loss:
        return (loss * loss_mask).sum() / loss_mask.sum()
    token_counts = loss_mask.sum(dim=-1)
    seq_loss = (loss * loss_mask).sum(dim=-1) / (token_counts + 1e-8)
    seq_mask = (token_counts > 0).float()
    return (seq_loss * seq_mask).sum() / seq_mask.sum()


def openrlhf_actor_loss(log_probs, old_log_probs, base_log_probs, advantages, action_mask, loss_agg_mode, kl_coef):
    """OpenRLHF 0.11.2's actor loss with ``--algo.kl.use_loss`` and the k3 estimator, one process.

    ``openrlhf/trainer/ray/ppo_actor.py``: ``PolicyLoss`` is built with
    ``token_level_loss = (loss_agg_mode == "token-mean")`` (line 80), but the KL loss is
    ``aggregate_loss(kl, action_mask, **loss_batch_info)`` (line 331), and ``loss_batch_info``
    (``openrlhf/utils/loss_utils.py::get_loss_batch_info``) holds only ``dp_size``,
    ``batch_num_tokens`` and ``global_batch_size``: the KL keeps the default ``token_level_loss=True``
    in every mode. ``loss = actor_loss + kl_loss * kl_ctl`` (line 339). The policy term is
    ``PolicyLoss.forward``'s "ppo" path without dual clip or IS correction (``models/loss.py``).
    """
    ratio = (log_probs - old_log_probs).clamp(min=-20.0, max=20.0).exp()
    surr1, surr2 = ratio * advantages, ratio.clamp(1 - 0.2, 1 + 0.2) * advantages
    policy = openrlhf_aggregate_loss(-torch.min(surr1, surr2), action_mask, loss_agg_mode == "token-mean")
    kl = openrlhf_approx_kl(log_probs, base_log_probs, kl_estimator="k3")
    return policy + openrlhf_aggregate_loss(kl, action_mask) * kl_coef


def openrlhf_k3(log_probs, log_probs_base):
    """OpenRLHF 0.11.2 ``compute_approx_kl(kl_estimator="k3")``, the default gradient path."""
    return openrlhf_approx_kl(log_probs, log_probs_base)


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
    # TRL's nanstd computes Bessel's factor count / (count - 1) from integer counts, in torch's default
    # float32 even for float64 rewards: relative differences up to ~3e-8
    np.testing.assert_allclose(ours, expected, rtol=1e-7, atol=1e-12)


def trl_normalize_then_sum(rewards_per_func, num_generations, reward_weights):
    """TRL 1.16.0 ``_generate_and_score_completions``, ``multi_objective_aggregation="normalize_then_sum"``
    (``grpo_trainer.py`` lines 2790–2799; no unscorable completions, G > 1)."""
    from trl.trainer.utils import nanstd

    grouped = rewards_per_func.view(-1, num_generations, rewards_per_func.shape[-1])
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = nanstd(grouped, dim=1, keepdim=True)
    reward_k = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, rewards_per_func.shape[-1])
    rewards = (reward_k * reward_weights.unsqueeze(0)).nansum(dim=1)
    std_rewards = nanstd(rewards).expand_as(rewards)
    return (rewards - torch.nanmean(rewards)) / (std_rewards + 1e-4)


@settings(max_examples=30, deadline=None)
@given(rewards_batches)
def test_trl_normalize_then_sum_with_one_reward_is_group_then_batch_standardisation(rewards):
    if rewards.size < 2:
        return
    expected = trl_normalize_then_sum(torch.tensor(rewards.reshape(-1, 1)), rewards.shape[1], torch.ones(1))
    per_group = group_advantages(rewards, eps=1e-4, ddof=1)
    ours = group_advantages(per_group, eps=1e-4, ddof=1, scale="batch").reshape(-1)
    np.testing.assert_allclose(ours, expected.numpy(), rtol=1e-6, atol=1e-9)  # nanstd's float32 Bessel factor


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


@settings(max_examples=60, deadline=None)
@given(rewards_batches, st.booleans())
def test_openrlhf_reinforce_baseline_is_the_group_mean_then_batch_whitening(rewards, no_std_norm):
    # not eq. (3): centre on the group mean (Dr. GRPO's Â), then whiten over the whole batch
    centered = group_advantages(rewards, scale="none")
    whitened = centered - centered.mean()
    if not no_std_norm:
        whitened = whitened / np.sqrt(max(whitened.var(), 1e-8))
    expected = openrlhf_advantages(torch.tensor(rewards), "reinforce_baseline", no_std_norm)
    np.testing.assert_allclose(whitened, expected, atol=1e-9)


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


def test_k3_clamps_the_log_ratio_at_20_not_the_value_at_10():
    # book/production-formulas.md, "Clamps on k3": kl_k3(0, 30) is e^20 − 21 (log ρ clamped), verl's value is 10
    zero, thirty = torch.tensor([0.0], dtype=torch.float64), torch.tensor([30.0], dtype=torch.float64)
    assert float(kl_k3(zero, thirty)) == pytest.approx(math.exp(20) - 21, rel=1e-12)
    assert float(verl_low_var_kl(zero, thirty)) == 10.0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(-60, 0), st.floats(-60, 0), st.floats(-60, 0)), min_size=1, max_size=20))
def test_k3_ratio_stays_below_e40_from_any_log_probs(triples):
    # r <= e^20 and k3 <= e^20 − 21, both clamped: r·k3 < e^40; kl_k3_ratio([-20], [0], [-40]) reaches e^20(e^20 − 21)
    logp, ref, old = (np.array(column) for column in zip(*triples, strict=True))
    assert (kl_k3_ratio(logp, ref, old) < math.exp(40)).all()
    extreme = kl_k3_ratio(np.array([-20.0]), np.array([0.0]), np.array([-40.0]))
    assert float(extreme[0]) == pytest.approx(math.exp(20) * (math.exp(20) - 21), rel=1e-12)


log_prob_triples = st.lists(
    st.tuples(st.floats(-6, -0.01), st.floats(-1.5, 1.5), st.floats(-1.0, 1.0)), min_size=1, max_size=20
)


def _per_token_grad(estimator, logp, *others):
    logp = logp.clone().requires_grad_()
    (grad,) = torch.autograd.grad(estimator(logp, *others).sum(), logp)
    return grad


@settings(max_examples=80, deadline=None)
@given(log_prob_triples)
def test_k3_plus_is_verl_k3_plus_value_and_gradient(triples):
    logp, ref_shift, _ = (torch.tensor(column, dtype=torch.float64) for column in zip(*triples, strict=True))
    ref = logp + ref_shift
    torch.testing.assert_close(kl_k3_plus(logp, ref), verl_k3_plus(logp, ref), rtol=1e-12, atol=1e-12)
    ours, verl = _per_token_grad(kl_k3_plus, logp, ref), _per_token_grad(verl_k3_plus, logp, ref)
    torch.testing.assert_close(ours, verl, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours, kl_k1(logp, ref), rtol=1e-12, atol=1e-12)  # ∇k2 = k1 · ∇log π
    assert np.array_equal(kl_k3_plus(logp.numpy(), ref.numpy()), kl_k3(logp.numpy(), ref.numpy()))


@settings(max_examples=80, deadline=None)
@given(log_prob_triples)
def test_k3_ratio_gradient_is_openrlhf_unbiased_gradient(triples):
    # ∇(r·k3) = r·k1·∇log π per token, which is OpenRLHF's unbiased_gradient (its weight w = r, capped at 10);
    # the values differ: OpenRLHF keeps k3's value, TRL's r·k3 is the importance-weighted one
    logp, ref_shift, old_shift = (torch.tensor(column, dtype=torch.float64) for column in zip(*triples, strict=True))
    ref, old = logp + ref_shift, logp + old_shift  # |log r| <= 1 keeps w = r < 10
    ours = _per_token_grad(kl_k3_ratio, logp, ref, old)

    def openrlhf(logp, ref, old):
        return openrlhf_approx_kl(logp, ref, old, "k3", unbiased_gradient=True)

    torch.testing.assert_close(ours, _per_token_grad(openrlhf, logp, ref, old).double(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours, torch.exp(logp - old) * kl_k1(logp, ref), rtol=1e-12, atol=1e-12)
    ratio = torch.exp(logp - old)
    torch.testing.assert_close(kl_k3_ratio(logp, ref, old), ratio * kl_k3(logp, ref), rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(log_prob_triples)
def test_plain_k3_gradient_is_not_the_chapter_direction(triples):
    # ∇k3 = (1 − π_ref/π_θ)·∇log π: whose expectation under π_θ is ∇KL(π_ref‖π_θ), not k1's weight
    logp, ref_shift, _ = (torch.tensor(column, dtype=torch.float64) for column in zip(*triples, strict=True))
    ref = logp + ref_shift
    grad = _per_token_grad(kl_k3, logp, ref)
    torch.testing.assert_close(grad, 1 - torch.exp(ref - logp), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(_per_token_grad(kl_k2, logp, ref), kl_k1(logp, ref), rtol=1e-12, atol=1e-12)


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


CLIP_METRICS = ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean")


@settings(max_examples=100, deadline=None)
@given(
    token_batches(max_log_ratio=1.0),
    st.sampled_from(["grpo", "bnpo", "dr_grpo", "dapo"]),
    st.floats(0.0, 0.1),
    st.floats(0.0, 0.1),
    st.booleans(),
    st.sampled_from([None, 1.5, 2.0]),
    st.sampled_from(["token", "sequence"]),
)
def test_trl_compute_loss_equals_grpo_token_loss(batch, loss_type, beta, extra, bias_correction, delta, level):
    # TRL's use_bias_correction_kl=True (its default) is kl_estimator="k3_ratio"; False is eq. (8)'s plain k3
    logps, old, ref, adv, mask = batch
    logps = logps.clone().requires_grad_()
    width = logps.shape[1]
    options = {"max_completion_length": width + 2, "num_items_in_batch": int(mask.sum()) + 3}
    trl, trl_metrics = trl_loss(
        logps, old, ref, adv, mask, beta=beta, epsilon_low=0.2, epsilon_high=0.2 + extra, loss_type=loss_type,
        use_bias_correction_kl=bias_correction, delta=delta, importance_sampling_level=level, **options,
    )  # fmt: skip
    (trl_grad,) = torch.autograd.grad(trl, logps)
    ours, metrics = grpo_token_loss(
        logps, old, ref, adv, mask, beta=beta, eps_low=0.2, eps_high=0.2 + extra, loss_type=loss_type,
        kl_estimator="k3_ratio" if bias_correction else "k3", delta=delta, importance_sampling_level=level, **options,
    )  # fmt: skip
    (grad,) = torch.autograd.grad(ours, logps)
    assert float(ours.detach()) == pytest.approx(float(trl.detach()), rel=1e-10, abs=1e-12)
    torch.testing.assert_close(grad, trl_grad, rtol=1e-9, atol=1e-12)
    if beta > 0:
        assert metrics["kl"] == pytest.approx(trl_metrics["kl"], rel=1e-10, abs=1e-12)
    if level == "token":  # at the sequence level TRL counts clipped sequences, grpo_token_loss clipped tokens
        for name in CLIP_METRICS:
            assert metrics[name] == pytest.approx(trl_metrics[name], abs=1e-12)


def test_trl_counts_sequence_level_clips_per_sequence_grpo_core_per_token():
    # two completions of 1 and 3 tokens, sequence ratios e^{+1} and 1 with Â = +1: the first is clipped
    logps = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    old = torch.zeros_like(logps)
    mask = torch.tensor([[1, 0, 0], [1, 1, 1]], dtype=torch.int32)
    adv = torch.tensor([1.0, 1.0], dtype=torch.float64)
    options = {"beta": 0.0, "loss_type": "bnpo", "importance_sampling_level": "sequence"}
    trl, trl_metrics = trl_loss(logps, old, None, adv, mask, epsilon_low=0.2, epsilon_high=0.2, **options)
    ours, metrics = grpo_token_loss(logps, old, None, adv, mask, **options)
    assert float(ours) == pytest.approx(float(trl), abs=1e-15)
    assert trl_metrics["clip_ratio/high_mean"] == pytest.approx(1 / 2)  # one of two sequences
    assert metrics["clip_ratio/high_mean"] == pytest.approx(1 / 4)  # one of four tokens


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


@settings(max_examples=100, deadline=None)
@given(token_batches(), st.floats(0.0, 0.1))
def test_openrlhf_kl_loss_is_a_token_mean_in_every_mode(batch, beta):
    # OpenRLHF averages the policy term as loss_agg_mode says but the KL term per token, so its
    # "seq-mean-token-mean" is grpo_token_loss's "grpo" policy term plus "bnpo"'s KL term:
    # grpo(β = 0) + [bnpo(β) − bnpo(0)]; its "token-mean" (one process) is "bnpo" whole
    logps, old, ref, adv, mask = batch
    logps = logps.clone().requires_grad_()

    def ours(loss_type, beta):
        return grpo_token_loss(logps, old, ref, adv, mask, beta=beta, loss_type=loss_type)[0]

    cases = {
        "seq-mean-token-mean": ours("grpo", 0.0) + (ours("bnpo", beta) - ours("bnpo", 0.0)),
        "token-mean": ours("bnpo", beta),
    }
    for mode, recomposed in cases.items():
        expected = openrlhf_actor_loss(logps, old, ref, adv[:, None], mask, mode, beta)
        value, expected_value = float(recomposed.detach()), float(expected.detach())
        assert value == pytest.approx(expected_value, rel=1e-5, abs=1e-6)  # OpenRLHF computes its KL in float32
        (grad,) = torch.autograd.grad(recomposed, logps)
        (expected_grad,) = torch.autograd.grad(expected, logps)
        torch.testing.assert_close(grad, expected_grad.double(), rtol=1e-5, atol=1e-6)


def test_openrlhf_seq_mean_token_mean_is_not_grpo_with_the_kl_inside():
    # lengths 1 and 3, KL only on the 1-token completion: per sequence it would weigh 1/2, per token it weighs 1/4
    logps = torch.tensor([[-1.0, 0.0, 0.0], [-1.0, -1.0, -1.0]], dtype=torch.float64)
    ref = torch.tensor([[-2.0, 0.0, 0.0], [-1.0, -1.0, -1.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 0, 0], [1, 1, 1]], dtype=torch.int32)
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    k3 = float(kl_k3(torch.tensor(-1.0, dtype=torch.float64), torch.tensor(-2.0, dtype=torch.float64)))
    openrlhf = openrlhf_actor_loss(logps, logps, ref, adv[:, None], mask, "seq-mean-token-mean", 1.0)
    assert float(openrlhf) == pytest.approx(k3 / 4, rel=1e-6)  # policy terms cancel: (−1 + 1)/2 = 0
    grpo_inside, _ = grpo_token_loss(logps, logps, ref, adv, mask, beta=1.0, loss_type="grpo")
    assert float(grpo_inside) == pytest.approx(k3 / 2, rel=1e-12)


def test_verl_dual_clip_is_a_divergence():
    # Â = −1 and ratio 4: eq. (7) gives −min(4·(−1), 1.2·(−1)) = 4; verl's dual clip caps it at −Â·3 = 3
    old = torch.zeros(1, 1, dtype=torch.float64)
    logps = old + math.log(4.0)
    adv, mask = torch.tensor([-1.0], dtype=torch.float64), torch.ones(1, 1)
    ours, _ = grpo_token_loss(logps, old, None, adv, mask, beta=0.0)
    assert float(ours) == pytest.approx(4.0)
    assert float(verl_actor_loss(old, logps, old, adv[:, None], mask, "token-mean")) == pytest.approx(3.0)


@settings(max_examples=80, deadline=None)
@given(token_batches(max_log_ratio=2.0), st.sampled_from(["token-mean", "seq-mean-token-mean"]))
def test_verl_dual_clip_is_the_two_sided_clip_with_delta_equal_to_clip_ratio_c(batch, verl_mode):
    # verl's max(min(r·Â, clip(r)·Â), 3·Â) for Â < 0 and TRL's min(min(r, δ)·Â, clip(r)·Â) agree when δ = 3
    logps, old, _, adv, mask = batch
    loss_type = "bnpo" if verl_mode == "token-mean" else "grpo"
    ours, _ = grpo_token_loss(logps, old, None, adv, mask, beta=0.0, loss_type=loss_type, delta=3.0)
    verl = verl_actor_loss(old, logps, old, adv[:, None], mask, verl_mode)
    assert float(ours) == pytest.approx(float(verl), rel=1e-9, abs=1e-12)


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


# -- the expected gradient of each KL estimator, by enumeration (notebook 06) ----------------------

logit_vectors = st.lists(st.floats(-3, 3), min_size=2, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.tuples(logit_vectors, logit_vectors, logit_vectors).filter(lambda t: len({len(v) for v in t}) == 1))
def test_expected_kl_gradients_by_enumeration(vectors):
    theta0, ref_logits, old_logits = (torch.tensor(v, dtype=torch.float64) for v in vectors)
    ref, old = torch.log_softmax(ref_logits, -1), torch.log_softmax(old_logits, -1)

    def expected(estimator, sampling_logp):
        theta = theta0.clone().requires_grad_()
        logp = torch.log_softmax(theta, -1)
        (grad,) = torch.autograd.grad((sampling_logp.exp() * estimator(logp, old)).sum(), theta)
        return grad

    def exact(kl):
        theta = theta0.clone().requires_grad_()
        (grad,) = torch.autograd.grad(kl(torch.log_softmax(theta, -1)), theta)
        return grad

    forward = exact(lambda logp: (logp.exp() * (logp - ref)).sum())  # ∇KL(π_θ‖π_ref)
    reverse = exact(lambda logp: (ref.exp() * (ref - logp)).sum())  # ∇KL(π_ref‖π_θ)
    on = torch.log_softmax(theta0, -1)
    close = {"rtol": 1e-9, "atol": 1e-12}
    torch.testing.assert_close(expected(lambda logp, _: kl_k1(logp, ref), on), torch.zeros_like(forward), **close)
    torch.testing.assert_close(expected(lambda logp, _: kl_k2(logp, ref), on), forward, **close)
    torch.testing.assert_close(expected(lambda logp, _: kl_k3(logp, ref), on), reverse, **close)
    torch.testing.assert_close(expected(lambda logp, _: kl_k3_plus(logp, ref), on), forward, **close)
    # off-policy (o ~ π_θ_old): only the ratio-weighted k3 keeps the chapter's direction
    torch.testing.assert_close(expected(lambda logp, old: kl_k3_ratio(logp, ref, old), old), forward, **close)


# -- the new options refuse bad values, naming the argument ----------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delta": 1.2}, "delta must be > 1 \\+ eps_high"),
        ({"delta": 1.3, "eps_high": 0.3}, "delta must be > 1 \\+ eps_high"),
        ({"kl_estimator": "k2"}, "kl_estimator must be one of"),
        ({"importance_sampling_level": "sequences"}, "importance_sampling_level must be one of"),
    ],
)
def test_token_loss_options_refuse_bad_values(options, message):
    logps = torch.zeros(2, 3, dtype=torch.float64)
    mask, adv = torch.ones(2, 3), torch.tensor([1.0, -1.0], dtype=torch.float64)
    with pytest.raises(ValueError, match=message):
        grpo_token_loss(logps, logps, logps, adv, mask, **options)


def test_objective_options_match_the_token_loss_on_one_token_completions():
    # one action per sample: grpo_objective(kl_estimator, delta) is minus the token loss with the same options
    rng = np.random.default_rng(3)
    old = rng.normal(-1.5, 0.3, 6)
    logp, ref, adv = old + rng.normal(0, 0.6, 6), old + rng.normal(0, 0.5, 6), rng.normal(0, 1, 6)
    for kl_estimator in ("k3", "k3_ratio", "k3_plus"):
        ours = grpo_objective(logp, old, ref, adv, beta=0.1, kl_estimator=kl_estimator, delta=1.5)
        tensors = [torch.tensor(x)[:, None] for x in (logp, old, ref)]
        loss, _ = grpo_token_loss(
            *tensors, torch.tensor(adv), torch.ones(6, 1), beta=0.1, kl_estimator=kl_estimator, delta=1.5
        )
        assert ours == pytest.approx(-float(loss), rel=1e-12)
    with pytest.raises(ValueError, match="kl_estimator"):
        grpo_objective(logp, old, ref, adv, kl_estimator="k1")
