"""Shared pytest set-up: the test tiers, how nbval compares notebook outputs, and a real browser."""

import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw from a fixed seed (every run explores the same examples,
# so a failure reproduces) and have no per-example deadline (a loaded CI
# machine must not turn a slow example into a failure).
settings.register_profile("companion", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("companion")

# Widget views carry a random model_id on every run; what they show is tested
# in-process (tests/test_lab.py) and in a real browser instead.
NBVAL_SKIPPED_MIMETYPES = ("application/vnd.jupyter.widget-view+json", "application/javascript")

# The homework's files, in the order they are handed out: the first two start at once on the two workers (the
# first builds the assignments, which the others share: tests/homework_support.py; the second builds its clean
# environment meanwhile), the last two, one work unit (JAILED), to the worker that finishes first.
HOMEWORK_FILES = ("test_homework.py", "test_grading_clean.py", "test_grading.py", "test_grading_redteam.py")
# The red team's memory test measures the kernel's shared memory machine-wide while its jail fills its file systems
# (768 MiB): it allows 256 MiB for everything else. A bomb of test_grading.py filling another jail's file systems on
# the other worker at the same moment failed it (a fresh-clone run of 15ccd73: 1537 MiB against 1024). So the two
# files of attacks run one after the other, on one worker.
JAILED = ("test_grading.py", "test_grading_redteam.py")
# The two files that import TRL and transformers (7 CPU-s in a process): one work unit, so one worker pays it.
TRL = ("test_production_formulas.py", "test_trl_bridge.py")
# Test files whose tests share a module-scoped fixture too costly to build twice.
ONE_WORKER_FILES = (*HOMEWORK_FILES, "test_lab_browser.py", "test_jupyterlab_reader.py")
SITE_PAGE = re.compile(r"[\w/.-]+\.html")
COVERAGE = pytest.StashKey()


def xdist_scope(nodeid: str) -> str:
    """The unit of work that one pytest-xdist worker runs whole, for a test's node id.

    The cells of a notebook (each needs the ones before it, in the same kernel) and the tests of a file of
    ONE_WORKER_FILES: their file; the files of JAILED, together, and those of TRL. The tests of one page of the site
    (tests/test_site.py opens each page once per worker): that page. Any other test: its test function, with all
    its parameters.
    """
    path, _, test = nodeid.partition("::")
    file = path.rsplit("/", 1)[-1]
    for together in (JAILED, TRL):
        if file in together:
            return " + ".join(together)
    if file.endswith(".ipynb") or file in ONE_WORKER_FILES:
        return path
    function, _, parameters = test.partition("[")
    page = SITE_PAGE.match(parameters)
    if file == "test_site.py" and page:
        return f"{path}::{page.group()}"
    return f"{path}::{function}"


# Files whose tests read the built site (``make test`` builds it while the other tests run).
SITE_FILES = ("test_site.py", "test_lab_site.py")


def xdist_rank(nodeid: str) -> int:
    """When a test's work unit is handed out: 0 the homework (the longest units, so they must start first), 1 the
    other long units (notebooks, JupyterLab), 2 the built site's tests (the book is built by then; their waits on
    the browser overlap the homework's work), 3 last the many short tests, which even out the ends of the workers.
    """
    file = nodeid.partition("::")[0].rsplit("/", 1)[-1]
    if file in HOMEWORK_FILES:
        return 0
    if file.endswith(".ipynb") or file in ONE_WORKER_FILES:
        return 1
    return 2 if file in SITE_FILES else 3


def xdist_order(collection: list[str]) -> list[str]:
    """The node ids in the order their work units are handed out: by :func:`xdist_rank`, the homework's files in the
    order of HOMEWORK_FILES, then those with the most tests first; the tests of a unit keep their order."""
    sizes = Counter(map(xdist_scope, collection))

    def key(nodeid: str) -> tuple[int, int, int]:
        file = nodeid.partition("::")[0].rsplit("/", 1)[-1]
        homework = HOMEWORK_FILES.index(file) if file in HOMEWORK_FILES else 0
        return xdist_rank(nodeid), homework, -sizes[xdist_scope(nodeid)]

    return sorted(collection, key=key)


def pytest_xdist_make_scheduler(config, log):
    """``-n N`` distributes the work units of :func:`xdist_scope` in the order of :func:`xdist_rank`, then of their
    number of tests.

    ``--dist loadgroup`` with ``xdist_group`` marks would group the same tests, but it stopped grouping under
    pytest 9.2 (pytest-dev/pytest-xdist#1386: it rewrites a node id that pytest no longer reads), silently.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the workers' collections are in xdist_order already

    class SharedWorkScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return SharedWorkScheduling(config, log)


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
    """Registers :class:`NotebookHooks`. ``--measure-coverage``: each process that runs tests (each xdist worker, or
    pytest alone) measures itself into its own ``.coverage.*`` file, for ``coverage combine``. The processes the
    tests start (notebook kernels, otter, the grading sandbox) run unmeasured, at full speed, and so do the tests of
    the tiers (:class:`UnmeasuredTiers`): the unit and property tests cover the package by themselves.
    """
    config.pluginmanager.register(NotebookHooks(), "companion-notebooks")
    runs_tests = hasattr(config, "workerinput") or not config.getoption("numprocesses", None)
    if config.getoption("measure_coverage") and runs_tests:
        import coverage

        config.stash[COVERAGE] = coverage.Coverage(data_suffix=True)
        config.stash[COVERAGE].start()
        config.pluginmanager.register(UnmeasuredTiers(config, config.stash[COVERAGE]), "companion-unmeasured-tiers")


def pytest_unconfigure(config):
    if COVERAGE in config.stash:
        config.stash[COVERAGE].stop()
        config.stash[COVERAGE].save()


@pytest.hookimpl(tryfirst=True)  # before the fixtures (the site's server) are set up
def pytest_runtest_setup(item):
    if item.get_closest_marker("book"):
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
    """``--measure-coverage`` measures the tests of ``make check`` (the unit and property tests), which cover the
    package by themselves: 98 %, one line fewer than with every test measured. A test of a tier (a marker of
    pyproject.toml: browser, book, homework, nbval) runs unmeasured: its own Python (otter's, Playwright's, nbval's)
    gains nothing from the tracer and paid for it: tests/test_homework.py took 51 % more CPU-s measured, 4 % now
    (bench/bench_coverage.py). A plugin, so that it reaches the notebooks' tests in ``notebooks/`` too."""

    def __init__(self, config, coverage):
        self.coverage = coverage
        self.tiers = [line.split(":")[0] for line in config.getini("markers")]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not any(item.get_closest_marker(tier) for tier in self.tiers):
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
    """The tiers (markers registered in pyproject.toml), so that ``make check`` can leave the slow ones out; under
    xdist, the order of :func:`xdist_order`.

    ``browser``: uses the ``browser`` fixture; ``book``: needs the built site (the ``site`` fixture);
    ``homework``: the files of HOMEWORK_FILES (otter builds, jails grade); ``nbval``: a notebook's cells.
    """
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if "site" in fixtures:
            item.add_marker(pytest.mark.book)
        if item.path.name in HOMEWORK_FILES:
            item.add_marker(pytest.mark.homework)
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.nbval)
    if hasattr(config, "workerinput"):  # xdist hands out the work units in the order its workers collected them
        order = {nodeid: index for index, nodeid in enumerate(xdist_order([item.nodeid for item in items]))}
        items.sort(key=lambda item: order[item.nodeid])


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


@pytest.fixture(scope="session")
def lab_cache(browser):
    """One browser context per test worker for the tabs of the live lab's tests (tests/test_lab_site.py and
    tests/test_lab_accessibility.py): its cache keeps the §11 page's scripts, styles and fonts, compiled, from one
    tab to the next. Under xdist their tests come in many work units (:func:`xdist_scope`), between which a worker
    runs other files' tests and closes the module's tab; a tab of its own context started empty each time: the §11
    page then cost 3.0 CPU-s to load instead of 1.2."""
    context = browser.new_context()
    yield context
    context.close()


@pytest.fixture(scope="session")
def site():
    """Base URL of the built site (``_build/html``), served on 127.0.0.1 once per test worker."""
    from site_browser import serve_site

    with serve_site() as base:
        yield base
