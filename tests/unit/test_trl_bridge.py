"""TRL 1.16.0's real GRPOTrainer, recomputed by grpo_core (notebooks/13-from-companion-to-trl).

Each test trains the tiny local Llama of ``grpo_core.sequence.trl_bridge`` with TRL's
``GRPOTrainer`` on CPU, offline, for two optimizer steps on one batch (so the
second step has ratios != 1 and active clipping), and checks every quantity
of every step against ``grpo_core``. A TRL upgrade that changes a formula fails
with the name of the quantity that moved, the setting and the step.
"""

import importlib

import pytest
import torch

# transformers 5.24 warns about its own renames (gradient_checkpointing → activation_checkpointing) inside TRL
pytestmark = pytest.mark.filterwarnings("ignore:.*checkpointing.*:FutureWarning")

# TRL's defaults are trained (once) by test_the_default_run, which makes the same checks and more
SETTINGS = {
    "scale_rewards=batch": {"scale_rewards": "batch"},
    "scale_rewards=none": {"scale_rewards": "none"},
    "loss_type=grpo": {"loss_type": "grpo"},
    "loss_type=bnpo": {"loss_type": "bnpo"},
    "loss_type=dr_grpo": {"loss_type": "dr_grpo"},
    "beta=0": {"beta": 0.0},
    "use_bias_correction_kl=False": {"use_bias_correction_kl": False},
    "delta=1.5": {"delta": 1.5},
}


@pytest.fixture(scope="module")
def bridge():
    """``grpo_core.sequence.trl_bridge``, imported here: with TRL, transformers and datasets it takes 4 s, which a
    module-level import would cost every test process at collection."""
    return importlib.import_module("grpo_core.sequence.trl_bridge")


@pytest.fixture(scope="module")
def model_dir(bridge, tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 19k-parameter model: one thread, as in the notebook
    yield bridge.save_model_and_tokenizer(tmp_path_factory.mktemp("tiny-llama"), seed=0)
    torch.set_num_threads(threads)


def train(bridge, model_dir, tmp_path, **overrides):
    config = bridge.bridge_config(tmp_path / "run", max_steps=2, **overrides)
    return config, bridge.run(config, model_dir, quiet=True)


def moved_quantities(bridge, config, trainer):
    return [
        f"{name} at step {record.step}: TRL {theirs!r}, grpo_core {ours!r}"
        for record in trainer.records
        for name, theirs, ours, difference in bridge.compare(record, config)
        if not bridge.agrees(theirs, difference)
    ]


def assert_reproduced(bridge, config, trainer):
    assert [record.step for record in trainer.records] == [1, 2]
    compared = {name for record in trainer.records for name, *_ in bridge.compare(record, config)}
    expected = {"advantages", "grad", "loss", "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean"}
    assert compared == expected | ({"kl"} if config.beta > 0 else set())
    assert moved_quantities(bridge, config, trainer) == []


@pytest.mark.parametrize("overrides", SETTINGS.values(), ids=SETTINGS.keys())
def test_grpo_core_reproduces_every_logged_quantity(bridge, model_dir, tmp_path, overrides):
    assert_reproduced(bridge, *train(bridge, model_dir, tmp_path, **overrides))


def test_the_default_run(bridge, model_dir, tmp_path):
    """TRL's defaults, trained once: every logged quantity reproduced, as for each setting above; the second iteration
    is off-policy and clips (without ratios != 1 the clip comparison would be vacuous: step 1 is on-policy); the KL is
    TRL 1.16.0's use_bias_correction_kl=True, the ratio-weighted k3: plain k3 must NOT reproduce TRL's gradient."""
    config, trainer = train(bridge, model_dir, tmp_path)
    assert_reproduced(bridge, config, trainer)
    first, second = trainer.records
    assert torch.equal(first.old_logps, first.logps)  # same weights, same inputs: ratio exactly 1
    assert float((second.logps - second.old_logps).abs().max()) > 0.1
    assert second.logged["clip_ratio/region_mean"] > 0.1
    assert second.logged["kl"] > 0
    assert config.use_bias_correction_kl is True
    plain = bridge.recompute(second, bridge.bridge_config(tmp_path / "run", use_bias_correction_kl=False))
    assert float((plain["grad"] - second.grad).abs().max()) > 1e-5
    assert not bridge.agrees(second.logged["kl"], abs(plain["kl"] - second.logged["kl"]))


def test_sequence_level_loss_agrees_but_trl_counts_clips_per_sequence(bridge, model_dir, tmp_path):
    # importance_sampling_level="sequence": loss, gradient and KL agree; TRL's clip fractions are over
    # sequences ((B, 1) flags), grpo_token_loss's over tokens (the sequence ratio broadcast)
    config, trainer = train(bridge, model_dir, tmp_path, importance_sampling_level="sequence")
    moved = {line.split(" at ")[0] for line in moved_quantities(bridge, config, trainer)}
    assert moved <= {"clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean"}
    record = trainer.records[1]
    ratio = torch.exp(((record.logps - record.old_logps) * record.mask).sum(-1) / record.mask.sum(-1))
    advantages = record.advantages
    low, high = (ratio < 1 - config.epsilon) & (advantages < 0), (ratio > 1 + config.epsilon) & (advantages > 0)
    assert record.logged["clip_ratio/region_mean"] == pytest.approx(float((low | high).float().mean()), abs=1e-6)


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda b: b.digit_sum_dataset(4, seed=1.5), TypeError, "seed"),
        (lambda b: b.digit_sum_dataset(4, seed=-1), ValueError, "seed"),
        (lambda b: b.digit_sum_dataset(0), ValueError, "num_prompts"),
        (lambda b: b.tiny_llama(hidden_size=0), ValueError, "hidden_size"),
        (lambda b: b.tiny_llama(hidden_size=12), ValueError, "hidden_size"),
        (lambda b: b.tiny_llama(seed=-1), ValueError, "seed"),
        (lambda b: b.shaped_reward(5, [2.7, 3.9, 0.2]), TypeError, "completion_ids"),
        (lambda b: b.shaped_reward(5, [2, 99]), ValueError, "completion_ids"),
        (lambda b: b.shaped_reward(5.0, [2, 3, 0]), TypeError, "target"),
        (lambda b: b.shaped_reward(5, "23"), TypeError, "completion_ids"),
    ],
)
def test_the_bridge_names_a_bad_argument(bridge, call, error, name):
    """Issue 39's fuzz: the bridge validated nothing (a RuntimeError, a ZeroDivisionError, 2.7 truncated to 2)."""
    with pytest.raises(error, match=name):
        call(bridge)


def test_the_bridge_reads_token_ids_of_any_integer_container(bridge):
    ids = [2, 3, 0, 4]
    expected = bridge.shaped_reward(5, ids)
    assert expected == 1.5
    assert bridge.shaped_reward(5, torch.tensor(ids)) == bridge.shaped_reward(5, tuple(ids)) == expected
