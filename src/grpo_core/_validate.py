"""Array plumbing shared by every public function: which library an array belongs to, and the input checks
of the package docstring's contract.

The per-term formulas (ratio, clip, KL estimators) are written once and run on
NumPy arrays for the bandit and on torch tensors, with autograd, for tokens;
:func:`namespace` picks the library, and torch is imported only when a tensor is
actually passed in.

Each check raises a ``ValueError`` (a value out of range, a shape, a non-finite
entry) or a ``TypeError`` (a kind of object that is not accepted) whose message
names the argument and says what was expected. Public functions call these
once, at their boundary; the ``_kernels`` behind them trust their inputs.
"""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np


def is_torch(x) -> bool:
    """True for a ``torch.Tensor`` (checked without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def namespace(x):
    """The module whose ``exp``, ``log``, ``minimum``, ``clip`` act on ``x``."""
    return sys.modules["torch"] if is_torch(x) else np


LOW_PRECISION = ("float16", "bfloat16")
MAX_COUNT = 10**7  # group sizes, steps, epochs, pairs: far beyond any teaching run, and a loop that ends


def finite_array(x, name: str, *, ndim: tuple[int, ...] | None = None):
    """``x`` as a finite float array of its own backend.

    NumPy arrays, Python numbers and (nested) sequences of real numbers give a
    NumPy array; a torch tensor stays a tensor (on its device, with its
    autograd graph). Floating dtypes are kept, except 16-bit ones (float16,
    bfloat16), which become float32; integers become float64. Booleans,
    strings (numeric or not), complex numbers, ``None`` and ragged sequences
    are refused with a ``TypeError``.
    """
    x = _torch_float(x, name) if is_torch(x) else _numpy_float(x, name)
    if ndim is not None and x.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimension(s), got shape {tuple(x.shape)}")
    if x.ndim > 0 and 0 in tuple(x.shape):
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if not all_finite(x):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return x


def numpy_array(x, name: str, *, ndim: tuple[int, ...] | None = None) -> np.ndarray:
    """``x`` as a finite float64 NumPy array, for the NumPy-only functions (a tensor is detached and copied)."""
    x = finite_array(x, name, ndim=ndim)
    if is_torch(x):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def scalar(x, name: str) -> float:
    """A finite real number (Python, NumPy or a 0-d array / tensor), as a float."""
    return float(numpy_array(x, name, ndim=(0,)))


def _torch_float(x, name: str):
    if x.dtype.is_complex or x.dtype == _torch().bool:
        raise TypeError(f"{name} must hold real numbers, got a tensor of dtype {x.dtype}")
    if not x.is_floating_point():
        return x.double()
    if str(x.dtype).removeprefix("torch.") in LOW_PRECISION:
        return x.float()
    return x


def _numpy_float(x, name: str) -> np.ndarray:
    if x is None or isinstance(x, (str, bytes, dict, set, frozenset)):
        raise TypeError(f"{name} must be an array of real numbers, got {type(x).__name__}")
    try:
        array = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be an array of real numbers (not ragged): {err}") from None
    if array.dtype == object:  # Python ints beyond int64, or mixed objects
        entries = array.ravel().tolist()
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in entries):
            raise TypeError(f"{name} must hold only real numbers, got {sorted({type(v).__name__ for v in entries})}")
        try:
            array = np.array([float(v) for v in entries]).reshape(array.shape)
        except OverflowError:
            raise ValueError(f"{name} must be finite: an integer in it exceeds the float64 range") from None
    kind = array.dtype.kind
    if kind == "b":
        raise TypeError(f"{name} must hold real numbers, not booleans")
    if kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if kind != "f":
        return array.astype(np.float64)
    return array.astype(np.float32) if array.dtype.name in LOW_PRECISION else array


def _torch():
    import torch

    return torch


def all_finite(x) -> bool:
    """No NaN or ±inf, decided in the common case by one reduction.

    NaN and ±inf propagate through a sum, so a finite sum means every entry is
    finite; only a non-finite sum (a NaN, an inf, or an overflowing sum) is
    checked entry by entry. This avoids a temporary the size of ``x``, which
    matters for the (completions × tokens) tensors of the token loss.
    """
    if is_torch(x):
        x = x.detach()
        return bool(x.sum().isfinite()) or bool(x.isfinite().all())
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(x.sum())) or bool(np.isfinite(x).all())


def overflow_checked(compute, what: str):
    """``compute()`` with float overflow silenced, refused with a ``ValueError`` naming ``what`` if it overflowed."""
    with np.errstate(over="ignore", invalid="ignore"):
        result = compute()
    if not all_finite(result if is_torch(result) else np.asarray(result)):
        raise ValueError(f"{what} exceeds the float range")
    return result


def same_shape(**arrays) -> None:
    """Raise if the named arrays mix NumPy and torch, or differ in shape."""
    kinds = {name: "torch.Tensor" if is_torch(a) else "numpy array" for name, a in arrays.items()}
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{name} is a {kind}" for name, kind in kinds.items())
        raise TypeError(f"arguments must all be NumPy arrays or all torch tensors: {listed}")
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shapes must match: {listed}")


def real_number(value, name: str) -> float:
    """A finite real number: ints, floats and their NumPy types; never a bool, string or complex."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number, got an integer beyond the float64 range") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def nonnegative(value, name: str) -> float:
    """A real number >= 0 (a clip range, an epsilon, a KL weight)."""
    value = real_number(value, name)
    if value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


def positive(value, name: str) -> float:
    """A real number > 0 (a learning rate, a temperature)."""
    value = nonnegative(value, name)
    if value == 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def unit_interval(value, name: str) -> float:
    """A real number in [0, 1] (a probability)."""
    value = real_number(value, name)
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return value


def positive_int(value, name: str, *, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """An integer in ``[minimum, maximum]`` (a group size, a number of epochs; ``MAX_COUNT`` by default)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return int(value)


def seed_value(value, name: str = "seed") -> int:
    """A seed for ``numpy.random.default_rng`` / ``torch.Generator.manual_seed``: an integer in [0, 2**64)."""
    return positive_int(value, name, minimum=0, maximum=2**64 - 1)


def boolean(value, name: str) -> bool:
    """``True`` or ``False`` (NumPy bools too), nothing else."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def choice(value, name: str, options: tuple[str, ...]) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return value


def probabilities(p, name: str, *, allow_zero: bool = False) -> np.ndarray:
    """A probability vector (last axis), as float64: entries in (0, 1] (or [0, 1]) summing to 1."""
    p = numpy_array(p, name, ndim=(1, 2))
    low_ok = (p >= 0) if allow_zero else (p > 0)
    if not bool(low_ok.all()) or not bool((p <= 1).all()):
        raise ValueError(f"{name} must have every entry in {'[0' if allow_zero else '(0'}, 1]")
    if not np.allclose(p.sum(-1), 1.0, atol=1e-6):
        raise ValueError(f"{name} must sum to 1 over its last axis")
    return p


# The token-level batches (torch): (completions, tokens) log-probabilities, one Â per completion, a 0/1 mask.


def tensor(value, name: str):
    """``value`` if it is a ``torch.Tensor``; a ``TypeError`` naming ``name`` otherwise."""
    if not is_torch(value):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def token_log_probs(value, name: str, shape: tuple[int, ...] | None):
    """A floating (B, T) tensor of log-probabilities (16-bit ones as float32); finiteness is checked under the mask."""
    torch = _torch()
    value = tensor(value, name)
    if not value.is_floating_point():
        raise TypeError(f"{name} must hold floating-point log-probabilities, got dtype {value.dtype}")
    if shape is None and (value.ndim != 2 or 0 in value.shape):
        raise ValueError(f"{name} must have shape (completions, tokens) with both > 0, got {tuple(value.shape)}")
    if shape is not None and tuple(value.shape) != shape:
        raise ValueError(f"{name} must have the shape of logps {shape}, got {tuple(value.shape)}")
    return value.float() if value.dtype in (torch.float16, torch.bfloat16) else value


def token_mask(mask, shape: tuple[int, ...], allow_empty_rows: bool):
    """The mask as given (bool, integer or float 0/1), as booleans, and its per-completion token counts."""
    torch = _torch()
    mask = tensor(mask, "mask")
    if tuple(mask.shape) != shape:
        raise ValueError(f"mask must have the shape of logps {shape}, got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        keep = mask
    elif mask.is_floating_point() or mask.dtype.is_complex:
        if mask.dtype.is_complex or not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError("mask must hold only 0 and 1 (or be a bool tensor)")
        keep = mask != 0
    else:  # integers: two reductions, no (B, T) temporary
        if int(mask.min()) < 0 or int(mask.max()) > 1:
            raise ValueError("mask must hold only 0 and 1 (or be a bool tensor)")
        keep = mask.bool()
    lengths = keep.sum(-1)
    if not allow_empty_rows and not bool((lengths > 0).all()):
        empty = torch.nonzero(lengths == 0).flatten().tolist()
        raise ValueError(
            f"mask: every completion needs at least one token; rows {empty} are all zeros "
            "(drop fully masked completions, e.g. masked truncations, before calling)"
        )
    return mask, keep, lengths


def token_batch(logps, old_logps, ref_logps, advantages, mask, *, allow_empty_rows: bool = False):
    """The boundary checks of the token-level functions: types, shapes, dtypes, the mask, Â finite."""
    logps = token_log_probs(logps, "logps", None)
    shape = tuple(logps.shape)
    old_logps = token_log_probs(old_logps, "old_logps", shape)
    if ref_logps is not None:
        ref_logps = token_log_probs(ref_logps, "ref_logps", shape)
    if advantages is not None:
        advantages = tensor(advantages, "advantages")
        if tuple(advantages.shape) != shape[:1]:
            raise ValueError(
                f"advantages must have shape ({shape[0]},), one per completion, got {tuple(advantages.shape)}"
            )
        advantages = finite_array(advantages, "advantages")
    mask, keep, lengths = token_mask(mask, shape, allow_empty_rows)
    return logps, old_logps, ref_logps, advantages, (mask, keep, lengths)


def check_clipped_update(config) -> None:
    """Validate the knobs every clipped update shares (bandit GRPO and PPO, sequence GRPO):
    ``eps_low``, ``eps_high`` (or ``None``), ``beta``, ``lr`` and ``inner_epochs``."""
    nonnegative(config.eps_low, "eps_low")
    if config.eps_high is not None:
        nonnegative(config.eps_high, "eps_high")
    nonnegative(config.beta, "beta")
    positive(config.lr, "lr")
    positive_int(config.inner_epochs, "inner_epochs")


def power_of_two(values, axis) -> np.ndarray:
    """A power of two ``s`` with ``max|values| / s`` in [1, 2) (1 for all-zero values).

    Dividing by it is exact, and every step of eq. (3) commutes with it bit
    for bit, so the rewards can be brought near 1 before they are centred
    (no overflow for 1e308, no underflow of the variance for 1e-200) without
    changing any result that did not overflow.
    """
    peak = np.abs(values).max(axis=axis, keepdims=True)
    return np.where(peak > 0, np.ldexp(1.0, np.frexp(peak)[1] - 1), 1.0)
