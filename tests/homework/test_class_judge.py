"""``make grade`` on a synthetic class agrees with an independent judge, test case by test case (issue #38).

The class and the judge are tests/class_judge.py's. Here a sample is graded, from a class drawn with a fresh seed
each run (printed: ``CLASS_SEED=N`` replays it): the files of :data:`class_judge.FIXED` that end (a mistake and its
late renamed attempt, a raising cell of a student the roster forgot, a rewritten right answer exported as a zip)
and the files that end of one student drawn at random. Files that hang are judged by ``make class-judge`` (the
whole class, about 12 minutes): each costs the cell or call limit in sleep on both sides, which ``make test``'s
budget cannot hold; in ``make test`` the hangs are tests/homework/test_grading_limits.py's (in a function) and
tests/homework/test_grading_cells.py's (at top level). Cost: about 15 CPU-s of its own.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import class_judge
import pytest
from homework_support import shared_dist

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    return shared_dist(tmp_path_factory)


def test_a_sample_of_the_class_gets_the_judges_score_on_every_test(dist, tmp_path):
    seed = int(os.environ.get("CLASS_SEED", random.SystemRandom().randrange(2**32)))
    print(f"CLASS_SEED={seed}")
    folder = tmp_path / "class"
    handed = class_judge.make_class(dist, folder, seed)
    student = random.Random(seed).choice(class_judge.STUDENTS)
    chosen = [
        item for item in handed if item.student == student or (item.student, item.assignment) in class_judge.FIXED
    ]
    sample = [item for item in chosen if not item.kind.startswith("hangs")]
    assert {item.kind for item in sample} >= {"mistake", "raises"}
    assert any(item.late for item in sample) and any(item.file.endswith(".zip") for item in sample)
    out = tmp_path / "grades"
    class_judge.grade_class(folder, dist, out, sample)
    judged = {item.file: class_judge.judge_file(folder / item.file, item.assignment) for item in sample}
    differences = class_judge.compare(out, sample, judged)
    assert differences == [], f"CLASS_SEED={seed}: " + "\n".join(differences)
    gaps = class_judge.roster_gaps(out)
    assert (f"id-{class_judge.ONLY_IN_ROSTER}", "", "no submission") in gaps
    forgotten = {item.file for item in sample if item.student == class_judge.NOT_IN_ROSTER}
    assert forgotten and {file for _, file, problem in gaps if problem == "not in the roster"} == forgotten
