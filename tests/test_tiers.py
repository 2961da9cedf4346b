"""How tests/conftest.py splits the work between pytest-xdist workers (``make test`` runs two)."""

from conftest import xdist_scope


def test_the_cells_of_a_notebook_run_in_one_worker():
    cells = [f"notebooks/04-group-relative-advantage.ipynb::Cell {i}" for i in range(12)]
    assert {xdist_scope(cell) for cell in cells} == {"notebooks/04-group-relative-advantage.ipynb"}
    assert xdist_scope("notebooks/05-group-mean-value-estimate.ipynb::Cell 0") != xdist_scope(cells[0])


def test_the_homework_and_each_jupyterlab_file_run_in_one_worker():
    homework = ["tests/test_homework.py::test_package_is_grpo_core_whole", "tests/test_homework.py::test_x[hw1]"]
    assert {xdist_scope(test) for test in homework} == {"tests/test_homework.py"}
    assert xdist_scope("tests/test_lab_browser.py::test_lab_in_jupyterlab") == "tests/test_lab_browser.py"


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
