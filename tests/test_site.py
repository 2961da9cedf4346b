"""The built book (``make book`` → ``_build/html``) in a real browser.

Every page is served from 127.0.0.1 and opened in headless Chromium. A page
passes if it logs no console error, requests nothing from another host and
nothing that is missing, has all its math typeset by MathJax, and shows every
image. The lab page must render its widget snapshot, and the search page must
find the zero-variance notebooks. A full-page screenshot of each page is saved
under ``_build/screenshots/site/`` for a human to look at.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots" / "site"
LAB_PAGE = "notebooks/11-bandit-lab.html"
ZERO_VARIANCE_PAGES = ("notebooks/04-group-relative-advantage.html", "notebooks/09-failure-modes.html")
# Pages Sphinx writes besides the ones listed in _toc.yml.
GENERATED_PAGES = ("genindex.html", "py-modindex.html", "search.html")
REDIRECT = "index.html"  # the site's entry point, forwarding to the landing page
TIMEOUT_MS = 30_000


def _toc_pages() -> list[str]:
    """The HTML page of every document in _toc.yml (what the build must contain)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf8"))

    def files(node):
        if isinstance(node, dict):
            if "file" in node:
                yield node["file"]
            for value in node.values():
                yield from files(value)
        elif isinstance(node, list):
            for item in node:
                yield from files(item)

    return [f"{name}.html" for name in [toc["root"], *files(toc.get("parts", []))]]


PAGES = [*_toc_pages(), *GENERATED_PAGES]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def site():
    """Base URL of ``_build/html`` served on a free port of 127.0.0.1."""
    assert (SITE / "index.html").is_file(), f"{SITE} is not built: run `make book` first"
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class PageLog:
    """What a page did while it loaded: console errors, requests, failures."""

    def __init__(self, page):
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.failures: list[str] = []
        page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("requestfailed", lambda request: self.failures.append(f"{request.url} ({request.failure})"))
        page.on("response", lambda response: response.status >= 400 and self.failures.append(response.url))

    def foreign_requests(self, base: str) -> list[str]:
        host = urlsplit(base).netloc
        return [
            url
            for url in self.requests
            if urlsplit(url).scheme in ("http", "https", "ws", "wss") and urlsplit(url).netloc != host
        ]


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def _open(page, url: str) -> PageLog:
    log = PageLog(page)
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return log


def _screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / (name.removesuffix(".html").replace("/", "--") + ".png")), full_page=True)


# Typeset math (every .math element holds an mjx-container, no TeX error) and
# the text of the page outside code, which must not show TeX delimiters.
MATH_STATE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const math = [...document.querySelectorAll('.math')];
  const article = document.querySelector('article') || document.body;
  const prose = article.cloneNode(true);
  prose.querySelectorAll('pre, code, script, style, mjx-container, .highlight').forEach((e) => e.remove());
  return {
    math: math.length,
    typeset: math.filter((e) => e.querySelector('mjx-container')).length,
    containers: document.querySelectorAll('mjx-container').length,
    errors: [...document.querySelectorAll('mjx-merror')].map((e) => e.getAttribute('data-mjx-error') || e.textContent),
    prose: prose.innerText,
  };
}"""

# Every <img> decoded: (src, naturalWidth) of those that are not.
BROKEN_IMAGES = """async () => {
  const images = [...document.images];
  images.forEach((img) => { img.loading = 'eager'; });
  await Promise.all(images.map((img) => img.decode().catch(() => null)));
  return images.filter((img) => !(img.complete && img.naturalWidth > 0)).map((img) => img.currentSrc || img.src);
}"""

RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$")


def test_the_build_holds_exactly_the_pages_of_the_table_of_contents():
    assert SITE.is_dir(), f"{SITE} is not built: run `make book` first"
    built = {
        p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html") if not p.relative_to(SITE).parts[0].startswith("_")
    }
    assert built == {*PAGES, REDIRECT}
    assert (SITE / ".nojekyll").is_file(), "GitHub Pages would not serve _static/ without it"


def test_index_forwards_to_the_landing_page(page, site):
    page.goto(site)
    page.wait_for_url(site + _toc_pages()[0])
    assert page.title().startswith("GRPO Companion")


@pytest.mark.parametrize("name", PAGES)
def test_page_is_complete_and_self_contained(page, site, name):
    assert (SITE / name).is_file(), f"{name} was not built"
    log = _open(page, site + name)
    math = page.evaluate(MATH_STATE)
    broken = page.evaluate(BROKEN_IMAGES)
    _screenshot(page, name)

    assert log.foreign_requests(site) == [], "the page fetched something from another host"
    assert log.failures == [], "a request of the page failed"
    assert log.errors == [], "the page logged errors to the console"
    assert math["typeset"] == math["math"], f"{math['math'] - math['typeset']} math elements were not typeset"
    assert math["errors"] == [], "MathJax could not typeset some TeX"
    assert not RAW_TEX.search(math["prose"]), "TeX delimiters are left in the rendered text"
    assert broken == [], "images that did not load"


def test_every_page_with_math_is_typeset(page, site):
    """The check above must not pass vacuously: the notation page is full of typeset math."""
    _open(page, site + "book/notation.html")
    math = page.evaluate(MATH_STATE)
    assert math["math"] > 50
    assert math["containers"] >= math["math"]


# Reference pages whose tables must fit the text column of a 1280-pixel-wide window.
REFERENCE_PAGES = ("book/intro.html", "book/notation.html", "book/equations.html", "book/api.html")


@pytest.mark.parametrize("name", REFERENCE_PAGES)
def test_reference_tables_fit_the_page(page, site, name):
    _open(page, site + name)
    page.evaluate(MATH_STATE)
    widths = page.eval_on_selector_all(
        "article table", "tables => tables.map((t) => [t.scrollWidth, t.parentElement.clientWidth])"
    )
    assert widths, "the page has tables"
    assert [w for w in widths if w[0] > w[1] + 1] == [], "tables wider than the text column"


def test_no_page_links_an_asset_on_another_host():
    """Scripts, stylesheets, fonts and images come from the site, on every page, even ones loaded on demand."""
    asset = re.compile(r"""<(?:script|img|link|source|iframe)\b[^>]*?\b(?:src|href)=["']((?:https?:)?//[^"']+)""", re.I)
    offenders = {}
    for path in SITE.rglob("*.html"):
        found = [url for url in asset.findall(path.read_text(encoding="utf8")) if not _is_hyperlink(path, url)]
        if found:
            offenders[path.relative_to(SITE).as_posix()] = found
    assert offenders == {}


def _is_hyperlink(path: Path, url: str) -> bool:
    """A <link rel="canonical"> and the like name a URL without fetching it."""
    text = path.read_text(encoding="utf8")
    tag = re.search(r"<link\b[^>]*" + re.escape(url) + r"[^>]*>", text)
    return bool(tag) and not re.search(
        r'rel=["\'](?:stylesheet|preload|icon|shortcut icon|modulepreload)', tag.group(0)
    )


def test_lab_page_renders_the_widget_snapshot(page, site):
    html = (SITE / LAB_PAGE).read_text(encoding="utf8")
    assert "application/vnd.jupyter.widget-state+json" in html, "the lab notebook's widget state is not embedded"
    log = _open(page, site + LAB_PAGE)
    lab = page.locator(".grpo-lab").first
    lab.wait_for(state="visible")
    lab.scroll_into_view_if_needed()
    assert lab.bounding_box()["height"] > 200
    assert page.locator(".grpo-lab .grpo-lab-controls").first.is_visible()
    assert page.locator(".grpo-lab .grpo-lab-views").first.is_visible()
    assert page.locator(".grpo-lab svg").count() > 0, "the lab's policy and curve views (inline SVG) are missing"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    lab.screenshot(path=str(SCREENSHOTS / "lab-widget.png"))
    assert log.foreign_requests(site) == []
    assert log.failures == []
    assert log.errors == []


def test_search_finds_the_zero_variance_notebooks(page, site):
    log = _open(page, site + "search.html?q=zero+variance")
    page.wait_for_function(
        "() => (document.querySelector('.search-summary') || {}).innerText?.includes('Search finished')"
    )
    hits = page.eval_on_selector_all("ul.search li a", "links => links.map((a) => a.getAttribute('href'))")
    _screenshot(page, "search-zero-variance")
    found = [name for name in ZERO_VARIANCE_PAGES if any(href.split("?")[0].endswith(name) for href in hits)]
    assert found, f"no zero-variance notebook among the results: {hits}"
    assert log.foreign_requests(site) == []
    assert log.errors == []


def test_notebook_pages_offer_the_md_and_the_executed_ipynb(page, site):
    name = "notebooks/04-group-relative-advantage"
    _open(page, site + f"{name}.html")
    hrefs = page.eval_on_selector_all(".dropdown-download-buttons a", "links => links.map((a) => a.href)")
    downloads = {href.rsplit(".", 1)[-1]: href for href in hrefs if href.endswith((".md", ".ipynb"))}
    assert set(downloads) == {"md", "ipynb"}
    for href in downloads.values():
        response = page.request.get(href)
        assert response.ok, href
    notebook = page.request.get(downloads["ipynb"]).json()
    outputs = [out for cell in notebook["cells"] if cell["cell_type"] == "code" for out in cell["outputs"]]
    assert outputs, "the downloadable notebook carries the outputs of the build"
    assert page.request.get(downloads["md"]).text().startswith("---\njupytext:")
