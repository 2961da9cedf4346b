"""Input checks shared by every public function.

Each check raises a ``ValueError`` or ``TypeError`` that names the argument and
says what was expected, so that bad input never turns into a silent NaN.
"""

from __future__ import annotations

import numbers

import numpy as np

from grpo_core._backend import is_torch


def finite_array(x, name: str, *, ndim: tuple[int, ...] | None = None):
    """Return ``x`` as a float array (NumPy) or tensor (torch), checked finite."""
    if isinstance(x, (str, bytes, dict, set)) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    if not is_torch(x):
        try:
            x = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must be an array of numbers: {err}") from None
    elif not x.is_floating_point():
        x = x.double()
    if ndim is not None and x.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimension(s), got shape {tuple(x.shape)}")
    if x.ndim > 0 and 0 in tuple(x.shape):
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if not _all_finite(x):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return x


def _all_finite(x) -> bool:
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


def nonnegative(value, name: str) -> float:
    """A real number >= 0 (a clip range, an epsilon, a KL weight)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return float(value)


def positive(value, name: str) -> float:
    """A real number > 0 (a learning rate, a temperature)."""
    value = nonnegative(value, name)
    if value == 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def positive_int(value, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (a group size, a number of epochs)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def choice(value, name: str, options: tuple[str, ...]) -> str:
    """One of a fixed set of strings."""
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return value


def probabilities(p, name: str):
    """A probability vector (last axis): entries in (0, 1] summing to 1."""
    p = finite_array(p, name, ndim=(1, 2))
    if not bool((p > 0).all()) or not bool((p <= 1).all()):
        raise ValueError(f"{name} must have every entry in (0, 1]")
    if not np.allclose(np.asarray(p.sum(-1), dtype=float), 1.0, atol=1e-6):
        raise ValueError(f"{name} must sum to 1 over its last axis")
    return p


def check_clipped_update(config) -> None:
    """Validate the knobs every clipped update shares (bandit GRPO and PPO, sequence GRPO):
    ``eps_low``, ``eps_high`` (or ``None``), ``beta``, ``lr`` and ``inner_epochs``."""
    nonnegative(config.eps_low, "eps_low")
    if config.eps_high is not None:
        nonnegative(config.eps_high, "eps_high")
    nonnegative(config.beta, "beta")
    positive(config.lr, "lr")
    positive_int(config.inner_epochs, "inner_epochs")
