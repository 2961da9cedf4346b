"""Course helpers around the formulas: what a critic costs (§2) and a rule-based verifier (§3, eq. 2).

Neither is a formula of GRPO's update; both feed the notebooks of §2 and §3. NumPy and the standard library only.
"""

from grpo_core.course.memory import (
    FROZEN_BYTES_PER_PARAM,
    TRAINED_BYTES_PER_PARAM,
    MemoryComponent,
    flops_per_prompt,
    memory_by_model,
    memory_components,
    models,
    total_memory_gb,
)
from grpo_core.course.verifier import exact_match_reward, extract_final_answer, normalize_answer

__all__ = [
    "FROZEN_BYTES_PER_PARAM",
    "TRAINED_BYTES_PER_PARAM",
    "MemoryComponent",
    "exact_match_reward",
    "extract_final_answer",
    "flops_per_prompt",
    "memory_by_model",
    "memory_components",
    "models",
    "normalize_answer",
    "total_memory_gb",
]
