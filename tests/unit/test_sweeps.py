"""tests/sweeps.py: a sampled sweep takes its fixed cases and `size` others, the same for one seed, others for
others, and every case when asked."""

import pytest
from sweeps import EVERY_CASE, SEED, sample

CASES = [f"case{i}" for i in range(20)]


def test_a_sample_is_the_fixed_cases_and_size_others_in_their_order(monkeypatch):
    monkeypatch.delenv(EVERY_CASE, raising=False)
    for seed in range(50):
        monkeypatch.setenv(SEED, str(seed))
        taken = sample(CASES, ("case3", "case17"), 4)
        assert {"case3", "case17"} <= set(taken) and len(set(taken)) == 6
        assert taken == [case for case in CASES if case in taken]


def test_one_seed_replays_its_sample_and_the_seeds_reach_every_case(monkeypatch):
    monkeypatch.delenv(EVERY_CASE, raising=False)
    drawn = {}
    for seed in range(50):
        monkeypatch.setenv(SEED, str(seed))
        drawn[seed] = sample(CASES, ("case0",), 3)
        assert sample(CASES, ("case0",), 3) == drawn[seed]
    assert len({tuple(taken) for taken in drawn.values()}) > 40
    assert set().union(*drawn.values()) == set(CASES)


def test_every_case_when_asked_and_never_more_than_there_are(monkeypatch):
    monkeypatch.setenv(SEED, "1")
    monkeypatch.delenv(EVERY_CASE, raising=False)
    assert sample(CASES[:3], ("case1",), 10) == CASES[:3]
    monkeypatch.setenv(EVERY_CASE, "1")
    assert sample(CASES, ("case1",), 2) == CASES


def test_a_fixed_case_outside_the_sweep_is_refused(monkeypatch):
    monkeypatch.setenv(SEED, "1")
    with pytest.raises(ValueError, match="case99"):
        sample(CASES, ("case99",), 2)
