"""§8: one trainer shape and one history shape for GRPO, RLOO, PPO and DPO."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core import BanditGRPO, GRPOConfig, categorical_kl
from grpo_core.bandit import BanditTrainer
from grpo_core.bandit.dpo import BanditDPO, DPOConfig
from grpo_core.bandit.ppo import BanditPPO, PPOConfig
from grpo_core.bandit.rloo import BanditRLOO, RLOOConfig
from grpo_core.bandit.runs import RunHistory, run_seeds, track

MAKERS = {
    "grpo": lambda seed: BanditGRPO(config=GRPOConfig(group_size=4), seed=seed),
    "rloo": lambda seed: BanditRLOO(config=RLOOConfig(group_size=4), seed=seed),
    "ppo": lambda seed: BanditPPO(config=PPOConfig(batch_size=4), seed=seed),
    "dpo": lambda seed: BanditDPO(config=DPOConfig(num_pairs=10), seed=seed),
}


@pytest.mark.parametrize("method", MAKERS)
def test_track_records_the_start_and_every_step(method):
    trainer = MAKERS[method](0)
    history = track(trainer, 6)
    assert isinstance(history, RunHistory) and history.steps == 6
    # uniform start: V = mean of the table = 0.4, π(B) = 1/4, KL = 0
    assert history.expected_reward[0] == pytest.approx(0.4)
    assert history.p_best[0] == pytest.approx(0.25)
    assert history.kl[0] == 0.0
    assert history.expected_reward[-1] == pytest.approx(trainer.probs @ [0.2, 0.9, 0.4, 0.1])
    assert history.kl[-1] == pytest.approx(categorical_kl(trainer.probs, np.full(4, 0.25)))
    assert history.p_best[-1] == pytest.approx(trainer.probs[1])
    np.testing.assert_array_equal(history.final_probs, trainer.probs)
    expected_samples = np.full(7, 20) if method == "dpo" else 4 * np.arange(7)
    np.testing.assert_array_equal(history.samples, expected_samples)
    assert history.wall_time >= 0


def test_run_seeds_stacks_and_replays():
    first = run_seeds(MAKERS["rloo"], 5, range(3))
    second = run_seeds(MAKERS["rloo"], 5, [0, 1, 2])
    assert first.expected_reward.shape == first.kl.shape == first.samples.shape == (3, 6)
    assert first.final_probs.shape == (3, 4)
    np.testing.assert_allclose(first.final_probs.sum(axis=1), 1.0)
    np.testing.assert_array_equal(first.expected_reward, second.expected_reward)
    assert not np.array_equal(first.expected_reward[0], first.expected_reward[1])


def test_p_best_adds_up_tied_best_arms():
    trainer = BanditRLOO(rewards=[1.0, 1.0, 0.0], config=RLOOConfig(group_size=3), seed=0)
    history = track(trainer, 3)
    assert history.p_best[0] == pytest.approx(2 / 3)
    assert history.p_best[-1] == pytest.approx(trainer.probs[:2].sum())


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from(sorted(MAKERS)))
def test_histories_stay_in_range(seed, method):
    history = track(MAKERS[method](seed), 4)
    assert np.all((history.p_best >= 0) & (history.p_best <= 1))
    assert np.all((history.expected_reward >= 0.1 - 1e-12) & (history.expected_reward <= 0.9 + 1e-12))
    assert np.all(history.kl >= 0) and np.all(np.diff(history.samples) >= 0)


def test_base_trainer():
    with pytest.raises(TypeError, match="abstract"):
        BanditTrainer(seed=1)

    class Idle(BanditTrainer):
        config_type = RLOOConfig

        def update(self):
            return None

    trainer = Idle(seed=1)
    assert trainer.expected_reward == pytest.approx(0.4)  # eq. (4) at the uniform start
    actions, rewards = trainer.draw(5)
    assert trainer.samples_drawn == 5
    np.testing.assert_allclose(rewards, np.array([0.2, 0.9, 0.4, 0.1])[actions])
    logp, ref_logp = trainer.sampled_log_probs(actions)
    np.testing.assert_allclose(logp, np.log(0.25))
    np.testing.assert_allclose(ref_logp, np.log(0.25))
    trainer.reset()
    assert trainer.samples_drawn == 0
    np.testing.assert_array_equal(trainer.draw(5)[0], actions)  # same seed, same draws


def test_bad_inputs():
    with pytest.raises(TypeError, match="trainer"):
        track(object(), 3)
    with pytest.raises(TypeError, match="make_trainer"):
        run_seeds("grpo", 3, [0])
    with pytest.raises(ValueError, match="seeds"):
        run_seeds(MAKERS["grpo"], 3, [])
    with pytest.raises(ValueError, match="steps"):
        track(MAKERS["grpo"](0), 0)
    with pytest.raises(ValueError, match="at least 2"):
        BanditRLOO(rewards=[1.0])
    with pytest.raises(ValueError, match="init_logits"):
        BanditPPO(init_logits=[0.0, 1.0])
    with pytest.raises(ValueError, match="seed"):
        BanditDPO(seed=-1)
