"""Shared pytest set-up: the test tiers, how nbval compares notebook outputs, and a real browser."""

import re
import shutil

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

# Test files whose tests share a module-scoped fixture too costly to build twice.
ONE_WORKER_FILES = ("test_homework.py", "test_lab_browser.py", "test_jupyterlab_reader.py")
SITE_PAGE = re.compile(r"[\w/.-]+\.html")


def xdist_scope(nodeid: str) -> str:
    """The unit of work that one pytest-xdist worker runs whole, for a test's node id.

    The cells of a notebook (each needs the ones before it, in the same kernel) and the tests of a file of
    ONE_WORKER_FILES: their file. The tests of one page of the site (tests/test_site.py opens each page once per
    worker): that page. Any other test: its test function, with all its parameters.
    """
    path, _, test = nodeid.partition("::")
    file = path.rsplit("/", 1)[-1]
    if file.endswith(".ipynb") or file in ONE_WORKER_FILES:
        return path
    function, _, parameters = test.partition("[")
    page = SITE_PAGE.match(parameters)
    if file == "test_site.py" and page:
        return f"{path}::{page.group()}"
    return f"{path}::{function}"


def pytest_xdist_make_scheduler(config, log):
    """``-n N`` distributes the work units of :func:`xdist_scope`, those with the most tests first.

    ``--dist loadgroup`` with ``xdist_group`` marks would say the same, but it stopped grouping under pytest 9.2
    (pytest-dev/pytest-xdist#1386: it rewrites a node id that pytest no longer reads), silently.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

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


def pytest_collection_modifyitems(items):
    """The tiers (markers registered in pyproject.toml), so that ``make check`` can leave the slow ones out.

    ``browser``: uses the ``browser`` fixture; ``book``: needs the built site (the ``site`` fixture);
    ``homework``: tests/test_homework.py (otter builds and grades); ``nbval``: a notebook's cells.
    """
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if "site" in fixtures:
            item.add_marker(pytest.mark.book)
        if item.path.name == "test_homework.py":
            item.add_marker(pytest.mark.homework)
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.nbval)


def pytest_collectstart(collector):
    if getattr(collector, "path", None) is not None and collector.path.suffix == ".ipynb":
        collector.skip_compare += NBVAL_SKIPPED_MIMETYPES


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
