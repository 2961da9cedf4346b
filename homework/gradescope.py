"""The autograder zip's run script (``run_otter.py``, which otter's ``run_autograder`` starts on Gradescope).

It grades ``/autograder/submission`` as ``make grade`` grades one file: the notebook's code runs in
the jail (``grader/jail.py``), the key (``key.json``) and the comparison stay in this process, and
``/autograder/results/results.json`` gets two entries per question: its public test cases' points
and messages, visible at once, and its hidden cases' points and how many passed, ``after_published``.
The total has no visibility of its own in Gradescope's results format: Gradescope hides it from
students while a test is hidden, except one whose visibility is ``hidden`` (its autograder
specification), so no entry here is ``hidden`` and the total waits for the grades' publication.
"""

import json
import os
import sys
from pathlib import Path

AUTOGRADER = Path(os.environ.get("AUTOGRADER", "/autograder"))  # another folder only in our tests
SOURCE = AUTOGRADER / "source"
sys.path[:0] = [str(SOURCE / "grader"), str(SOURCE / "files")]  # our scripts; grpo_core for the key's tests

import checker
import grade
from jail import Jail, python_paths

TIMEOUT = 600


def results(submission: Path) -> dict:
    key = checker.load_key(SOURCE / "key.json")
    found = [p for p in grade.submissions(submission) if p.suffix in (".ipynb", ".zip")]
    if len(found) != 1:
        return {"score": 0, "output": f"expected one notebook or exported zip, found {len(found)}"}
    try:
        notebook = grade.parse_notebook(grade.read_bytes(found[0]))
    except (ValueError, OSError) as error:
        return {"score": 0, "output": f"unreadable submission: {error}"}
    jail = Jail(sys.executable, python_paths(sys.executable), TIMEOUT)
    try:
        scores, feedback, error = checker.grade(key, grade.code_sources(notebook), jail)
    finally:
        jail.close()
    if error:
        return {"score": 0, "output": error}
    tests = []
    for question in key["questions"]:
        mine = [entry for entry in feedback if entry["question"] == question["name"]]
        public = [entry for entry in mine if not entry["hidden"]]
        hidden = [entry for entry in mine if entry["hidden"]]
        shown = [f"case {e['case']}: {'passed' if e['passed'] else e['message']}" for e in public]
        tests.append(_entry(question, public, "\n".join(shown)) | {"visibility": "visible"})
        passed = sum(e["passed"] for e in hidden)
        output = f"{passed} of {len(hidden)} hidden tests passed"
        tests.append(_entry(question, hidden, output, " (hidden)") | {"visibility": "after_published"})
    return {"score": sum(scores.values()), "tests": tests}


def _entry(question: dict, cases: list[dict], output: str, suffix: str = "") -> dict:
    """One results.json test: the points of ``cases`` (one question's public or hidden ones) and their output."""
    score = question["points"] * sum(case["passed"] for case in cases)
    return {"name": question["name"] + suffix, "score": score, "max_score": question["points"] * len(cases),
            "output": output}  # fmt: skip


if __name__ == "__main__":
    (AUTOGRADER / "results").mkdir(exist_ok=True)
    (AUTOGRADER / "results" / "results.json").write_text(json.dumps(results(AUTOGRADER / "submission"), indent=1))
