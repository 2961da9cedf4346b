"""Written answers (issue #38): each assignment's written question has a model answer and a rubric in its master
(a ``# BEGIN RUBRIC`` raw cell), which ``build.py`` writes to the instructor's ``autograder/rubric.md`` and which
``make grade`` shows above the answers in ``manual-NAME.md``; no line of it reaches the student's folder or the
autograder zip (whose files the student's code may read)."""

from __future__ import annotations

import copy
import importlib
import zipfile

import pytest
from homework_support import NAMES, build, grade, shared_dist

records = importlib.import_module("records")  # homework/records.py (homework_support puts homework/ on the path)


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    return shared_dist(tmp_path_factory)


def written_questions(master) -> int:
    return sum("manual-answer" in cell.metadata.get("tags", []) for cell in master.cells)


def phrases(name: str) -> list[str]:
    """Distinctive text of each rubric: its model answer's first line, each criterion and each wrong answer."""
    found = []
    for rubric in build.rubrics(build.master_notebook(name)):
        found.append(rubric["answer"].strip().splitlines()[0])
        found += [criterion["for"] for criterion in rubric["criteria"]] + rubric["wrong"]
    return found


@pytest.mark.parametrize("name", NAMES)
def test_every_written_question_has_a_model_answer_and_a_rubric_summing_to_its_points(name):
    master = build.master_notebook(name)
    written = build.rubrics(master)
    assert written_questions(master) >= 1 and len(written) == written_questions(master)
    for rubric in written:
        assert rubric["points"] > 0 and len(rubric["answer"].split()) >= 30 and rubric["wrong"]
        assert sum(criterion["points"] for criterion in rubric["criteria"]) == rubric["points"]


@pytest.mark.parametrize(
    "change, complaint",
    [
        (lambda source: source.replace("points: ", "points: 1", 1), "do not sum"),
        (lambda source: source.replace("\nwrong:", "\nwrongs:"), "needs exactly"),
        (lambda source: source.replace("# END RUBRIC", ""), "last line"),
    ],
)
def test_a_malformed_rubric_stops_the_build(change, complaint):
    master = build.master_notebook(NAMES[0])
    (cell,) = [cell for cell in master.cells if build.is_rubric(cell)]
    cell.source = change(cell.source)
    with pytest.raises(RuntimeError, match=complaint):
        build.rubrics(master)


def test_a_written_question_without_a_rubric_stops_the_build():
    master = build.master_notebook(NAMES[0])
    master.cells = [cell for cell in master.cells if not build.is_rubric(cell)]
    with pytest.raises(RuntimeError, match="1 written questions but 0 rubrics"):
        build.rubrics(master)


@pytest.mark.parametrize("name", NAMES)
def test_the_rubric_is_in_the_instructors_output_and_above_the_answers_in_the_manual_sheet(dist, name):
    rubric = (dist / name / "autograder" / "rubric.md").read_text()
    assert all(phrase in rubric for phrase in phrases(name))
    assert grade.load_rubrics(dist)[name] == rubric
    record = {"file": "alice.ipynb", "student_id": "alice", "written_answers": ["k3 is never negative"]}
    sheet = records.manual_text(name, [copy.deepcopy(record)], rubric)
    first_phrase = sheet.index(phrases(name)[0])
    assert first_phrase < sheet.index("## Written answer 1") < sheet.index("k3 is never negative")


@pytest.mark.parametrize("name", NAMES)
def test_no_line_of_the_rubric_reaches_the_student(dist, name):
    texts = {str(path): path.read_bytes() for path in (dist / name / "student").rglob("*") if path.is_file()}
    with zipfile.ZipFile(dist / name / "autograder" / f"{name}-autograder.zip") as archive:
        texts |= {f"zip:{member}": archive.read(member) for member in archive.namelist()}
    for phrase in [*phrases(name), build.RUBRIC_BEGIN]:
        leaked = [where for where, data in texts.items() if phrase.encode() in data]
        assert not leaked, f"{phrase[:50]!r} in {leaked}"
