"""§10 on a real sequence policy: the digit-sum checker, sampling, determinism and a short GRPO run."""

import dataclasses

import numpy as np
import pytest
import torch

from grpo_core.sequence.grpo import SequenceGRPO, SequenceGRPOConfig
from grpo_core.sequence.policy import GRUPolicy, warm_start
from grpo_core.sequence.task import EOS, DigitSumTask

TASK = DigitSumTask()  # targets 2..9, digits 1..3, at most 8 tokens


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one thread is fastest and keeps every run identical."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# -- the checker ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "tokens", "reward"),
    [
        (6, [3, 3, EOS], 1.0),
        (6, [2, 2, 2, EOS], 1.0),
        (6, [1, 2, 1, 2, EOS], 1.0),
        (6, [3, 3, EOS, 1, 1], 1.0),  # what follows the first EOS is padding
        (6, [3, 3], 0.0),  # no EOS: truncated
        (6, [3, 2, EOS], 0.0),  # sums to 5
        (6, [3, 3, 1, EOS], 0.0),  # overshoots
        (2, [EOS], 0.0),  # empty answer
        (7, [1, 1, 1, 1, 1, 1, 1, EOS], 1.0),  # EOS in the last allowed slot (8 tokens)
        (8, [1, 1, 1, 1, 1, 1, 1, 1, EOS], 0.0),  # EOS at token 9 > max_length
        (6, [5, 1, EOS], 0.0),  # 5 is no digit of the task (a prompt id)
    ],
)
def test_checker_goldens(target, tokens, reward):
    assert TASK.reward(target, tokens) == reward


def test_batch_rewards_and_rendering():
    targets = torch.tensor([6, 4])
    completions = torch.tensor([[3, 3, EOS, EOS], [1, 1, 1, 1]])
    assert TASK.rewards(targets, completions).tolist() == [1.0, 0.0]
    assert [TASK.render(row) for row in completions] == ["33⏎", "1111…"]
    with pytest.raises(ValueError, match="rewards needs targets"):
        TASK.rewards(targets, completions[:1])


def test_task_rejects_a_max_length_too_short_for_the_largest_target():
    with pytest.raises(ValueError, match="too short"):
        DigitSumTask(max_target=9, max_digit=3, max_length=3)  # 9 needs 333 and EOS: 4 tokens
    with pytest.raises(ValueError, match="max_target"):
        DigitSumTask(min_target=5, max_target=4)


def test_clean_demonstrations_are_always_correct_and_fit():
    generator = torch.Generator().manual_seed(0)
    targets = TASK.sample_targets(500, generator)
    assert int(targets.min()) == TASK.min_target and int(targets.max()) == TASK.max_target
    tokens, mask = TASK.demonstrations(targets, generator, noise=0.0)
    assert tokens.shape == (500, TASK.max_length)
    assert TASK.rewards(targets, tokens).tolist() == [1.0] * 500
    lengths = mask.sum(-1)
    assert bool((tokens[torch.arange(500), lengths - 1] == EOS).all())  # the last unmasked token is EOS
    assert len(set(lengths.tolist())) > 3  # right answers come in several lengths


def test_noisy_demonstrations_are_sometimes_wrong_but_always_end():
    generator = torch.Generator().manual_seed(1)
    targets = TASK.sample_targets(500, generator)
    tokens, mask = TASK.demonstrations(targets, generator, noise=0.7)
    accuracy = float(TASK.rewards(targets, tokens).mean())
    assert 0.2 < accuracy < 0.9
    assert bool((tokens[torch.arange(500), mask.sum(-1) - 1] == EOS).all())


# -- the policy: sampling and scoring -------------------------------------------------------------


def test_sampling_shapes_masks_and_eos():
    policy = GRUPolicy(TASK, seed=0)  # untrained: EOS comes late or never, some truncations
    targets = TASK.sample_targets(16, torch.Generator().manual_seed(0)).repeat_interleave(8)
    batch = policy.sample(targets, torch.Generator().manual_seed(1))
    width = batch.tokens.shape[1]
    assert batch.tokens.shape == batch.mask.shape == batch.sampling_logps.shape == (128, width)
    assert width == int(batch.lengths.max()) <= TASK.max_length
    assert torch.equal(batch.mask, torch.arange(width) < batch.lengths[:, None])
    ended = ~batch.truncated
    rows = torch.arange(128)
    assert bool((batch.tokens[rows[ended], batch.lengths[ended] - 1] == EOS).all())
    assert bool((batch.tokens[batch.mask & (batch.tokens == EOS)] == EOS).all())
    for row in rows[ended].tolist():  # exactly one EOS inside the mask: the last token
        assert int((batch.tokens[row, : batch.lengths[row]] == EOS).sum()) == 1
    assert bool((batch.lengths[batch.truncated] == TASK.max_length).all())
    assert not bool((batch.tokens[batch.truncated][:, : TASK.max_length] == EOS).any())
    assert bool(batch.truncated.any()) and bool(ended.any())
    assert bool((batch.tokens[~batch.mask] == EOS).all()) and bool((batch.sampling_logps[~batch.mask] == 0).all())
    assert bool((batch.sampling_logps[batch.mask] < 0).all())


def test_scoring_recovers_the_sampler_log_probs():
    policy = GRUPolicy(TASK, seed=3)
    targets = TASK.sample_targets(32, torch.Generator().manual_seed(0))
    batch = policy.sample(targets, torch.Generator().manual_seed(2))
    with torch.no_grad():
        scored = policy.token_logps(targets, batch.tokens)
    torch.testing.assert_close(scored[batch.mask], batch.sampling_logps[batch.mask], rtol=1e-5, atol=1e-6)


def test_same_seed_same_samples_and_weights():
    a, b, c = GRUPolicy(TASK, seed=5), GRUPolicy(TASK, seed=5), GRUPolicy(TASK, seed=6)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters(), strict=True))
    targets = torch.arange(2, 10).repeat_interleave(4)
    first = a.sample(targets, torch.Generator().manual_seed(9))
    second = b.sample(targets, torch.Generator().manual_seed(9))
    other = a.sample(targets, torch.Generator().manual_seed(10))
    assert torch.equal(first.tokens, second.tokens) and torch.equal(first.sampling_logps, second.sampling_logps)
    assert not torch.equal(first.tokens, other.tokens)


def test_bad_arguments():
    with pytest.raises(TypeError, match="DigitSumTask"):
        GRUPolicy("digits")
    with pytest.raises(ValueError, match="hidden"):
        GRUPolicy(TASK, hidden=0)
    with pytest.raises(ValueError, match="temperature"):
        GRUPolicy(TASK).sample(torch.tensor([3]), torch.Generator(), temperature=0.0)
    with pytest.raises(ValueError, match="group_size"):
        SequenceGRPOConfig(group_size=1)
    with pytest.raises(ValueError, match="loss_type"):
        SequenceGRPOConfig(loss_type="sum")
    with pytest.raises(TypeError, match="mask_truncated"):
        SequenceGRPOConfig(mask_truncated=1)
    with pytest.raises(TypeError, match="GRUPolicy"):
        SequenceGRPO(TASK)
    with pytest.raises(TypeError, match="SequenceGRPOConfig"):
        SequenceGRPO(GRUPolicy(TASK), config={"beta": 0.0})
    with pytest.raises(ValueError, match="eps_high"):
        SequenceGRPOConfig(eps_high=-0.1)
    with pytest.raises(TypeError, match="GRUPolicy"):
        warm_start(TASK, torch.Generator())
    with pytest.raises(ValueError, match="noise"):
        TASK.demonstrations(torch.tensor([3]), torch.Generator(), noise=-0.1)


# -- GRPO on the sequence policy --------------------------------------------------------------------


def test_one_iteration_freezes_old_and_ref_and_broadcasts_advantages():
    policy = GRUPolicy(TASK, seed=0)
    warm_start(policy, torch.Generator().manual_seed(0), steps=20)
    run = SequenceGRPO(policy, SequenceGRPOConfig(prompts_per_step=4, group_size=4), seed=0)
    batch = run.collect()
    assert batch.advantages.shape == (16,)
    grouped = batch.advantages.reshape(4, 4)
    assert torch.allclose(grouped.sum(-1), torch.zeros(4), atol=1e-5)  # centred within each group
    with torch.no_grad():  # θ_old and π_ref equal the policy before the update (π_ref: a frozen copy)
        torch.testing.assert_close(batch.old_logps, policy.token_logps(batch.targets, batch.completions.tokens))
        torch.testing.assert_close(batch.ref_logps, batch.old_logps)
    before = [p.clone() for p in run.ref_policy.parameters()]
    metrics = run.update(batch)
    assert all(torch.equal(p, q) for p, q in zip(before, run.ref_policy.parameters(), strict=True))
    assert not any(p.requires_grad for p in run.ref_policy.parameters())
    assert set(metrics) == {"kl", "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "loss"}
    assert metrics["kl"] > 0  # the policy moved away from π_ref during the inner epochs


def test_mask_truncated_drops_truncated_completions_from_the_loss():
    policy = GRUPolicy(TASK, seed=0)  # untrained: truncations are common
    run = SequenceGRPO(policy, SequenceGRPOConfig(mask_truncated=True), seed=0)
    batch = run.collect()
    truncated = batch.completions.truncated
    assert bool(truncated.any())
    assert not bool(batch.loss_mask[truncated].any())
    assert torch.equal(batch.loss_mask[~truncated], batch.completions.mask[~truncated])


def test_runs_are_deterministic():
    def history(seed):
        policy = GRUPolicy(TASK, seed=0)
        warm_start(policy, torch.Generator().manual_seed(0), steps=10)
        run = SequenceGRPO(policy, SequenceGRPOConfig(prompts_per_step=4), seed=seed)
        run.run(3)
        return run.curves()

    first, second, other = history(1), history(1), history(2)
    assert set(first) == set(second)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])  # bit for bit, run after run
    assert not np.array_equal(first["loss"], other["loss"])


def test_short_training_run_raises_the_reward():
    policy = GRUPolicy(TASK, seed=0)
    warm_start(policy, torch.Generator().manual_seed(0), steps=60)
    run = SequenceGRPO(policy, SequenceGRPOConfig(lr=3e-3), seed=0)
    before = run.evaluate(prompts=64, group_size=8)
    run.run(15)
    after = run.evaluate(prompts=64, group_size=8)
    assert after > before + 0.15
    curves = run.curves()
    assert set(curves) >= {"reward", "zero_std_fraction", "mean_length", "kl", "clip_region"}
    assert curves["reward"][-5:].mean() > curves["reward"][:5].mean()


def test_a_batch_with_nothing_to_learn_from_leaves_the_policy_alone():
    run = SequenceGRPO(GRUPolicy(TASK, seed=0), SequenceGRPOConfig(mask_truncated=True), seed=0)
    assert run.curves() == {}
    batch = run.collect()
    silent = dataclasses.replace(batch, loss_mask=torch.zeros_like(batch.loss_mask))  # e.g. every completion truncated
    before = [p.clone() for p in run.policy.parameters()]
    assert run.update(silent) == {}
    assert all(torch.equal(p, q) for p, q in zip(before, run.policy.parameters(), strict=True))
