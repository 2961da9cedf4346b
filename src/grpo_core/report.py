"""How a notebook prints a number: at the precision its claim needs, so that nbval's digit-for-digit check holds on
every CPU (README, "What nbval checks").

The rule, in two parts:

* a quantity whose claim is "zero up to rounding" (a gap between two computations of the same thing, a difference
  that should vanish) is printed as a bound, :func:`below` (``< 1e-12``), never as its value: its digits are the
  last bits of a reduction, and another CPU, vector unit or thread count gives others (``5.8e-15`` on one machine,
  ``0.0e+00`` on the next);
* a float32 result is printed with :func:`float32`, at :data:`FLOAT32_DIGITS` significant digits: float32 keeps
  about seven, and two BLAS code paths (MKL's AVX2 and AVX-512 kernels, OpenBLAS's, Apple's) already differ in the
  seventh (``0.0612787`` and ``0.0612788``).

``make test-diversity`` re-runs every notebook under settings that change those code paths and requires the same
outputs: a number printed beyond what its claim needs shows up there.
"""

from grpo_core._validate import positive, real_number

NOISE_FLOOR = 1e-12
"""The bound below which a float64 difference counts as rounding. At 1 it is ~5000 ulps, far above the last bits a
reduction order moves and far below any real effect the notebooks show."""

FLOAT32_DIGITS = 5
"""Significant digits of a float32 result that every BLAS path keeps (float32 carries ~7.2)."""


def below(value, bound=NOISE_FLOOR) -> str:
    """``"< bound"`` when ``|value| < bound``; otherwise the value itself with its bound (``"3.2e-09 (>= 1e-12)"``),
    so that a claim that fails is seen, not rounded away."""
    value, bound = real_number(value, "value"), positive(bound, "bound")
    return f"< {bound:.0e}" if abs(value) < bound else f"{value:.1e} (>= {bound:.0e})"


def float32(value) -> str:
    """A float32 result at :data:`FLOAT32_DIGITS` significant digits (``0.061279``)."""
    return f"{real_number(value, 'value'):.{FLOAT32_DIGITS}g}"
