"""How tests/conftest.py splits the work between pytest-xdist workers (``make test`` runs two), in what order it
hands it out, and how the tests of the built site wait for the book that ``make test`` builds beside them."""

import threading
from pathlib import Path

import pytest
from conftest import wait_for_the_book, xdist_order, xdist_scope

pytest_plugins = ["pytester"]


def test_the_cells_of_a_notebook_run_in_one_worker():
    cells = [f"notebooks/04-group-relative-advantage.ipynb::Cell {i}" for i in range(12)]
    assert {xdist_scope(cell) for cell in cells} == {"notebooks/04-group-relative-advantage.ipynb"}
    assert xdist_scope("notebooks/05-group-mean-value-estimate.ipynb::Cell 0") != xdist_scope(cells[0])


def test_the_homework_and_each_jupyterlab_file_run_in_one_worker():
    homework = ["tests/test_homework.py::test_package_is_grpo_core_whole", "tests/test_homework.py::test_x[hw1]"]
    assert {xdist_scope(test) for test in homework} == {"tests/test_homework.py"}
    assert xdist_scope("tests/test_lab_browser.py::test_lab_in_jupyterlab") == "tests/test_lab_browser.py"


def test_the_two_files_of_attacks_run_one_after_the_other_in_one_worker():
    """The red team's memory test measures shared memory machine-wide: no bomb of test_grading.py may fill a jail's
    file systems on the other worker meanwhile."""
    jailed = [
        "tests/test_grading.py::test_bombs_leave_nothing_behind",
        "tests/test_grading.py::test_later_runs_keep_the_earlier_ones_and_time_out_an_endless_loop",
        "tests/test_grading_redteam.py::test_memory_outside_every_process_is_refused_or_counted[refused]",
    ]
    assert len({xdist_scope(test) for test in jailed}) == 1
    assert xdist_scope("tests/test_grading_clean.py::test_the_jail_needs_no_root") != xdist_scope(jailed[0])
    order = xdist_order([jailed[2], "tests/test_kl.py::test_k3_unbiased", jailed[0], jailed[1]])
    assert order[:3] == [jailed[0], jailed[1], jailed[2]]


def test_the_tests_of_one_site_page_run_in_one_worker():
    page = "book/api/bandit.html"
    tests = [
        f"tests/test_site.py::test_page_is_complete_and_self_contained[{page}]",
        f"tests/test_site.py::test_nothing_is_wider_than_the_text_column[{page}-1400]",
        f"tests/test_site.py::test_nothing_is_wider_than_the_text_column[{page}-390]",
    ]
    assert {xdist_scope(test) for test in tests} == {f"tests/test_site.py::{page}"}
    other = "tests/test_site.py::test_page_is_complete_and_self_contained[book/intro.html]"
    assert xdist_scope(other) != xdist_scope(tests[0])


def test_any_other_test_is_spread_by_function():
    assert xdist_scope("tests/test_kl.py::test_k3_nonnegative[1]") == "tests/test_kl.py::test_k3_nonnegative"
    assert xdist_scope("tests/test_kl.py::test_k3_unbiased") == "tests/test_kl.py::test_k3_unbiased"


def test_the_homework_goes_first_and_the_short_tests_last():
    collection = [
        "tests/test_site.py::test_page_is_complete_and_self_contained[book/intro.html]",
        "tests/test_kl.py::test_k3_unbiased",
        "tests/test_kl.py::test_k3_nonnegative[1]",
        "tests/test_kl.py::test_k3_nonnegative[2]",
        "notebooks/04-group-relative-advantage.ipynb::Cell 0",
        "notebooks/04-group-relative-advantage.ipynb::Cell 1",
        "tests/test_lab_site.py::test_the_lab_page_fits_every_width",
        "tests/test_homework.py::test_package_is_grpo_core_whole",
        "tests/test_lab_browser.py::test_lab_in_jupyterlab",
        "tests/test_homework.py::test_x[hw1]",
    ]
    assert xdist_order(collection) == [
        "tests/test_homework.py::test_package_is_grpo_core_whole",
        "tests/test_homework.py::test_x[hw1]",
        "notebooks/04-group-relative-advantage.ipynb::Cell 0",
        "notebooks/04-group-relative-advantage.ipynb::Cell 1",
        "tests/test_lab_browser.py::test_lab_in_jupyterlab",
        "tests/test_site.py::test_page_is_complete_and_self_contained[book/intro.html]",
        "tests/test_lab_site.py::test_the_lab_page_fits_every_width",
        "tests/test_kl.py::test_k3_nonnegative[1]",
        "tests/test_kl.py::test_k3_nonnegative[2]",
        "tests/test_kl.py::test_k3_unbiased",
    ]


def test_the_site_tests_wait_for_the_book_build(tmp_path, monkeypatch):
    status = tmp_path / "book.status"
    monkeypatch.setenv("BOOK_STATUS", str(status))
    writer = threading.Timer(0.5, status.write_text, ["0\n"])
    writer.start()
    wait_for_the_book(timeout=30)
    assert status.exists(), "returned before the build ended"
    status.write_text("2\n")
    with pytest.raises(AssertionError, match="make book failed"):
        wait_for_the_book()
    status.unlink()
    with pytest.raises(AssertionError, match="did not end within 1 s"):
        wait_for_the_book(timeout=1)
    monkeypatch.delenv("BOOK_STATUS")
    wait_for_the_book(timeout=0)  # `make book` built the site: nothing to wait for


def test_two_workers_run_each_unit_whole_and_in_the_order_given(pytester, monkeypatch):
    """A real ``pytest -n 2`` with this conftest: the homework's tests share one process and keep their order, the
    homework is handed out first, and on each worker the site's tests come before the short ones."""
    pytester.makeconftest(Path(__file__).with_name("conftest.py").read_text(encoding="utf8"))
    log = pytester.path / "order.log"
    record = f"""import os

DONE = []


def record(name):
    DONE.append(name)
    with open({str(log)!r}, "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + " " + name + "\\n")
"""
    homework = "from record import DONE, record\n\nNAMES = [f'homework{i}' for i in range(5)]\n\n\n" + "".join(
        f"def test_{i}():\n    record(NAMES[{i}])\n    assert DONE[-{i + 1}:] == NAMES[: {i + 1}]\n\n\n"
        for i in range(5)
    )
    pytester.makepyfile(
        record=record,
        test_homework=homework,
        test_site="from record import record\n\n\n"
        + "".join(f"def test_{i}():\n    record('site{i}')\n\n\n" for i in range(3)),
        test_alpha="from record import record\n\n\n"
        + "".join(f"def test_{i}():\n    record('alpha{i}')\n\n\n" for i in range(8)),
    )
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # xdist alone: a lighter start
    pytester.runpytest_subprocess("-p", "xdist.plugin", "-n", "2", "-p", "no:cacheprovider").assert_outcomes(passed=16)
    workers: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        worker, name = line.split()
        workers.setdefault(worker, []).append(name)
    assert len(workers) == 2, "both workers took work"
    (first,) = [names for names in workers.values() if "homework0" in names]
    assert first[0] == "homework0", "the homework goes first"
    for names in workers.values():
        ranks = [("homework", "site", "alpha").index(name.rstrip("0123456789")) for name in names]
        assert ranks == sorted(ranks), names
