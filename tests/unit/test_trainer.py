"""The one trainer flow of the bandit methods (grpo_core.bandit.trainer): a method is a config type and an update."""

from dataclasses import dataclass

import numpy as np
import pytest

from grpo_core.bandit import (
    BanditDPO,
    BanditGRPO,
    BanditPPO,
    BanditRLOO,
    BanditTrainer,
    DPOConfig,
    GRPOConfig,
    PPOConfig,
    PromptSetGRPO,
    RLOOConfig,
    reinforce_gradient,
    run_seeds,
    track,
)

SUCCESS = [[0.1, 0.9, 0.5, 0.2], [0.5, 0.5, 0.2, 0.1]]


@dataclass(frozen=True)
class ReinforceConfig:
    group_size: int = 4
    lr: float = 0.5


class BanditReinforce(BanditTrainer):
    """A fifth method in one class with one method: plain REINFORCE, rewards as advantages."""

    config_type = ReinforceConfig

    def update(self):
        actions, rewards = self.draw(self.config.group_size)
        self.logits = self.logits + self.config.lr * reinforce_gradient(self.logits, actions, rewards)
        return actions


def test_a_new_method_is_a_config_type_and_an_update():
    run = BanditReinforce(seed=3)
    assert run.config == ReinforceConfig()
    history = track(run, 30)
    assert len(run.history) == 30 and history.samples[-1] == 120
    assert history.expected_reward[-1] > history.expected_reward[0]
    run.reset()
    assert run.history == [] and run.samples_drawn == 0
    for replayed, fresh in zip(run.run(30), BanditReinforce(seed=3).run(30), strict=True):
        np.testing.assert_array_equal(replayed, fresh)
    with pytest.raises(TypeError, match="config must be a ReinforceConfig, got GRPOConfig"):
        BanditReinforce(config=GRPOConfig())


@dataclass(frozen=True)
class PushConfig:
    lr: float = 1.0


class BanditPush(BanditTrainer):
    """A method with no clip and no bound: each update pushes arm A's logit up by ``lr``."""

    config_type = PushConfig

    def update(self):
        self.logits = self.logits + self.config.lr * np.eye(self.logits.size)[0]
        return self.logits


def test_a_diverging_run_names_the_step_and_the_learning_rate():
    run = BanditPush(config=PushConfig(lr=1e308))
    message = r"^step 2: the update overflowed the logits \(lr=1e\+308 is likely too large"
    with pytest.raises(ValueError, match=message), np.errstate(over="ignore", invalid="ignore"):
        run.run(50)
    assert len(run.history) == 1 and np.isfinite(run.logits).all()


@pytest.mark.parametrize(
    ("make", "config"),
    [
        (lambda config: BanditGRPO(config=config), GRPOConfig(lr=1e9)),
        (lambda config: BanditPPO(config=config), PPOConfig(lr=1e9)),
        (lambda config: PromptSetGRPO(SUCCESS, config), GRPOConfig(lr=1e9)),
    ],
)
def test_the_clamped_ratio_keeps_the_largest_learning_rate_finite(make, config):
    """Log-ratios beyond ±20 carry no gradient (grpo_core.clipping), so a huge step saturates instead of diverging."""
    run = make(config)
    run.run(50)
    assert len(run.history) == 50 and np.isfinite(run.logits).all()


def test_the_step_number_counts_the_updates_before_the_overflow():
    run = BanditPush(seed=0)
    run.run(5)
    run.configure(lr=1e308)
    run.step()
    message = r"^step 7: .*lr=1e\+308 is likely too large; try lr <= 1e\+307\)$"
    with pytest.raises(ValueError, match=message), np.errstate(over="ignore", invalid="ignore"):
        run.step()
    assert len(run.history) == 6


@pytest.mark.parametrize(
    ("make", "extra"),
    [
        (lambda seed: BanditGRPO(config=GRPOConfig(group_size=4), seed=seed), {"group_reward", "clip_fraction"}),
        (lambda seed: BanditPPO(config=PPOConfig(batch_size=4), seed=seed), {"value"}),
        (lambda seed: BanditRLOO(config=RLOOConfig(group_size=4), seed=seed), set()),
        (lambda seed: BanditDPO(config=DPOConfig(num_pairs=8), seed=seed), set()),
        (lambda seed: PromptSetGRPO(SUCCESS, GRPOConfig(group_size=4), seed=seed), set()),
    ],
)
def test_every_method_records_one_snapshot_that_it_may_extend(make, extra):
    history = run_seeds(make, 4, [0, 1])
    assert set(history.curves) == {"expected_reward", "p_best", "kl", "entropy", "samples"} | extra
    for values in history.curves.values():
        assert values.shape == (2, 5)
    run = make(0)
    run.run(4)
    assert history["entropy"][0, -1] == pytest.approx(run.snapshot()["entropy"])


def test_grpo_snapshot_reads_the_last_group():
    run = BanditGRPO(config=GRPOConfig(group_size=4), seed=1)
    assert np.isnan(run.snapshot()["group_reward"]) and np.isnan(run.snapshot()["clip_fraction"])
    result = run.step()
    assert run.snapshot()["group_reward"] == result.reward_mean
    assert run.snapshot()["clip_fraction"] == result.clip_fraction


def test_prompt_set_shares_the_flow():
    run = PromptSetGRPO(SUCCESS, GRPOConfig(group_size=4), seed=0)
    assert isinstance(run, BanditTrainer)
    assert run.expected_reward == pytest.approx(np.mean(SUCCESS, axis=1).mean())
    assert run.snapshot()["p_best"] == pytest.approx(np.mean([0.25, 0.5]))
    run.configure(beta=0.0)
    assert run.config.beta == 0.0


def test_run_seeds_gives_every_curve_of_a_grpo_run_from_its_step_results():
    """Notebook 07's learning curves, read off run_seeds instead of rebuilt from the step results."""
    config = GRPOConfig(group_size=4)
    history = run_seeds(lambda seed: BanditGRPO(config=config, seed=seed), 12, [0, 1])
    for seed in (0, 1):
        steps = BanditGRPO(config=config, seed=seed).run(12)
        after = {
            "group_reward": [step.reward_mean for step in steps],
            "p_best": [step.probs[1] for step in steps],
            "kl": [step.kl for step in steps],
            "entropy": [step.entropy for step in steps],
            "clip_fraction": [step.clip_fraction for step in steps],
        }
        for key, values in after.items():
            np.testing.assert_allclose(history[key][seed, 1:], values, err_msg=key)
        old_value = [step.old_probs @ np.array([0.2, 0.9, 0.4, 0.1]) for step in steps]
        np.testing.assert_allclose(history["expected_reward"][seed, :-1], old_value)
