r"""A real TRL ``GRPOTrainer`` run on CPU, and its loss recomputed by ``grpo_core`` (chapter §10).

Everything is built locally, offline: a 2-layer Llama with random weights
(:func:`tiny_llama`), a character tokenizer whose token ids are the ids of
:class:`~grpo_core.sequence.task.DigitSumTask` (EOS = 0, digit d = d), and a
``datasets.Dataset`` of digit-sum prompts (:func:`digit_sum_dataset`).
:class:`RecordingGRPOTrainer` is TRL's trainer, unmodified, with two hooks that
keep a copy of what one loss computation saw (:class:`StepRecord`);
:func:`recompute` feeds those tensors to ``grpo_core`` (eq. 3 for the
advantages, eqs. 6–9 for the loss, clip fractions and KL) and
:func:`compare` lists each quantity next to TRL's value.

The TRL release it was verified against, and the lines of TRL it mirrors, are
on the book's "Production formulas" page. Importing this module imports TRL: it is the "practice" tier
(``requirements-practice.txt``), used by ``notebooks/13-from-companion-to-trl``
and ``tests/unit/test_trl_bridge.py``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

for _variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_variable] = "1"  # nothing is fetched from a hub, before any HF import reads them
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, PrinterCallback  # noqa: E402
from transformers.trainer_callback import ProgressCallback  # noqa: E402
from transformers.utils.notebook import NotebookProgressCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from grpo_core._validate import positive_int, seed_value  # noqa: E402
from grpo_core.advantages import group_advantages  # noqa: E402
from grpo_core.sequence.task import EOS, DigitSumTask  # noqa: E402
from grpo_core.token_loss import grpo_token_loss  # noqa: E402

TASK = DigitSumTask(min_target=2, max_target=9, max_digit=9, max_length=8)
PAD_TOKEN, EOS_TOKEN, PROMPT_END = "<pad>", "<eos>", "="
VOCAB = {EOS_TOKEN: EOS, **{str(d): d for d in range(1, 10)}, PROMPT_END: 10, PAD_TOKEN: 11}

# TRL's advantage: the sample std (nanstd, Bessel's correction) plus 1e-4 (the production page, "The group advantage")
TRL_ADV_EPS, TRL_ADV_DDOF = 1e-4, 1
# TRL computes in float32, grpo_core here in float64: agreement means |Δ| <= RTOL · max(|TRL's value|, FLOOR).
# FLOOR: float32's error is relative to the terms summed, not to their sum. The "grpo" loss of an on-policy step is
# a mean of ±Â (|Â| up to 1.5) that is 0 in exact arithmetic; TRL's float32 left 1.9e-8 on one AVX-512 CPU and less
# than 1e-8 on another, so a floor of 1e-3 (tolerance 1e-8) passed or failed by the CPU. 0.1 allows 1e-6.
RTOL, FLOOR = 1e-5, 0.1


def char_tokenizer() -> PreTrainedTokenizerFast:
    """A 12-token character tokenizer: ``<eos>`` = 0, digits 1–9 = their value, ``=`` and ``<pad>``."""
    tokenizer = Tokenizer(models.WordLevel(vocab=VOCAB, unk_token=PAD_TOKEN))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN)


def tiny_llama(seed: int = 0, hidden_size: int = 32) -> LlamaForCausalLM:
    """A 2-layer Llama from a config, random weights drawn from ``seed`` (no download).

    ``hidden_size`` is a positive multiple of 8: 4 attention heads whose width is even (the rotary embedding's).
    """
    seed = seed_value(seed)
    if positive_int(hidden_size, "hidden_size") % 8:
        raise ValueError(f"hidden_size must be a multiple of 8 (4 heads of even width), got {hidden_size}")
    config = LlamaConfig(
        vocab_size=len(VOCAB),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        eos_token_id=VOCAB[EOS_TOKEN],
        pad_token_id=VOCAB[PAD_TOKEN],
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def save_model_and_tokenizer(folder, seed: int = 0) -> str:
    r"""Save :func:`tiny_llama` and :func:`char_tokenizer` to ``folder``; TRL loads :math:`\pi_\theta` and
    :math:`\pi_\mathrm{ref}` from it."""
    folder = Path(folder)
    tiny_llama(seed_value(seed)).save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    return str(folder)


def digit_sum_dataset(num_prompts: int = 64, seed: int = 0) -> Dataset:
    """Prompts ``"q="`` ("digits that sum to q") with a ``target`` column, targets drawn from ``TASK``."""
    num_prompts = positive_int(num_prompts, "num_prompts")
    generator = torch.Generator().manual_seed(seed_value(seed))
    targets = TASK.sample_targets(num_prompts, generator).tolist()
    return Dataset.from_dict({"prompt": [f"{q}{PROMPT_END}" for q in targets], "target": targets})


def _token_ids(completion_ids) -> list[int]:
    """The completion's token ids as Python ints, each an id of ``VOCAB`` (a float such as 2.7 is refused, not
    truncated)."""
    if isinstance(completion_ids, (torch.Tensor, np.ndarray)):
        completion_ids = completion_ids.tolist()
    if not isinstance(completion_ids, (list, tuple)):
        raise TypeError(f"completion_ids must be a sequence of token ids, got {type(completion_ids).__name__}")
    return [positive_int(token, "completion_ids", minimum=0, maximum=len(VOCAB) - 1) for token in completion_ids]


def shaped_reward(target: int, completion_ids) -> float:
    """Eq. (2)'s rule-based reward of ``TASK``, plus a partial credit for coming close.

    ``TASK.reward`` (1 for digits summing to the target, then EOS) plus
    ``0.5 / (1 + |q − s|)`` with ``s`` the sum of the digits before the first
    EOS (of all of them, if there is none). A random model almost never earns
    the binary reward, so without the partial credit every group would have zero
    variance and the loss no signal (Property 4.1).
    """
    target = positive_int(target, "target")
    tokens = _token_ids(completion_ids)
    body = tokens[: tokens.index(EOS)] if EOS in tokens else tokens
    digit_sum = sum(token for token in body if 1 <= token <= TASK.max_digit)
    return TASK.reward(target, tokens) + 0.5 / (1 + abs(target - digit_sum))


def digit_sum_reward(prompts, completions, completion_ids, target, **kwargs) -> list[float]:
    """TRL reward function: :func:`shaped_reward` of each completion (TRL passes the ``target`` column)."""
    return [shaped_reward(q, ids) for q, ids in zip(target, completion_ids, strict=True)]


def bridge_config(output_dir, **overrides) -> GRPOConfig:
    """The run's ``GRPOConfig``: CPU, fp32, G = 4, 2 prompts per step, 2 iterations, β = 0.04, seeded.

    ``overrides`` replace any field (``loss_type``, ``scale_rewards``, ``beta``,
    ``use_bias_correction_kl``, ``max_steps``, …).
    """
    options = {
        "output_dir": str(output_dir),
        "use_cpu": True,
        "bf16": False,
        "seed": 0,
        "learning_rate": 3e-2,
        "num_generations": 4,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "num_iterations": 2,
        "max_completion_length": TASK.max_length,
        "beta": 0.04,
        "max_steps": 6,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "dataloader_num_workers": 0,
    }
    options.update(overrides)
    return GRPOConfig(**options)


@dataclass
class StepRecord:
    """What one call of TRL's ``_compute_loss`` saw and returned (all detached, on CPU)."""

    step: int
    rewards: torch.Tensor
    prompt_index: torch.Tensor
    advantages: torch.Tensor
    logps: torch.Tensor
    old_logps: torch.Tensor | None
    ref_logps: torch.Tensor | None
    mask: torch.Tensor
    num_items_in_batch: int
    loss: float
    grad: torch.Tensor
    logged: dict[str, float] = field(default_factory=dict)


class RecordingGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` plus hooks that copy the tensors of every loss computation.

    Nothing of TRL's computation is replaced: each override calls TRL's own
    method and keeps a copy of its inputs or outputs. The rewards and each
    completion's prompt index ride along in the generation batch, so TRL's
    shuffle of that batch permutes them with everything else. ``grad`` is the
    gradient of TRL's loss with respect to the per-token log-probabilities (the
    graph is kept for TRL's own backward pass).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.records: list[StepRecord] = []
        self._rewards: torch.Tensor | None = None
        self._logps: torch.Tensor | None = None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._rewards = rewards.detach().sum(-1)  # one reward function, weight 1
        return rewards

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        count = output["advantages"].shape[0]
        output["companion_rewards"] = self._rewards
        output["companion_prompt_index"] = torch.arange(count, device=self._rewards.device) // self.num_generations
        return output

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        output = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        self._logps = output[0]  # the last call inside _compute_loss is π_θ's, with autograd
        return output

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        (grad,) = torch.autograd.grad(loss, self._logps, retain_graph=True)
        old, ref = inputs.get("old_per_token_logps"), inputs.get("ref_per_token_logps")
        self.records.append(
            StepRecord(
                step=self.state.global_step + 1,
                rewards=inputs["companion_rewards"].detach().cpu(),
                prompt_index=inputs["companion_prompt_index"].detach().cpu(),
                advantages=inputs["advantages"].detach().cpu(),
                logps=self._logps.detach().cpu(),
                old_logps=None if old is None else old.detach().cpu(),
                ref_logps=None if ref is None else ref.detach().cpu(),
                mask=inputs["completion_mask"].detach().cpu(),
                num_items_in_batch=int(inputs["num_items_in_batch"]),
                loss=float(loss.detach()),
                grad=grad.detach().cpu(),
            )
        )
        return loss

    def log(self, logs, start_time=None):
        if self.records and "loss" in logs:
            metrics = self._metrics["train"]
            self.records[-1].logged = {name: sum(values) / len(values) for name, values in metrics.items() if values}
        super().log(logs, start_time)


def run(config: GRPOConfig, model_dir: str, num_prompts: int = 64, quiet: bool = False) -> RecordingGRPOTrainer:
    """Train ``config.max_steps`` steps of TRL's GRPO on the digit-sum prompts; return the trainer (with its records).

    ``quiet`` removes the trainer's progress and log printing callbacks.
    """
    trainer = RecordingGRPOTrainer(
        model=model_dir,
        reward_funcs=digit_sum_reward,
        args=config,
        train_dataset=digit_sum_dataset(num_prompts),
        processing_class=PreTrainedTokenizerFast.from_pretrained(model_dir),
    )
    if quiet:
        for callback in (PrinterCallback, ProgressCallback, NotebookProgressCallback):
            trainer.remove_callback(callback)
    trainer.train()
    return trainer


def recompute(record: StepRecord, config: GRPOConfig) -> dict[str, float | torch.Tensor]:
    """``grpo_core``'s advantages, loss, gradient, clip fractions and KL from one record's tensors.

    The advantages are eq. (3) with TRL's conventions (``scale=config.scale_rewards``,
    ε = 1e-4, ddof = 1), per group of ``num_generations``; the loss is
    :func:`~grpo_core.token_loss.grpo_token_loss` with the configured
    ``loss_type``, ε, β, ``delta``, ``importance_sampling_level`` and KL
    estimator (``"k3_ratio"`` when ``use_bias_correction_kl``, else ``"k3"``).
    """
    order = torch.argsort(record.prompt_index, stable=True)  # undo TRL's shuffle: one row per prompt
    groups = record.rewards[order].double().view(-1, config.num_generations).numpy()
    grouped = group_advantages(groups, eps=TRL_ADV_EPS, ddof=TRL_ADV_DDOF, scale=config.scale_rewards)
    advantages = torch.empty(len(order), dtype=torch.float64)
    advantages[order] = torch.as_tensor(grouped.reshape(-1))
    logps = record.logps.double().requires_grad_()
    old = logps.detach() if record.old_logps is None else record.old_logps.double()
    ref = None if record.ref_logps is None else record.ref_logps.double()
    loss, metrics = grpo_token_loss(
        logps,
        old,
        ref,
        advantages,
        record.mask,
        eps_low=config.epsilon,
        eps_high=config.epsilon_high,
        beta=config.beta,
        loss_type=config.loss_type,
        max_completion_length=config.max_completion_length,
        num_items_in_batch=record.num_items_in_batch,
        kl_estimator="k3_ratio" if config.use_bias_correction_kl else "k3",
        delta=config.delta,
        importance_sampling_level=config.importance_sampling_level,
    )
    loss.backward()
    return {
        "advantages": advantages,
        "loss": float(loss.detach()),
        "grad": logps.grad,
        **{name: value for name, value in metrics.items() if name != "loss"},
    }


def compare(record: StepRecord, config: GRPOConfig) -> list[tuple[str, float, float, float]]:
    """``(quantity, TRL, grpo_core, max |difference|)`` for one record.

    Tensors (advantages, gradient) are summarised by their largest entry in
    absolute value on each side; the difference is the largest element-wise one.
    TRL's clip fractions and KL are the values it logged for that step. The
    loss is recomputed from ``grpo_core``'s own advantages, not TRL's.
    """
    ours = recompute(record, config)
    rows = []
    for name, theirs in (("advantages", record.advantages), ("grad", record.grad)):
        mine = ours[name].to(torch.float64)
        theirs = theirs.to(torch.float64)
        rows.append((name, float(theirs.abs().max()), float(mine.abs().max()), float((mine - theirs).abs().max())))
    rows.append(("loss", record.loss, ours["loss"], abs(record.loss - ours["loss"])))
    for name in ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "kl"):
        if name in record.logged:
            theirs, mine = record.logged[name], ours[name]
            rows.append((name, theirs, mine, abs(theirs - mine)))
    return rows


def agrees(theirs: float, difference: float) -> bool:
    """Float32 agreement: ``difference <= RTOL · max(|theirs|, FLOOR)``."""
    return difference <= RTOL * max(abs(theirs), FLOOR)
