"""grpo_core.bandit.sharpened: the seed experiment of notebooks 06 and 11 is what a loop of BanditGRPO runs gives."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_core import BanditGRPO, GRPOConfig
from grpo_core.bandit.sharpened import ONE_HOT_TOLERANCE, SeedEndings, sharpened_runs

SHARPENED = np.array([1.0, 1.0, 297.0, 1.0]) / 300  # π(C) = 0.99, the lab's Sharpen π


def loop(probs, beta, seeds, steps):
    """The notebooks' former loop, written out."""
    ends, kls = [], []
    for seed in seeds:
        run = BanditGRPO(config=GRPOConfig(beta=beta), seed=seed)
        run.set_policy(probs)
        kls.append(run.run(steps)[-1].kl)
        ends.append(run.probs)
    return np.array(ends), np.array(kls)


@settings(max_examples=15, deadline=None)
@given(
    onto=st.integers(0, 3),
    mass=st.floats(0.3, 0.999),
    beta=st.sampled_from([0.0, 0.04, 0.2, 0.5, 1.0, 3.0]),
    first=st.integers(0, 2**32),
    steps=st.integers(1, 12),
)
def test_each_seed_ends_where_its_own_run_ends(onto, mass, beta, first, steps):
    probs = np.full(4, (1 - mass) / 3)
    probs[onto] = mass
    seeds = [first, first + 1, first + 7]
    endings = sharpened_runs(probs, beta, seeds, steps)
    ends, kls = loop(probs, beta, seeds, steps)
    np.testing.assert_array_equal(endings.probs, ends)
    np.testing.assert_array_equal(endings.final_kl, kls)
    np.testing.assert_array_equal(endings.onto, ends.argmax(axis=1))


def test_one_hot_is_one_answer_holding_pi_to_six_decimals():
    edge = 1 - ONE_HOT_TOLERANCE
    probs = np.array([[1.0, 0, 0, 0], [0, 0, edge + 1e-9, 1e-6 - 1e-9], [0, 0, edge, 1e-6], [0.25] * 4])
    endings = SeedEndings(probs=probs, final_kl=np.zeros(4))
    assert endings.one_hot.tolist() == [True, True, False, False]
    assert endings.onto.tolist() == [0, 2, 2, 0]


def test_at_beta_one_the_sharpened_policy_freezes_one_hot_on_c():
    """§6 and §11's claim on a few seeds: at β = 1 most runs end with all of π on C."""
    endings = sharpened_runs(SHARPENED, 1.0, range(20))
    frozen = endings.one_hot & (endings.onto == 2)
    assert frozen.sum() >= 10
    np.testing.assert_allclose(endings.final_kl[frozen], np.log(4), atol=1e-6)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (dict(probs=[0.5, 0.5], beta=0.2, seeds=[0]), "probs"),
        (dict(probs=[0.0, 0.0, 1.0, 0.0], beta=0.2, seeds=[0]), "probs"),
        (dict(probs=SHARPENED, beta=-1.0, seeds=[0]), "beta"),
        (dict(probs=SHARPENED, beta=0.2, seeds=[]), "seeds"),
        (dict(probs=SHARPENED, beta=0.2, seeds=[-1]), "seed"),
        (dict(probs=SHARPENED, beta=0.2, seeds=[0], steps=0), "steps"),
    ],
)
def test_bad_input_is_refused_by_name(arguments, named):
    with pytest.raises((ValueError, TypeError), match=named):
        sharpened_runs(**arguments)
