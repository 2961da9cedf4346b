"""The input checks of the package docstring's contract, shared by every public function.

Each check raises a ``ValueError`` (a value out of range, a shape, a non-finite
entry) or a ``TypeError`` (a kind of object that is not accepted) whose message
names the argument and says what was expected. Public functions call these
once, at their boundary; the ``_kernels`` behind them trust their inputs.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from grpo_core._kernels import is_torch

MAX_COUNT = 10**7  # group sizes, steps, epochs, pairs: far beyond any teaching run, and a loop that ends
MAX_TOKENS = 2**53  # token counts (a global batch's): any a run reaches, each exact in float64
#: The range the package promises (package docstring, "The range"): every array entry and real knob within ±1e9.
MAX_MAGNITUDE = 1e9


def finite_array(x, name: str, *, ndim: tuple[int, ...] | None = None):
    """``x`` as a float array of its own backend, every entry finite and within ±``MAX_MAGNITUDE``.

    NumPy arrays, Python numbers and (nested) sequences of real numbers (0-d
    tensors among them) give a NumPy array; a torch tensor stays a tensor (on
    its device, with its autograd graph). float32 and float64 are kept, float16
    and bfloat16 become float32, integers float64. Booleans (also inside a
    list), strings, complex numbers, ``None`` and ragged sequences are refused
    with a ``TypeError``.
    """
    x = _torch_float(x, name) if is_torch(x) else _numpy_float(x, name)
    if ndim is not None and x.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimension(s), got shape {tuple(x.shape)}")
    if x.ndim > 0 and 0 in tuple(x.shape):
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    in_range(x, name)
    return x


def in_range(x, name: str) -> None:
    """Raise unless every entry of ``x`` is finite and within ±``MAX_MAGNITUDE`` (two reductions, no temporary)."""
    values = x.detach() if is_torch(x) else x
    smallest, largest = float(values.min()), float(values.max())  # NaN propagates through both
    if not (math.isfinite(smallest) and math.isfinite(largest)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if max(-smallest, largest) > MAX_MAGNITUDE:
        raise ValueError(  # Python ints beyond int64
            f"{name} must lie within ±{MAX_MAGNITUDE:.0e} (the range grpo_core promises), "
            f"got an entry of magnitude {max(-smallest, largest):.3g}"
        )


def numpy_array(x, name: str, *, ndim: tuple[int, ...] | None = None) -> np.ndarray:
    """``x`` as a finite float64 NumPy array of its own, for the NumPy-only functions.

    Always a copy (of a tensor, detached): the caller may change its buffer afterwards.
    """
    x = finite_array(x, name, ndim=ndim)
    return x.detach().cpu().double().numpy().copy() if is_torch(x) else np.array(x, dtype=np.float64)


def scalar(x, name: str) -> float:
    """A finite real number (Python, NumPy or a 0-d array / tensor), as a float."""
    return float(numpy_array(x, name, ndim=(0,)))


def _torch_float(x, name: str):
    if x.dtype.is_complex or x.dtype == _torch().bool:
        raise TypeError(f"{name} must hold real numbers, got a tensor of dtype {x.dtype}")
    if not x.is_floating_point():
        return x.double()
    return x.float() if x.dtype.itemsize < 4 else x  # float16, bfloat16: computed in float32


def entries(x, name: str):
    """Nested sequences as NumPy takes them, each entry checked first: a bool, a string or ``None`` inside a list
    is refused (``np.asarray([True, -2.0])`` would read the bool as 1.0), a tensor becomes a float64 array (its
    ``numpy()`` refuses one that requires grad)."""
    if isinstance(x, (list, tuple)):
        return [entries(v, name) for v in x]
    if is_torch(x):
        return _torch_float(x, name).detach().cpu().double().numpy()
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must hold real numbers, not booleans (got {_shown(x)} inside a sequence)")
    if isinstance(x, np.ndarray) and x.dtype.kind == "b":
        raise TypeError(f"{name} must hold real numbers, not booleans")
    return x


def _numpy_float(x, name: str) -> np.ndarray:
    if x is None or isinstance(x, (str, bytes, dict, set, frozenset)):
        raise TypeError(f"{name} must be an array of real numbers, got {type(x).__name__}")
    try:
        array = np.asarray(entries(x, name))
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be an array of real numbers (not ragged): {err}") from None
    if array.dtype.kind == "b":
        raise TypeError(f"{name} must hold real numbers, not booleans")
    if array.dtype == object and all(isinstance(v, numbers.Real) for v in array.ravel().tolist()):
        raise ValueError(  # Python ints beyond int64
            f"{name} must lie within ±{MAX_MAGNITUDE:.0e} (the range promised): it holds an integer beyond int64"
        )
    if array.dtype.kind not in "iuf" or array.dtype.itemsize > 8:  # str, complex, mixed objects, longdouble
        raise TypeError(f"{name} must hold real numbers within ±{MAX_MAGNITUDE:.0e}, got dtype {array.dtype}")
    if array.dtype.kind != "f":
        return array.astype(np.float64)
    return array.astype(np.float32) if array.dtype.itemsize < 4 else array


def _torch():
    import torch

    return torch


def arrays(**named) -> tuple:
    """The named arguments as finite arrays of one backend and one shape, in the order given
    (the element-wise formulas' inputs: log-probabilities, ratios, advantages)."""
    checked = {name: finite_array(value, name) for name, value in named.items()}
    same_shape(**checked)
    return tuple(checked.values())


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


def _shown(value) -> str:
    """``repr(value)``, cut to 80 characters (a message quoting a 10**6-character argument would bury it)."""
    shown = repr(value)
    return shown if len(shown) <= 80 else f"{shown[:60]}... ({len(shown)} characters)"


def real_number(value, name: str, *, limit: float = MAX_MAGNITUDE) -> float:
    """A finite real number within ±``limit``: ints, floats and their NumPy types; never a bool, string or complex."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {_shown(value)}")
    if not abs(value) <= limit:  # NaN fails this too
        raise ValueError(f"{name} must be a finite number within ±{limit:.0e}, got {_shown(value)}")
    return float(value)


def nonnegative(value, name: str, *, limit: float = MAX_MAGNITUDE) -> float:
    """A real number >= 0 (a clip range, an epsilon, a KL weight)."""
    value = real_number(value, name, limit=limit)
    if value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


def positive(value, name: str, *, limit: float = MAX_MAGNITUDE) -> float:
    """A real number > 0 (a learning rate, a temperature)."""
    value = nonnegative(value, name, limit=limit)
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
    """An integer in ``[minimum, maximum]`` (a group size, a number of epochs: ``MAX_COUNT`` by default; a token
    count: ``MAX_TOKENS``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {_shown(value)}")
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
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {_shown(value)}")
    return bool(value)


def choice(value, name: str, options: tuple[str, ...]) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {_shown(value)}")
    return value


def probabilities(p, name: str, *, positive: bool = False) -> np.ndarray:
    """A probability vector (last axis), as float64: entries in [0, 1] (in (0, 1] if ``positive``, where a
    logarithm is taken) summing to 1. A policy that has collapsed holds exact zeros: they are probabilities."""
    p = numpy_array(p, name, ndim=(1, 2))
    low_ok = (p > 0) if positive else (p >= 0)
    if not bool(low_ok.all()) or not bool((p <= 1).all()):
        raise ValueError(f"{name} must have every entry in {'(0' if positive else '[0'}, 1]")
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
    """A (B, T) tensor of log-probabilities, as :func:`finite_array` types it (narrow floats as float32, integers as
    float64); finiteness is checked under the mask (:func:`masked_log_ratio`)."""
    value = tensor(value, name)
    if shape is None and (value.ndim != 2 or 0 in value.shape):
        raise ValueError(f"{name} must have shape (completions, tokens) with both > 0, got {tuple(value.shape)}")
    if shape is not None and tuple(value.shape) != shape:
        raise ValueError(f"{name} must have the shape of logps {shape}, got {tuple(value.shape)}")
    return _torch_float(value, name)


def token_mask(mask, shape: tuple[int, ...], allow_empty_rows: bool):
    """The mask as given (bool, integer or float 0/1), as booleans, and its per-completion token counts."""
    torch = _torch()
    mask = tensor(mask, "mask")
    if tuple(mask.shape) != shape:
        raise ValueError(f"mask must have the shape of logps {shape}, got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        keep = mask
    elif mask.is_floating_point() or mask.dtype.is_complex:
        if mask.dtype.is_complex:
            raise TypeError(f"mask must be a bool, integer or float tensor, got dtype {mask.dtype}")
        mask = _torch_float(mask, "mask")  # float8 has no comparisons: as float32
        if not bool(((mask == 0) | (mask == 1)).all()):
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


def masked_log_ratio(top, bottom, keep, names: str):
    """``top - bottom`` where the mask is 1, exactly 0 elsewhere, and its largest magnitude.

    The finiteness check of the token batch: one read-only pass (``aminmax``)
    checks the unmasked entries finite (a non-finite result names the tensor
    that holds the NaN or inf, or says that the difference overflowed), and
    its magnitude tells the caller whether the clamp can change anything.
    """
    torch = _torch()
    log_ratio = torch.where(keep, top - bottom, 0.0)
    smallest, largest = (float(v) for v in torch.aminmax(log_ratio.detach()))
    if not (math.isfinite(smallest) and math.isfinite(largest)):
        first, second = names.split(" - ")
        for value, name in ((top, first), (bottom, second)):
            if not bool(torch.where(keep, value.detach(), 0.0).isfinite().all()):
                raise ValueError(f"{name} must be finite (no NaN or inf) where mask is 1")
        raise ValueError(f"{names} overflows the float range where mask is 1")
    return log_ratio, max(-smallest, largest)


def clip_range(eps_low, eps_high) -> tuple[float, float]:
    """The band ``(1 - eps_low, 1 + eps_high)`` of eq. (7); ``eps_high=None`` means ``eps_low``."""
    eps_low = nonnegative(eps_low, "eps_low")
    eps_high = eps_low if eps_high is None else nonnegative(eps_high, "eps_high")
    return 1.0 - eps_low, 1.0 + eps_high


def clip_band(eps_low, eps_high, delta) -> tuple[float, float, float | None]:
    """Eq. (7)'s band ``(low, high)`` and the cap ``delta``: ``None`` or a number > 1 + eps_high."""
    low, high = clip_range(eps_low, eps_high)
    if delta is None:
        return low, high, None
    delta = real_number(delta, "delta")
    if delta <= high:
        raise ValueError(f"delta must be > 1 + eps_high = {high}, got {delta}")
    return low, high, delta
