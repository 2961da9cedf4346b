"""The print-precision rule of grpo_core.report: a noise-floor quantity printed as a bound, a float32 result at five
significant digits (README, "What nbval checks")."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_core import report


@given(st.floats(-1e-12, 1e-12, exclude_min=True, exclude_max=True))
def test_a_gap_below_the_noise_floor_prints_as_the_bound(gap):
    assert report.below(gap) == "< 1e-12"


@given(st.floats(-1e9, 1e9).filter(lambda x: abs(x) >= 1e-12))  # the range grpo_core promises
def test_a_gap_at_or_above_the_bound_prints_its_value(gap):
    shown = report.below(gap)
    assert shown.endswith("(>= 1e-12)")
    assert math.isclose(float(shown.split()[0]), gap, rel_tol=0.06)


def test_the_bound_is_a_parameter():
    assert report.below(3e-9, bound=1e-8) == "< 1e-08"
    assert report.below(3e-9, bound=1e-9) == "3.0e-09 (>= 1e-09)"


@given(st.floats(np.finfo(np.float32).tiny, 1e9))  # the range grpo_core promises
def test_float32_prints_five_significant_digits(value):
    value = float(np.float32(value))
    shown = report.float32(value)
    mantissa = shown.split("e")[0].replace(".", "").replace("-", "").lstrip("0")
    assert len(mantissa) <= 5
    assert math.isclose(float(shown), value, rel_tol=5e-5)


def test_two_float32_paths_that_differ_in_the_seventh_digit_print_alike():
    assert report.float32(0.0612787) == report.float32(0.0612788) == "0.061279"


@pytest.mark.parametrize("function", [report.below, report.float32])
@pytest.mark.parametrize(("value", "error"), [(math.nan, ValueError), (math.inf, ValueError), ("1", TypeError)])
def test_bad_values_are_refused_naming_the_argument(function, value, error):
    with pytest.raises(error, match="value"):
        function(value)


def test_a_bad_bound_is_refused():
    with pytest.raises(ValueError, match="bound"):
        report.below(1.0, bound=0)
