"""Pick the array library (NumPy or torch) that matches the input.

The per-term formulas (ratio, clip, KL estimators) are written once and run on
NumPy arrays for the bandit and on torch tensors, with autograd, for tokens.
torch is imported only when a tensor is actually passed in.
"""

from __future__ import annotations

import sys

import numpy as np


def is_torch(x) -> bool:
    """True for a ``torch.Tensor`` (checked without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def namespace(x):
    """The module whose ``exp``, ``log``, ``minimum``, ``clip`` act on ``x``."""
    return sys.modules["torch"] if is_torch(x) else np
