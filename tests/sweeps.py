"""The exhaustive sweeps, sampled: ``make test`` runs each sweep's fixed cases plus a fresh random sample of the rest,
drawn from one seed per run; the ``make test-*-sweep`` targets run every case (README, "Tests").

``GRPO_TEST_SEED=N`` replays the sample of a run (pytest prints N first and last); ``GRPO_TEST_SWEEP=1`` runs every
case of every sweep. tests/conftest.py draws the seed before the xdist workers start, so that each collects the same
cases.
"""

from __future__ import annotations

import os
import random
import secrets
from collections.abc import Iterable, Sequence

SEED = "GRPO_TEST_SEED"
EVERY_CASE = "GRPO_TEST_SWEEP"


def sample(cases: Iterable, fixed: Sequence, size: int) -> list:
    """The cases a run takes, in their own order: ``fixed`` (each among ``cases``) and ``size`` others drawn with the
    run's seed; every case when ``$GRPO_TEST_SWEEP`` is 1."""
    cases = list(cases)
    if missing := [case for case in fixed if case not in cases]:
        raise ValueError(f"fixed cases that are not cases of the sweep: {missing}")
    if os.environ.get(EVERY_CASE) == "1":
        return cases
    rest = [case for case in cases if case not in fixed]
    drawn = random.Random(seed()).sample(rest, min(size, len(rest)))
    return [case for case in cases if case in fixed or case in drawn]


def seed() -> int:
    """The run's seed: ``$GRPO_TEST_SEED``, drawn and set there first if it is not set (for the processes this one
    starts, the xdist workers among them)."""
    return int(os.environ.setdefault(SEED, str(secrets.randbits(32))))


def describe() -> str:
    if os.environ.get(EVERY_CASE) == "1":
        return f"sweeps: every case ({EVERY_CASE}=1)"
    return f"sweeps: fixed cases + a sample drawn from {SEED}={seed()} (set it to replay; {EVERY_CASE}=1: every case)"
