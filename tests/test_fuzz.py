"""Every public function, fed malformed input, either answers without NaN or
raises the documented ValueError / TypeError — nothing else."""

import inspect
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import grpo_core
from grpo_core import token_loss
from grpo_core.bandit import policy_gradient

nasty_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=3),
    st.integers(-3, 10),
    nasty_floats,
    st.lists(nasty_floats, max_size=5),
    st.lists(st.integers(-2, 5), min_size=1, max_size=5),
    st.just([[1.0], [2.0, 3.0]]),
    st.just({}),
    arrays(np.float64, array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), elements=nasty_floats),
    arrays(np.int64, array_shapes(min_dims=1, max_dims=2, max_side=5), elements=st.integers(-2, 5)),
    arrays(np.float64, array_shapes(min_dims=1, max_dims=2, max_side=5), elements=st.floats(0, 1)).map(torch.tensor),
)


def public_callables():
    modules = [grpo_core, policy_gradient]
    names = {(m.__name__, name) for m in modules for name in getattr(m, "__all__", dir(m)) if not name.startswith("_")}
    found = {}
    for module_name, name in sorted(names):
        obj = getattr(__import__(module_name, fromlist=[name]), name)
        if callable(obj) and getattr(obj, "__module__", "").startswith("grpo_core"):
            found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    found["grpo_core.token_loss.grpo_token_loss"] = token_loss.grpo_token_loss
    found["grpo_core.advantages.zero_signal_probability"] = grpo_core.advantages.zero_signal_probability
    return found


CALLABLES = public_callables()


def has_nan(value) -> bool:
    if isinstance(value, tuple):
        return any(has_nan(v) for v in value)
    if isinstance(value, dict):
        return any(has_nan(v) for v in value.values())
    if isinstance(value, torch.Tensor):
        return bool(torch.isnan(value).any())
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return bool(np.isnan(value).any())
    return False


def test_every_public_function_is_fuzzed():
    assert len(CALLABLES) >= 25, sorted(CALLABLES)


@pytest.mark.parametrize("qualname", sorted(CALLABLES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_malformed_input_raises_only_documented_errors(qualname, data):
    func = CALLABLES[qualname]
    parameters = [
        p
        for p in inspect.signature(func).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    kwargs = {
        p.name: data.draw(GARBAGE, label=p.name) for p in parameters if p.default is p.empty or data.draw(st.booleans())
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf is allowed; NaN is not
        try:
            result = func(**kwargs)
        except (ValueError, TypeError):
            return
    assert not has_nan(result), f"{qualname}({kwargs}) returned NaN"
