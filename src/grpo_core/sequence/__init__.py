"""The sequence layer: GRPO on a tiny GRU policy with a verifiable digit-sum task (§7, §10), in PyTorch.

Built on the formulas of :mod:`grpo_core` (eq. 3 and the token loss of :mod:`grpo_core.token_loss`) and nothing
above them. Importing it imports torch; ``import grpo_core`` does not.

=============================================  ==================================================
module                                         what it holds
=============================================  ==================================================
:mod:`~grpo_core.sequence.task`                the digit-sum task and its rule-based checker (eq. 2)
:mod:`~grpo_core.sequence.policy`              the GRU policy: sampling, token log-probs, warm start
:mod:`~grpo_core.sequence.grpo`                the §7 algorithm with tokens
=============================================  ==================================================
"""

from grpo_core.sequence.grpo import Batch, IterationStats, SequenceGRPO, SequenceGRPOConfig
from grpo_core.sequence.policy import Completions, GRUPolicy, warm_start
from grpo_core.sequence.task import EOS, DigitSumTask

__all__ = [
    "EOS",
    "Batch",
    "Completions",
    "DigitSumTask",
    "GRUPolicy",
    "IterationStats",
    "SequenceGRPO",
    "SequenceGRPOConfig",
    "warm_start",
]
