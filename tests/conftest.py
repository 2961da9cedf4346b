"""Shared pytest set-up: the test tiers (one folder each), the sampled sweeps' seed, how nbval compares notebook
outputs, and a real browser."""

import os
import shutil
import time
from pathlib import Path

import pytest
import sweeps
from hypothesis import settings

# Property tests draw from a fixed seed (every run explores the same examples,
# so a failure reproduces) and have no per-example deadline (a loaded CI
# machine must not turn a slow example into a failure).
settings.register_profile("companion", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("companion")

# Widget views carry a random model_id on every run; what they show is tested
# in-process (tests/unit/test_lab.py) and in a real browser instead.
NBVAL_SKIPPED_MIMETYPES = ("application/vnd.jupyter.widget-view+json", "application/javascript")

# The tiers: a test's tier is the folder it is in (README, "Tests"), and the notebooks' cells are nbval's.
# unit: Python and the repository's files (`make check`); site: the built book, in Chromium; browser: Chromium and
# JupyterLab, without the book; homework: otter's builds and the bubblewrap jails; notebooks: a Jupyter kernel.
TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "site", "browser", "homework", "notebooks")
# The fixtures that tie a test to its tier's prerequisites, and the tiers that provide them.
NEEDS = {"site": ("site",), "browser": ("site", "browser"), "lab_cache": ("site", "browser")}
COVERAGE = pytest.StashKey()


def tier(path: Path) -> str | None:
    """The tier of a test file: its folder under tests/ (a file in tests/ itself has none), or ``notebooks`` for a
    notebook that nbval runs."""
    if path.suffix == ".ipynb":
        return "notebooks"
    relative = path.resolve().relative_to(TESTS) if path.resolve().is_relative_to(TESTS) else None
    return relative.parts[0] if relative is not None and len(relative.parts) > 1 else None


def misplaced(path: Path, fixtures) -> str | None:
    """Why a test of ``path`` that uses ``fixtures`` is not in the folder of its tier, or None if it is."""
    where = tier(path)
    if where not in TIERS:
        return f"{path.name} is in no tier's folder: put it in one of tests/{{{','.join(TIERS)}}}"
    for fixture, tiers in NEEDS.items():
        if fixture in fixtures and where not in tiers:
            return f"{path.name} uses the {fixture!r} fixture, which only tests/{{{','.join(tiers)}}} may use"
    return None


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_addoption(parser):
    parser.addoption(
        "--measure-coverage",
        action="store_true",
        help="measure grpo_core's coverage in every process that runs tests (pyproject.toml, [tool.coverage])",
    )
    parser.addoption(
        "--cpu-env",
        choices=CPU_SETTINGS,
        default="native",
        help="run the notebooks' kernels (nbval) under one of the settings of CPU_SETTINGS (cpu_setting_env)",
    )


def baseline_cpu_env() -> dict[str, str]:
    """The environment that makes NumPy and torch compute as on an x86-64-v2 CPU (SSE4.2, no AVX) on this machine.

    NumPy: ``NPY_DISABLE_CPU_FEATURES`` names every feature group above its baseline that NumPy dispatches to and
    this CPU has (read from NumPy at run time; those the environment already disables stay disabled); its
    OpenBLAS: ``OPENBLAS_CORETYPE=Nehalem``, unless the machine already sets a core type (some set one because
    OpenBLAS misdetects their CPU; that setting stays). torch: its own kernels at ``ATEN_CPU_CAPABILITY=default``; MKL
    (its BLAS) and oneDNN limited to SSE4.2 and SSE4.1.
    """
    from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__

    disabled = set(os.environ.get("NPY_DISABLE_CPU_FEATURES", "").replace(",", " ").split())
    above = [name for name in __cpu_dispatch__ if name not in __cpu_baseline__]
    return {
        "NPY_DISABLE_CPU_FEATURES": " ".join(name for name in above if __cpu_features__[name] or name in disabled),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "Nehalem"),
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    }


def threads(count: int) -> dict[str, str]:
    """OpenMP, MKL and OpenBLAS (NumPy's and torch's thread pools) at ``count`` threads: a reduction split over
    another number of threads adds its terms in another order."""
    return {name: str(count) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


# The settings a notebook's stored outputs must hold under (``make test-diversity``; README, "What nbval checks"):
# each changes the vendor code path or the order of a reduction that NumPy, OpenBLAS, torch, MKL or oneDNN takes.
CPU_SETTINGS = {
    "native": dict,
    "baseline": baseline_cpu_env,  # an x86-64-v2 CPU, emulated
    "mkl-compatible": lambda: {"MKL_CBWR": "COMPATIBLE"},  # MKL's conditional numerical reproducibility mode
    "mkl-avx2": lambda: {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},  # MKL's AVX2 kernels, whatever the CPU has
    "threads-1": lambda: threads(1),
    "threads-2": lambda: threads(2),
}


def cpu_setting_env(name: str) -> dict[str, str]:
    """The environment variables of the setting ``name`` of :data:`CPU_SETTINGS`."""
    return CPU_SETTINGS[name]()


def pytest_configure(config):
    """Registers :class:`NotebookHooks`; draws the seed of the sampled sweeps (:mod:`sweeps`) unless
    ``$GRPO_TEST_SEED`` names one, before the xdist workers start (they inherit it, so all collect the same sample).
    ``--measure-coverage``: each process that runs tests (each xdist worker, or pytest alone) measures the unit
    tests into its own ``.coverage.*`` file, for ``coverage combine`` (:class:`UnmeasuredTiers`). The processes the
    tests start (notebook kernels, otter, the grading sandbox) run unmeasured, at full speed.
    """
    config.pluginmanager.register(NotebookHooks(), "companion-notebooks")
    sweeps.seed()
    runs_tests = hasattr(config, "workerinput") or not config.getoption("numprocesses", None)
    if config.getoption("measure_coverage") and runs_tests:
        import coverage

        config.stash[COVERAGE] = coverage.Coverage(data_suffix=True)
        config.stash[COVERAGE].start()
        config.pluginmanager.register(UnmeasuredTiers(config.stash[COVERAGE]), "companion-unmeasured-tiers")


def pytest_report_header(config):
    return sweeps.describe()


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(sweeps.describe())


def pytest_unconfigure(config):
    if COVERAGE in config.stash:
        config.stash[COVERAGE].stop()
        config.stash[COVERAGE].save()


@pytest.hookimpl(tryfirst=True)  # before the fixtures (the site's server) are set up
def pytest_runtest_setup(item):
    if tier(item.path) == "site":
        wait_for_the_book()


class NotebookHooks:
    """The hooks for the notebooks' nbval tests. pytest calls a conftest's own hooks only for the tests under the
    conftest's folder; registered as a plugin (:func:`pytest_configure`), these reach ``notebooks/`` as well."""

    @staticmethod
    def pytest_collectstart(collector):
        if getattr(collector, "path", None) is not None and collector.path.suffix == ".ipynb":
            collector.skip_compare += NBVAL_SKIPPED_MIMETYPES

    @staticmethod
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(item):
        """``--cpu-env NAME``: a notebook's kernel, which nbval starts when it sets up the notebook's first cell,
        inherits :func:`cpu_setting_env`; the test process itself runs on as it was."""
        setting = cpu_setting_env(item.config.getoption("cpu_env"))
        if not (setting and item.path.suffix == ".ipynb"):
            return (yield)
        saved = dict(os.environ)
        os.environ.update(setting)
        try:
            return (yield)
        finally:
            os.environ.clear()
            os.environ.update(saved)


class UnmeasuredTiers:
    """``--measure-coverage`` measures the unit tests (``make check``), which cover the package by themselves: 98 %,
    one line fewer than with every test measured. The tests of the other tiers run unmeasured: their own Python
    (otter's, Playwright's, nbval's) gains nothing from the tracer and paid for it: the homework's build and grading
    tests took 51 % more CPU-s measured, 4 % unmeasured (bench/bench_coverage.py). A plugin, so that it reaches the
    notebooks' tests in ``notebooks/`` too."""

    def __init__(self, coverage):
        self.coverage = coverage

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if tier(item.path) == "unit":
            return (yield)
        self.coverage.stop()
        try:
            return (yield)
        finally:
            self.coverage.start()


def wait_for_the_book(timeout: float = 900) -> None:
    """``make test`` builds the book beside the tests and writes the build's exit status to the file named by
    ``$BOOK_STATUS`` when it ends: a test of the built site waits for it. Without ``$BOOK_STATUS`` the site in
    ``_build/html`` is taken as it is (``make book`` built it)."""
    if "BOOK_STATUS" not in os.environ:
        return
    status = Path(os.environ["BOOK_STATUS"])
    deadline = time.monotonic() + timeout
    while not status.exists():
        assert time.monotonic() < deadline, f"the book build did not end within {timeout:.0f} s"
        time.sleep(0.2)
    assert status.read_text().strip() == "0", "make book failed: _build/book.log says why"


def pytest_collection_modifyitems(config, items):
    """A test outside its tier's folder (:func:`misplaced`) fails the collection: ``make check`` runs tests/unit
    alone, so a unit test that needs the built site or a browser would fail there, and one left in tests/ itself
    would run in no tier's target."""
    found = {misplaced(item.path, getattr(item, "fixturenames", ())) for item in items} - {None}
    if found:
        raise pytest.UsageError("tests outside their tier's folder:\n" + "\n".join(sorted(found)))


@pytest.fixture(scope="session")
def browser():
    """Headless Debian chromium driven by Playwright.

    chromium is a documented prerequisite (``apt-get install chromium``, which
    ``.ci/run`` does): a missing browser fails the test, it never skips it.
    """
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: apt-get install chromium (README, prerequisites)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def lab_scripts(browser):
    """A blank page with the lab's scripts alone: the spec, the engine, the one controller, the view and the site's
    controls (tests/browser/test_lab_words.py and test_lab_controller.py)."""
    from grpo_core.lab import spec as lab_spec
    from grpo_core.lab.view import asset

    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_content("<!doctype html><title>lab</title><div id='views'></div><div id='site'></div>")
    page.add_script_tag(content=lab_spec.script())
    for name in ("lab-engine.js", "lab-controller.js", "lab-view.js", "lab-site.js"):
        page.add_script_tag(content=asset(name))
    yield page
    assert errors == []
    page.close()


@pytest.fixture(scope="session")
def lab_cache(browser):
    """One browser context per test worker for the tabs of the live lab's tests (tests/site/test_lab_site.py and
    tests/site/test_lab_accessibility.py): its cache keeps the §11 page's scripts, styles and fonts, compiled, from one
    tab to the next, and from one of the two files to the other; a tab of its own context started empty each time:
    the §11 page then cost 3.0 CPU-s to load instead of 1.2."""
    context = browser.new_context()
    yield context
    context.close()


@pytest.fixture(scope="session")
def site():
    """Base URL of the built site (``_build/html``), served on 127.0.0.1 once per test worker."""
    from site_browser import serve_site

    with serve_site() as base:
        yield base
