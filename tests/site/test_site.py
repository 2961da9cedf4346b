"""The built book (``make book`` → ``_build/html``) in a real browser.

Every page is served from 127.0.0.1 and opened in headless Chromium, once per
test worker, in one tab that goes from page to page as a reader's does (the
site's scripts and fonts stay cached; the first visit is checked in a fresh
tab): at 1400 px, then with its window narrowed through every width of the
checks (:func:`visit`). A page passes if it logs no console error, requests
nothing from another host and nothing that is missing (the server's own log
counts, so the browser's request for an icon is seen too), has all its math
typeset by MathJax, shows no untypeset notation outside code, shows every
image, and has no link whose image says its name again. At 1400 and at 390 px
nothing is wider than the text column unless it scrolls inside its own box, at
1400 px code cells fit without scrolling, and from 360 to 1920 px no page
scrolls sideways. Figures keep their smallest text at 9 px or more at the
column width. The lab page must render its widget
snapshot; a search for each key term of the chapter must list the section that
defines it first. A screenshot of the first screen of each page, at 1400 and at
390 px, is saved under ``_build/screenshots/site/`` for a human to look at.

Accessibility: axe-core (vendored, ``tests/_vendor/``) finds no WCAG 2.1 A or AA violation on any page, the source
listings of the API included, in light and dark mode, at 1280 and 390 px (at 390 px color-contrast checks the text
whose contrast could differ from 1280 px: AUDIT); every formula's colour has a contrast of 4.5:1 or more with its
background in both modes (MathJax draws glyphs axe cannot read); every image has alt text that describes it (not a
file name).

Each run visits the pages of VISITED (a fixed set, and five more drawn afresh: tests/sweeps.py), prints those of
PRINTED and audits the source listings of AUDITED_SOURCES; `make test-sweeps` does so for every page.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote_plus, urlsplit

import pytest
import yaml
from site_browser import (
    LAB_PAGE,
    OVERFLOW,
    ROOT,
    SCREENSHOTS,
    SITE,
    WINDOW_WIDTHS,
    LoggingHandler,
    PageLog,
    served_errors,
    tab,
)
from sweeps import sample

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from companion_book.repository import PLACEHOLDER

# Pages Sphinx writes besides the ones listed in _toc.yml.
GENERATED_PAGES = ("genindex.html", "py-modindex.html", "search.html")
REDIRECT = "index.html"  # the site's entry point, forwarding to the landing page


def toc_pages() -> list[str]:
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


PAGES = [*toc_pages(), *GENERATED_PAGES]
REFERENCE_PAGES = ("book/intro.html", "book/notation.html", "book/equations.html", "book/api.html")
# The pages a run visits (each page's checks all come from one visit: :func:`visit`): the landing page, the core
# path's first notebook (the most math) and the live lab, and three more drawn afresh each run (tests/sweeps.py);
# `make test-sweeps` visits every page.
VISITED = sample(PAGES, ("book/intro.html", "notebooks/04-group-relative-advantage.html", LAB_PAGE), 3)


@pytest.fixture(scope="module")
def tabs(browser):
    """The browser context of the ``page`` tabs: the site's scripts, styles and fonts, compiled, stay in its cache
    from one test to the next (a context of its own per test loaded and compiled MathJax and the theme each time).
    The first visit's test opens a context of its own."""
    context = browser.new_context()
    yield context
    context.close()


@pytest.fixture
def page(browser, tabs):
    with tab(browser, 1280, 900, context=tabs) as page:
        yield page


@pytest.fixture(scope="session")
def reader(browser):
    """One tab that reads page after page, as a reader does: the site's scripts, styles and fonts stay cached
    between pages (a fresh tab per page would load and compile MathJax and the theme each time)."""
    with tab(browser, WIDE, 900) as page:
        yield page


def _open(page, url: str, *, idle: bool = True) -> PageLog:
    """Load ``url`` with a fresh log; with ``idle``, wait until the network has been quiet for 500 ms (:func:`visit`
    instead goes on listening through its measurements and resizes, and reads the logs at the end)."""
    LoggingHandler.served.clear()
    log = PageLog(page)
    page.goto(url, wait_until="load")
    if idle:
        page.wait_for_load_state("networkidle")
    return log


def _screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / (name.removesuffix(".html").replace("/", "--") + ".png")), full_page=False)


@dataclass
class Visit:
    """What one page showed: loaded at 1400 px, then its window resized through every width of the checks."""

    errors: list[str]
    foreign: list[str]
    failures: list[str]
    served_errors: list[str]
    math: dict
    broken: list[str]
    figures: list[dict]
    inline_svg_text: list
    layout: dict[int, dict] = field(default_factory=dict)
    tables: list[tuple[int, int]] = field(default_factory=list)
    overflow: dict[int, tuple[int, int]] = field(default_factory=dict)
    axe: dict[tuple[str, int], dict] = field(default_factory=dict)
    figures_narrow: tuple[list[dict], list] = ([], [])  # FIGURES and INLINE_SVG_TEXT at NARROW
    named_twice: list[str] = field(default_factory=list)  # NAMED_TWICE


_VISITS: dict[str, Visit] = {}


def settle(page) -> tuple[dict, list[str]]:
    """Wait for a loaded page to be complete: its math typeset, its images decoded, its fonts loaded. Returns
    MATH_STATE's and BROKEN_IMAGES' findings."""
    math = page.evaluate(MATH_STATE)  # waits for MathJax to finish typesetting
    broken = page.evaluate(BROKEN_IMAGES)  # also: every image loaded and laid out, for the figure sizes
    page.evaluate("() => document.fonts.ready.then(() => null)")
    return math, broken


def visit(reader, site: str, name: str) -> Visit:
    """Open ``name`` once (per worker) in the ``reader`` tab and record every check's measurements, with screenshots
    at 1400 and 390 px, and axe-core's audit at 1280 and 390 px (AUDIT). Console errors are collected over the whole
    visit, resizes included."""
    if name in _VISITS:
        return _VISITS[name]
    assert (SITE / name).is_file(), f"{name} was not built"
    page = reader
    page.set_viewport_size({"width": WIDE, "height": 900})
    log = _open(page, site + name, idle=False)
    try:
        math, broken = settle(page)
        _screenshot(page, name)
        figures, inline_svg_text = page.evaluate(FIGURES), page.evaluate(INLINE_SVG_TEXT)
        named_twice = page.evaluate(NAMED_TWICE)
        layout, overflow, tables, axe, narrow = {WIDE: page.evaluate(LAYOUT)}, {}, [], {}, ([], [])
        add_axe(page)
        for width in sorted({*WINDOW_WIDTHS, NARROW}, reverse=True):
            page.set_viewport_size({"width": width, "height": 900})
            overflow[width] = tuple(page.evaluate(OVERFLOW))  # after the resize handlers and a layout
            if width == TABLE_WIDTH:
                tables = page.evaluate(TABLES)
            if width == NARROW:  # measured before the audit, while the theme's debounced handler waits (AUDIT)
                layout[NARROW] = page.evaluate(LAYOUT)
                narrow = (page.evaluate(FIGURES), page.evaluate(INLINE_SVG_TEXT))
                _screenshot(page, f"{NARROW}px/{name}")
            if width in AUDIT:
                audit_at_this_width(page, axe)
        requests = (list(log.errors), log.foreign_requests(site), list(log.failures), served_errors())
    finally:
        log.detach()
    seen = Visit(*requests, math, broken, figures, inline_svg_text, layout, tables, overflow, axe, narrow, named_twice)
    _VISITS[name] = seen
    return seen


# Typeset math (every .math element holds an mjx-container, no TeX error) and
# the text of the page outside code, which must not show TeX delimiters.
MATH_STATE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const math = [...document.querySelectorAll('.math')];
  const article = document.querySelector('article') || document.body;
  const prose = article.cloneNode(true);
  // Code, program output (cell outputs, widget snapshots, the live lab of §11) and API signatures are not prose.
  prose.querySelectorAll('pre, code, script, style, mjx-container, .highlight, .cell_output, .grpo-lab-live, .sig')
    .forEach((e) => e.remove());
  return {
    math: math.length,
    typeset: math.filter((e) => e.querySelector('mjx-container')).length,
    containers: document.querySelectorAll('mjx-container').length,
    errors: [...document.querySelectorAll('mjx-merror')].map((e) => e.getAttribute('data-mjx-error') || e.textContent),
    prose: prose.innerText,
  };
}"""

# Links whose name a screen reader says twice: an image with alt text inside a link that has text of its own.
NAMED_TWICE = """() => [...document.querySelectorAll('a')]
  .filter((a) => a.textContent.trim() && a.querySelector('img:not([alt=""])'))
  .map((a) => `${a.textContent.trim()}: ${a.querySelector('img:not([alt=""])').alt}`)"""
# Every <img> decoded: (src, naturalWidth) of those that are not.
BROKEN_IMAGES = """async () => {
  const images = [...document.images];
  images.forEach((img) => { img.loading = 'eager'; });
  await Promise.all(images.map((img) => img.decode().catch(() => null)));
  return images.filter((img) => !(img.complete && img.naturalWidth > 0)).map((img) => img.currentSrc || img.src);
}"""

RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$")

# Notation that MathJax should have typeset but that is written as plain text:
# the pattern list this test maintains. A "letter" is any Unicode letter, so
# Greek and accented letters such as Â count.
UNTYPESET_NOTATION = {
    "a TeX sub- or superscript in braces, like r_{i,t}": re.compile(r"[_^]\{"),
    "a letter with an _subscript, like π_ref, o_i, Â_i, V_φ": re.compile(r"(?<!\w)[^\W\d_]_[^\W_]"),
    "a ^superscript, like V^π, p^G, (1-p)^G": re.compile(r"(?:(?<!\w)[^\W\d_]|\))\^[^\s^]"),
    "a TeX command, like \\frac or \\pi": re.compile(r"\\[A-Za-z]{2,}"),
    "a Unicode subscript, like Â₁": re.compile("[\u2080-\u209c\u1d62-\u1d6a]"),
    "inline math left in dollars": re.compile(r"\$[^$\s][^$\n]*\$"),
}
# Generated pages list Python names (``p_best``), which are not notation.
NOTATION_FREE = {*GENERATED_PAGES}


def untypeset_notation(text: str) -> dict[str, list[str]]:
    """For each pattern of UNTYPESET_NOTATION found in ``text``: where (a few places, with some context)."""
    found = {}
    for what, pattern in UNTYPESET_NOTATION.items():
        places = [text[max(0, m.start() - 15) : m.end() + 10].replace("\n", " ") for m in pattern.finditer(text)]
        if places:
            found[what] = places[:5]
    return found


def test_the_build_holds_exactly_the_pages_of_the_table_of_contents():
    assert SITE.is_dir(), f"{SITE} is not built: run `make book` first"
    built = {
        p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html") if not p.relative_to(SITE).parts[0].startswith("_")
    }
    assert built == {*PAGES, REDIRECT}
    assert (SITE / ".nojekyll").is_file(), "GitHub Pages would not serve _static/ without it"


def test_index_forwards_to_the_landing_page(page, site):
    page.goto(site)
    page.wait_for_url(site + toc_pages()[0])
    assert page.title().startswith("GRPO Companion")


@pytest.mark.parametrize("name", VISITED)
def test_page_is_complete_and_self_contained(reader, site, name):
    seen = visit(reader, site, name)
    math = seen.math
    assert seen.foreign == [], "the page fetched something from another host"
    assert seen.failures == [], "a request of the page failed"
    assert seen.served_errors == [], "the server answered a request of the page with an error"
    assert seen.errors == [], "the page logged errors to the console (at any width)"
    assert math["typeset"] == math["math"], f"{math['math'] - math['typeset']} math elements were not typeset"
    assert math["errors"] == [], "MathJax could not typeset some TeX"
    assert not RAW_TEX.search(math["prose"]), "TeX delimiters are left in the rendered text"
    if name not in NOTATION_FREE:
        assert untypeset_notation(math["prose"]) == {}, "notation left as plain text instead of typeset math"
    assert seen.broken == [], "images that did not load"
    assert seen.named_twice == [], "links whose image says their name again (link text: the image's alt text)"


def test_the_notation_check_finds_untypeset_notation():
    """Each pattern catches what it is meant to and leaves code words and numbers alone (so the check above cannot
    pass vacuously)."""
    raw = "ratio r_{i,t} of o_i, KL to π_ref, V^π and p^G + (1-p)^G, \\frac{a}{b}, Â₁ = 0.97, $x$"
    assert set(untypeset_notation(raw)) == set(UNTYPESET_NOTATION)
    prose = "group_advantages and eps_low are names; 10 ms, x2, G = 8, clip-higher, 1e-8, 1.5B to 70B, 2^10"
    assert untypeset_notation(prose) == {}


def test_every_page_with_math_is_typeset(reader, site):
    """The check above must not pass vacuously: §4's page (which every run visits) is full of typeset math."""
    math = visit(reader, site, "notebooks/04-group-relative-advantage.html").math
    assert math["math"] > 50
    assert math["containers"] >= math["math"]


# Reference pages whose tables must fit the text column of a 1280-pixel-wide window.
TABLE_WIDTH = 1280
TABLES = """() => [...document.querySelectorAll('article table')]
  .map((t) => [t.scrollWidth, t.parentElement.clientWidth])"""


@pytest.mark.parametrize("name", [name for name in REFERENCE_PAGES if name in VISITED])
def test_reference_tables_fit_the_page(reader, site, name):
    widths = visit(reader, site, name).tables
    assert widths, "the page has tables"
    assert [w for w in widths if w[0] > w[1] + 1] == [], f"tables wider than the text column at {TABLE_WIDTH} px"


def test_no_page_links_an_asset_on_another_host():
    """Scripts, stylesheets, fonts and images come from the site, on every page, even ones loaded on demand."""
    asset = re.compile(r"""<(?:script|img|link|source|iframe)\b[^>]*?\b(?:src|href)=["']((?:https?:)?//[^"']+)""", re.I)
    offenders = {}
    pages = list(SITE.rglob("*.html"))
    assert len(pages) > len(PAGES), f"{SITE} is not built: run `make book` first"
    for path in pages:
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


# --- Layout: nothing is wider than the text column unless it scrolls in a box of its own -------------------------

WIDE, NARROW = 1400, 390  # a laptop and a phone
# Elements wider than the text column that no scrolling box of their own contains; the page's own width; and,
# at laptop width, the code cells that scroll sideways. Visually hidden elements (MathJax's assistive MathML,
# clipped to 1 px) are left out; a folded code cell (an aside's, tagged hide-cell) is measured unfolded, as a reader
# who opens it sees it. Where the right-hand table of contents is hidden (the §11 lab page on wide
# screens gives its width to the lab), that width is free too.
LAYOUT = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const article = document.querySelector('.bd-article') || document.querySelector('.bd-article-container');
  article.querySelectorAll('details.hide').forEach((folded) => { folded.open = true; });  // a folded cell, unfolded
  const box = article.getBoundingClientRect();
  const aside = document.querySelector('.bd-sidebar-secondary');
  const asideShown = aside && getComputedStyle(aside).display !== 'none' && aside.getBoundingClientRect().width > 0;
  const content = document.querySelector('.bd-content').getBoundingClientRect();
  const right = asideShown ? box.right : Math.max(box.right, content.right);
  const all = [...article.querySelectorAll('*')];
  const clipped = all.filter((e) => getComputedStyle(e).clip !== 'auto');
  const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const inScrollBox = (e) => {
    for (let a = e.parentElement; a && a !== article; a = a.parentElement) { if (scrolls(a)) return true; }
    return false;
  };
  const describe = (e) => e.tagName.toLowerCase() + [...e.classList].slice(0, 3).map((c) => '.' + c).join('')
    + ' "' + (e.innerText || '').trim().slice(0, 40).replace(/\\s+/g, ' ') + '"';
  const spills = [];
  for (const e of all) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || (r.right <= right + 1 && r.left >= box.left - 1)) continue;
    if (clipped.some((c) => c.contains(e)) || spills.some((s) => s.contains(e)) || inScrollBox(e)) continue;
    spills.push(e);
  }
  const code = [...article.querySelectorAll('div.cell_input pre')].filter((e) => e.scrollWidth > e.clientWidth + 1);
  return {
    page: document.documentElement.scrollWidth,
    spills: spills.map((e) => `${describe(e)} reaches ${Math.round(e.getBoundingClientRect().right)} px`),
    scrollingCode: code.map((e) => e.innerText.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), '')),
  };
}"""


@pytest.mark.parametrize("width", [WIDE, NARROW])
@pytest.mark.parametrize("name", VISITED)
def test_nothing_is_wider_than_the_text_column(reader, site, name, width):
    """Tables, outputs, code cells and math fit the column or scroll inside their own box; the page never scrolls
    sideways. On a laptop, code cells fit without scrolling (notebook code is at most 88 columns)."""
    layout = visit(reader, site, name).layout[width]
    assert layout["spills"] == [], "wider than the text column, and not in a box of its own that scrolls"
    assert layout["page"] <= width, "the page scrolls sideways"
    if width == WIDE:
        assert layout["scrollingCode"] == [], "code cells that scroll sideways on a laptop (longest line shown)"


@pytest.mark.parametrize("name", [name for name in VISITED if name in toc_pages()])
def test_no_page_scrolls_sideways_at_any_width(reader, site, name):
    """From a small phone to a large monitor, the page is never wider than the window."""
    wide = {width: scroll for width, (scroll, inner) in visit(reader, site, name).overflow.items() if scroll > inner}
    assert wide == {}, "window width: page width, where the page scrolls sideways"


# --- Figures: the smallest text stays legible at the column width -----------------------------------------------

MIN_TEXT_PX = 9
# Figures: the images of cell outputs and of MyST figures (not icons such as the index's toggles).
FIGURES = """() => [...document.querySelectorAll('.bd-article .cell_output img, .bd-article figure img')]
  .map((img) => ({
  src: new URL(img.currentSrc || img.src).pathname, shown: img.getBoundingClientRect().width, natural: img.naturalWidth,
}))"""
# Text of inline SVG (the lab's charts): its computed font size times the scale it is drawn at.
INLINE_SVG_TEXT = """() => [...document.querySelectorAll('.bd-article svg text')].filter((t) => t.getScreenCTM())
  .map((t) => [
    t.textContent,
    parseFloat(getComputedStyle(t).fontSize) * Math.hypot(t.getScreenCTM().a, t.getScreenCTM().b)])"""
_SVG_NS = "{http://www.w3.org/2000/svg}"
_FONT_SIZE = re.compile(r"font-size:\s*([\d.]+)|font:[^;]*?([\d.]+)px")


def _scale(transform: str) -> float:
    """How much an SVG ``transform`` attribute enlarges lengths (translate and rotate leave them as they are)."""
    factor = 1.0
    for kind, args in re.findall(r"(scale|matrix)\(([^)]*)\)", transform):
        numbers = [float(x) for x in re.split(r"[\s,]+", args.strip())]
        if kind == "scale":
            factor *= (abs(numbers[0] * numbers[-1])) ** 0.5
        else:
            factor *= abs(numbers[0] * numbers[3] - numbers[1] * numbers[2]) ** 0.5
    return factor


def _font_size(element, inherited: float) -> float:
    found = _FONT_SIZE.search(element.get("style", ""))
    if found:
        return float(found.group(1) or found.group(2))
    if element.get("font-size"):
        return float(re.match(r"[\d.]+", element.get("font-size")).group())
    return inherited


def svg_text(svg: str) -> tuple[float, list[tuple[str, float]]]:
    """The width of an SVG figure in its own units (viewBox), and each text with its font size in those units.

    A text's size is that of its largest run: Matplotlib writes a formula as one <text> whose <tspan> runs are
    the base size, with sub- and superscripts at 70 % of it, as in any typeset formula.
    """
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    view_box = root.get("viewBox")
    width = float(view_box.split()[2]) if view_box else float(re.match(r"[\d.]+", root.get("width")).group())
    texts = []

    def walk(element, scale, size):
        scale *= _scale(element.get("transform", ""))
        size = _font_size(element, size)
        if element.tag == f"{_SVG_NS}text":
            runs = [_font_size(run, size) for run in element.iter(f"{_SVG_NS}tspan")]
            texts.append(("".join(element.itertext()).strip(), max(runs or [size]) * scale))
            return
        for child in element:
            walk(child, scale, size)

    walk(root, 1.0, 16.0)  # 16: the CSS default font size
    return width, texts


def smallest_style_font_pt() -> float:
    """The smallest text of the notebooks' shared figure style (grpo_core.plotting.STYLE), in points: what a PNG
    figure is known to hold (a PNG does not record its font sizes)."""
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties

    from grpo_core.plotting import STYLE

    keys = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize", "legend.fontsize")
    with mpl.rc_context(STYLE):
        return min(FontProperties(size=mpl.rcParams[key]).get_size_in_points() for key in keys)


def figure_text_px(path: Path, shown: float, natural: float) -> list[tuple[str, float]]:
    """Each text of a figure file with the size in CSS pixels it is drawn at when the image is ``shown`` px wide."""
    if path.suffix == ".svg":
        width, texts = svg_text(path.read_text(encoding="utf8"))
        assert texts, f"{path.name}: no <text> (text drawn as paths cannot be checked: svg.fonttype 'none')"
        return [(text, size * shown / width) for text, size in texts]
    from PIL import Image

    with Image.open(path) as image:
        dpi = image.info.get("dpi", (72.0, 72.0))[0]
    return [("(the style's smallest text)", smallest_style_font_pt() * dpi / 72 * shown / natural)]


def too_small_text(figures: list[dict], inline: list) -> dict[str, list[tuple[str, float]]]:
    """The texts drawn smaller than MIN_TEXT_PX (a few per figure, with their size in px), by figure file, of the
    ``figures`` and ``inline`` SVG text a page showed (FIGURES, INLINE_SVG_TEXT)."""
    too_small = {}
    for figure in figures:
        path = SITE / figure["src"].lstrip("/")
        small = [(text, round(px, 1)) for text, px in figure_text_px(path, figure["shown"], figure["natural"])]
        small = [(text, px) for text, px in small if px < MIN_TEXT_PX]
        if small:
            too_small[path.name] = small[:5]
    small_inline = [(text, round(px, 1)) for text, px in inline if px < MIN_TEXT_PX]
    if small_inline:
        too_small["inline SVG"] = small_inline[:5]
    return too_small


@pytest.mark.parametrize("name", VISITED)
def test_figure_text_is_legible_at_the_column_width(reader, site, name):
    seen = visit(reader, site, name)
    for figure in seen.figures:
        path = SITE / figure["src"].lstrip("/")
        if path.suffix == ".svg":
            notation = untypeset_notation(" ".join(text for text, _ in svg_text(path.read_text(encoding="utf8"))[1]))
            assert notation == {}, f"{path.name}: notation as plain text in the figure"
    assert too_small_text(seen.figures, seen.inline_svg_text) == {}, (
        f"figure text smaller than {MIN_TEXT_PX} px at {WIDE} px"
    )


@pytest.mark.parametrize("name", VISITED)
def test_figure_text_is_legible_on_a_phone(reader, site, name):
    """At 390 px a figure is not scaled down with the column (its text would be 5 to 7 px): it keeps the size it
    was drawn at and scrolls sideways in a box of its own (test_nothing_is_wider_than_the_text_column allows it,
    axe-core requires the box to be focusable)."""
    figures, inline = visit(reader, site, name).figures_narrow
    assert too_small_text(figures, inline) == {}, f"figure text smaller than {MIN_TEXT_PX} px at {NARROW} px"


def test_the_figure_check_reads_svg_font_sizes():
    """The SVG reading above finds every text and its scale (so the figure check cannot pass vacuously)."""
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="460.8pt" height="230.4pt" viewBox="0 0 460.8 230.4">'
        '<g transform="translate(10 20) scale(0.5)"><text style="font: 9px \'DejaVu Sans\'">p^G</text></g>'
        '<text font-size="12" transform="rotate(-90 5 5)">loss</text>'
        '<text><tspan style="font-size: 10px">π</tspan><tspan style="font-size: 7px">θ</tspan></text></svg>'
    )
    width, texts = svg_text(svg)
    assert width == 460.8
    assert texts == [("p^G", 4.5), ("loss", 12.0), ("πθ", 10.0)]
    assert untypeset_notation(texts[0][0])


# --- Search: each key term of the chapter leads to the section that defines it ----------------------------------

# Set in _config.yml (companion_key_terms); what a reader must find first.
KEY_TERMS = {
    "zero variance": "notebooks/04-group-relative-advantage.html#property-4-1-a-group-with-nothing-to-say",
    "group-relative advantage": "notebooks/04-group-relative-advantage.html#eq-3-one-step-at-a-time",
    "competence frontier": "notebooks/04-group-relative-advantage.html#binary-rewards-how-often-is-a-group-silent",
    "clipped surrogate": "notebooks/06-clipped-surrogate-and-kl.html#the-clipped-surrogate-one-sample-at-a-time",
    "clip": "notebooks/06-clipped-surrogate-and-kl.html#the-clipped-surrogate-one-sample-at-a-time",
    "k3": "notebooks/06-clipped-surrogate-and-kl.html#three-estimators-of-the-kl-penalty",
    "KL": "notebooks/06-clipped-surrogate-and-kl.html#three-estimators-of-the-kl-penalty",
    "Dr. GRPO": "notebooks/08-ppo-rloo-dpo.html#one-group-five-advantages",
    "RLOO": "notebooks/08-ppo-rloo-dpo.html#one-group-five-advantages",
    "length bias": "notebooks/09-failure-modes.html#length-bias",
}


# One term (whose results are screenshot), and two more drawn afresh each run (tests/sweeps.py); `make test-sweeps`
# searches for every term.
@pytest.mark.parametrize("term", sample(KEY_TERMS, ("zero variance",), 2))
def test_search_lists_the_defining_section_first(reader, site, term):
    reader.set_viewport_size({"width": 1280, "height": 900})
    log = _open(reader, site + "search.html?q=" + quote_plus(term))
    try:
        reader.wait_for_function(SEARCH_FINISHED)
        hits = reader.eval_on_selector_all(
            "ul.search li a", "links => links.map((a) => new URL(a.href).pathname + new URL(a.href).hash)"
        )
        if term == "zero variance":
            _screenshot(reader, "search-zero-variance")
    finally:
        log.detach()
    assert hits, f"nothing found for {term!r}"
    assert hits[0].endswith("/" + KEY_TERMS[term]), f"{term!r}: first results {hits[:3]}"
    assert log.foreign_requests(site) == []
    assert log.errors == []


SEARCH_FINISHED = "() => (document.querySelector('.search-summary') || {}).innerText?.includes('Search finished')"


# One of the two terms, drawn afresh each run (tests/sweeps.py); `make test-sweeps` audits both.
@pytest.mark.parametrize("term", sample(["clip", "KL"], (), 1))
def test_a_search_results_page_passes_the_audit_in_both_schemes(reader, site, term):
    """The search page with results, whose found words are highlighted (inside the results' links too): axe-core
    finds no WCAG violation on it, light and dark, at 1280 and 390 px (the audit of every page sees it empty)."""

    def search(page):
        page.evaluate("(term) => Search.performSearch(term)", term)
        page.wait_for_function(SEARCH_FINISHED)
        assert page.locator("ul.search li a span.highlighted").count() > 0, "no highlighted word in a result's link"

    found = audit(reader, site, "search.html", before=search)
    audited = {(scheme, width) for width, passes in AUDIT.items() for scheme, _ in passes}
    assert set(found) == audited == {("light", 1280), ("dark", 1280), ("light", NARROW), ("dark", NARROW)}
    violations = {f"{scheme} {width}px": rules for (scheme, width), rules in found.items() if rules}
    assert violations == {}, "axe-core's violations: {rule: [(element, what fails)]}, by colour scheme and width"


# --- Print: code wraps on paper --------------------------------------------------------------------------------

# A4 paper less Chromium's default margins of 0.4 in: 8.27 in - 0.8 in at 96 px per inch.
PAPER_WIDTH = 717
# The lines of code that a printed page cuts at the right edge: for every code block whose text is wider than its
# box, the lines of it that are wider than the box's content width (measured in the block's own font).
CUT_CODE_LINES = """() => {
  const measure = document.createElement('canvas').getContext('2d');
  const cut = [];
  for (const pre of document.querySelectorAll('article pre')) {
    if (pre.scrollWidth <= pre.clientWidth + 1) continue;
    const style = getComputedStyle(pre);
    measure.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const room = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    for (const line of pre.innerText.split('\\n'))
      if (measure.measureText(line).width > room + 1) cut.push(line.trim().slice(0, 60));
  }
  return cut;
}"""
NOTEBOOK_PAGES = [name for name in PAGES if name.startswith("notebooks/")]
# §6 (the widest code), and one more drawn afresh each run; `make test-sweeps` prints every notebook page.
PRINTED = sample(NOTEBOOK_PAGES, ("notebooks/06-clipped-surrogate-and-kl.html",), 1)


@pytest.mark.parametrize("name", PRINTED)
def test_printing_a_notebook_page_cuts_no_line_of_code(page, site, name):
    """Printed, a code cell or output that is wider than the paper wraps instead of losing its end at the edge."""
    page.set_viewport_size({"width": PAPER_WIDTH, "height": 1000})
    _open(page, site + name)
    page.emulate_media(media="print")
    try:
        cut = page.evaluate(CUT_CODE_LINES)
        assert page.evaluate("() => matchMedia('print').matches")
    finally:
        page.emulate_media(media="screen")
    assert cut == [], f"{len(cut)} lines of code cut at the right edge of the paper"


# --- The repository, named once -------------------------------------------------------------------------------


def test_the_repository_url_is_named_once_and_used(page, site):
    """_config.yml's repository.url is what set-up tells readers to clone, and where the launch buttons go; while it
    is the placeholder, every page that names it says so in a warning, and there are no launch buttons."""
    url = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))["repository"]["url"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url), url
    placeholder = url == PLACEHOLDER
    _open(page, site + "book/setup.html")
    blocks = page.eval_on_selector_all("article pre", "blocks => blocks.map((b) => b.innerText)")
    assert any(f"git clone {url} grpo-companion" in block for block in blocks), blocks
    assert "<repository URL>" not in page.inner_text("article")
    for name in ("book/setup.html", "book/accessibility.html"):
        _open(page, site + name)
        warnings = page.eval_on_selector_all("article .admonition.warning", "w => w.map((x) => x.innerText)")
        assert any(f"{url} is a placeholder" in text for text in warnings) == placeholder, (name, warnings)
    _open(page, site + "notebooks/04-group-relative-advantage.html")
    launch = page.eval_on_selector_all(
        "a[href*='mybinder.org'], a[href*='colab.research']", "a => a.map((x) => x.href)"
    )
    repo = urlsplit(url).path.strip("/")
    if placeholder:
        assert launch == []
    else:
        assert any(f"mybinder.org/v2/gh/{repo}/" in href for href in launch), launch
        assert any(f"colab.research.google.com/github/{repo}/" in href for href in launch), launch


def test_a_card_title_is_a_heading(page, site):
    """The landing page's three cards ("Read", ...) have bold titles that look like headings: a screen reader lists
    them with the page's headings, one level below the section that holds them (WCAG 1.3.1)."""
    _open(page, site + "book/intro.html")
    section = page.locator("section:has(.sd-card-title)").last
    level = int(section.locator(":scope > :is(h1, h2, h3, h4, h5)").evaluate("(h) => h.tagName[1]"))
    titles = section.locator(".sd-card-title").all_inner_texts()
    assert len(titles) == 3, titles
    assert section.get_by_role("heading", level=level + 1).all_inner_texts() == titles


LANDMARKS = ("banner", "navigation", "main", "complementary", "contentinfo", "search", "region")


def test_no_landmark_is_empty(page, site):
    """A screen reader jumps from landmark to landmark: each it finds holds something (the theme's header and
    footer are empty on this site, as configured, and were announced as an empty banner and contentinfo)."""
    _open(page, site + "book/intro.html")
    empty = [
        role
        for role in LANDMARKS
        for landmark in page.get_by_role(role).all()
        if not landmark.inner_text().strip() and not landmark.locator("img, svg, input, button").count()
    ]
    assert page.get_by_role("main").count() == 1 and empty == [], "empty landmarks"


# --- The first visit ------------------------------------------------------------------------------------------


def test_every_page_names_the_site_icon():
    """A page without <link rel="icon"> makes the browser ask for /favicon.ico, which the site does not have."""
    pages = [p for p in SITE.rglob("*.html") if not p.relative_to(SITE).parts[0].startswith("_")]
    assert len(pages) == len(PAGES) + 1
    without = [p.relative_to(SITE).as_posix() for p in pages if '<link rel="icon"' not in p.read_text(encoding="utf8")]
    assert without == []


def test_the_first_visit_requests_nothing_missing(browser, site):
    LoggingHandler.served.clear()
    with tab(browser, 1280, 900) as page:  # a context of its own: nothing cached
        page.goto(site)
        page.wait_for_url(site + toc_pages()[0])
        page.wait_for_load_state("networkidle")
        page.wait_for_function("() => document.fonts.status === 'loaded'")
        deadline = time.monotonic() + 10  # the browser asks for the icon on its own, after the page has loaded
        while not any("favicon" in path for path, _ in LoggingHandler.served) and time.monotonic() < deadline:
            page.wait_for_timeout(100)
    assert any("favicon" in path for path, _ in LoggingHandler.served), "the browser never asked for the icon"
    assert served_errors() == []


# --- Accessibility: WCAG 2.1 A and AA by axe-core, in light and dark mode, on a laptop and a phone --------------

AXE = ROOT / "tests" / "_vendor" / "axe-core" / "axe.min.js"  # vendored from npm (tests/_vendor/README.md)
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# The audit of a page: at each window width, the passes (colour scheme, which rules): at 1280 px every rule, light;
# then, dark, what the colours decide (color-contrast); the same at 390 px. color-contrast measures a text only if no
# text of its contrast key (CONTRAST_KEYS) has been measured in the same colour scheme before, on any page.
# MathJax draws its glyphs as CSS content (mjx-c::before), which axe-core's color-contrast does not read: in every
# pass MATH_CONTRAST measures the colour of each formula against its background instead.
AUDIT = {
    1280: (("light", "all"), ("dark", "color-contrast")),
    NARROW: (("light", "all"), ("dark", "color-contrast")),
}
# The computed style that axe-core's color-contrast reads on a text and on each element whose background it is drawn
# on: its colours, font size and weight, shadow, stroke, filter, blending and visibility, and the pseudo-content.
STYLE_OF = """(e) => {
  const props = ['color', 'opacity', 'font-size', 'font-weight', 'text-shadow', 'background-color', 'background-image',
    '-webkit-text-stroke-width', '-webkit-text-stroke-color', '-webkit-text-fill-color', 'filter', 'mix-blend-mode',
    'visibility', 'display'];
  const s = getComputedStyle(e), before = getComputedStyle(e, '::before'), after = getComputedStyle(e, '::after');
  return props.map((p) => s.getPropertyValue(p)).concat([before.content, after.content]).join(';');
}"""
# color-contrast's verdict on a text is a function of the text's key, whatever the text, its page and the window's
# width. The check (color-contrast-evaluate in axe-core 4.14) measures a visible text's contrast from, and only from:
# - the text's own computed style (STYLE_OF: colours, size and weight, which choose the 4.5:1 or 3:1 threshold,
#   shadow, stroke, filter, pseudo-content) and its tag;
# - what it is drawn on: the backgrounds of its ancestors up to the first opaque one (STYLE_OF of each), then only
#   the opacity, filter and blending of the ancestors above that (which still tint what is drawn);
# - any other box painted under or over it: only a positioned or floating box can overlap a text that is not its
#   descendant (boxes in normal flow do not overlap; a negative margin could slide one under a text, and that is
#   not in the key), so the STYLE_OF of each such box with a background whose rectangle meets the text's is part
#   of the key (a box that moves onto a text at 390 px changes the key).
# That is the text's key. The whole site has about 330 keys in each colour scheme (bench/bench_contrast_keys.py), and
# each run of color-contrast costs axe-core a map of every box of the page (its grid: about 2 s on a page of 10,000
# elements, whether it then checks one text or all). So a key is decided once per colour scheme in a test process:
# axe-core's check is wrapped (add_axe), and each text it measures adds its key to the keys decided in the page's
# colour scheme (a pass or a violation, with its ratio; not a text it passes unmeasured as hidden, nor one it leaves
# "incomplete"), which the process keeps from page to page (DECIDED_CONTRAST). Before each pass, the texts whose key
# is not decided are marked data-contrast-check, and color-contrast runs on those only; when there are none, a pass
# of color-contrast alone runs no axe: so does every pass of most source listings, and the passes at 390 px of most
# pages. A text left out would get its key's verdict again (a violation is reported once, on the page where its key
# was decided; bench/bench_contrast_keys.py checks on every page, width and scheme that each key gets one verdict).
# Only the texts axe-core would take are marked: those of its color-contrast-matches (a form field, or an element whose
# own text is more than punctuation and emoji), and not those it calls hidden.
CONTRAST_KEYS = """(known) => {
  const styleOf = __STYLE_OF__;
  const decided = Object.fromEntries(Object.entries(known).map(([scheme, keys]) => [scheme, new Set(keys)]));
  let chains, tints, covers, clipped;
  const opaque = (s) => s.backgroundImage !== 'none' || s.backgroundColor.startsWith('rgb(');  // rgba(): see-through
  const tint = (e) => {  // the opacity, filter and blending of e and every ancestor
    if (!e) return '';
    if (!tints.has(e)) {
      const s = getComputedStyle(e);
      tints.set(e, [s.opacity, s.filter, s.mixBlendMode].join(',') + '<' + tint(e.parentElement));
    }
    return tints.get(e);
  };
  const chain = (e) => {  // e's style, then its parent's, up to the first opaque background; then the tints above
    if (!e) return '';
    if (!chains.has(e)) {
      const above = opaque(getComputedStyle(e)) ? '<' + tint(e.parentElement) : '|' + chain(e.parentElement);
      chains.set(e, styleOf(e) + above);
    }
    return chains.get(e);
  };
  const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const key = (e) => {
    if (!covers) scan();
    const box = e.getBoundingClientRect();
    const over = covers.filter(([c, rect]) => !c.contains(e) && meets(box, rect)).map(([c]) => styleOf(c));
    return [e.tagName, chain(e), ...over].join('#');
  };
  // Text that axe-core's color-contrast-matches takes: a form field, or an element whose own text nodes, joined,
  // are more than punctuation and emoji (through its own functions; joined, ", " and ", " leave a space, which
  // counts).
  const { removeUnicode, sanitize } = axe.commons.text;
  const ownText = (e) => [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.nodeValue).join('');
  const real = (e) => /^(INPUT|SELECT|TEXTAREA)$/.test(e.tagName)
    || removeUnicode(sanitize(ownText(e)), { emoji: true, nonBmp: false, punctuations: true }) !== '';
  const scan = () => {  // the boxes that may overlap a text (covers), and those that axe says clip to nothing
    covers = []; clipped = [];
    for (const c of document.querySelectorAll('body *')) {
      const s = getComputedStyle(c);
      const [top, right, bottom, left] = s.clip.startsWith('rect(') ? s.clip.match(/-?[\\d.]+/g).map(Number) : [];
      const inset = s.clipPath.match(/^(inset|circle)\\((\\d+)/);
      if ((['absolute', 'fixed'].includes(s.position) && bottom - top <= 0 && right - left <= 0)
        || (inset && (inset[1] === 'inset' ? parseInt(inset[2]) >= 50 : inset[2] === '0'))) clipped.push(c);
      else if ((s.position !== 'static' || s.float !== 'none') && s.visibility === 'visible'
        && (s.backgroundImage !== 'none' || s.backgroundColor !== 'rgba(0, 0, 0, 0)') && c.getClientRects().length) {
        covers.push([c, c.getBoundingClientRect()]);
      }
    }
  };
  const audit = {
    begin() {  // before each axe run or marking: the page's styles may have changed (colour scheme, width)
      chains = new Map(); tints = new Map(); covers = null;
    },
    record(e, verdict) {
      if (verdict === true || verdict === false) {
        (decided[document.documentElement.dataset.theme] ||= new Set()).add(key(e));
      }
    },
    mark() {  // mark the texts whose key was not decided in this colour scheme; how many
      audit.begin();
      scan();
      document.querySelectorAll('[data-contrast-check]').forEach((e) => e.removeAttribute('data-contrast-check'));
      const known = decided[document.documentElement.dataset.theme] || new Set();
      const texts = new Set(document.querySelectorAll('body input, body select, body textarea'));
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.textContent.trim() && real(n.parentElement)) texts.add(n.parentElement);
      }
      let marked = 0;
      for (const e of texts) {
        if (known.has(key(e))) continue;
        // Text that axe-core calls hidden it passes without measuring: not drawn (the browser's checkVisibility: no
        // box, visibility, the closed part of a <details>), clipped to nothing by a positioned ancestor (axe's
        // clipHidden, copied above: MathJax's assistive MathML, screen-reader-only text), or off the page (axe's
        // own isOffscreen: the skip link).
        if (!e.checkVisibility({ visibilityProperty: true }) || clipped.some((c) => c.contains(e))
          || axe.commons.dom.isOffscreen(e)) continue;
        e.setAttribute('data-contrast-check', '');
        marked++;
      }
      return marked;
    },
    decided: () => Object.fromEntries(Object.entries(decided).map(([scheme, keys]) => [scheme, [...keys]])),
  };
  window.contrastAudit = audit;
  const check = axe._audit.checks['color-contrast'], evaluate = check.evaluate;
  check.evaluate = function (node, ...rest) {
    let measured = false;  // a contrast ratio was measured (axe passes hidden text unmeasured)
    const data = this.data;
    this.data = (d) => { measured = typeof (d || {}).contrastRatio === 'number'; return data.call(this, d); };
    const verdict = evaluate.call(this, node, ...rest);
    if (measured) audit.record(node, verdict);
    return verdict;
  };
}""".replace("__STYLE_OF__", STYLE_OF)
# color-contrast checks the texts CONTRAST_KEYS marks, and no other.
CONTRAST_ONLY_MARKED = "() => axe.configure({ rules: [{ id: 'color-contrast', selector: '[data-contrast-check]' }] })"
# The contrast keys decided in this test process (each xdist worker), by colour scheme: {scheme: {key}}.
DECIDED_CONTRAST: dict[str, set[str]] = {}
# The colour of typeset math against its background, in the page: [where, contrast ratio, colour, background] of
# each formula shown whose glyphs (the colour of its mjx-c elements, whose ::before content they are) fall below
# 4.5:1 by WCAG's formula. The background is the first opaque one of its ancestors, with the see-through ones
# above it laid over it; the text's colour is weighted by its opacity and its ancestors'. Any CSS colour is read
# through a canvas (computed colours need not be rgb()).
MATH_CONTRAST = """() => {
  const ctx = Object.assign(document.createElement('canvas'), { width: 1, height: 1 })
    .getContext('2d', { willReadFrequently: true });
  const rgba = (css) => {
    ctx.clearRect(0, 0, 1, 1); ctx.fillStyle = '#000'; ctx.fillStyle = css; ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = ([r, g, b, a], [R, G, B]) => [r * a + R * (1 - a), g * a + G * (1 - a), b * a + B * (1 - a), 1];
  const luminance = (rgb) => rgb.slice(0, 3).map((v) => v / 255)
    .map((v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (x, y) => (Math.max(luminance(x), luminance(y)) + 0.05) / (Math.min(luminance(x), luminance(y)) + 0.05);
  const canvas = rgba(getComputedStyle(document.documentElement).backgroundColor)[3] === 1
    ? rgba(getComputedStyle(document.documentElement).backgroundColor) : [255, 255, 255, 1];
  const background = (e) => {
    const layers = [];
    let opacity = 1;
    for (let a = e; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      opacity *= parseFloat(s.opacity);
      if (s.backgroundImage !== 'none') return [null, opacity, a];
      const c = rgba(s.backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] === 1) break;
    }
    return [layers.reduceRight((below, layer) => over(layer, below), canvas), opacity];
  };
  const low = [];
  document.querySelectorAll('mjx-container').forEach((math, i) => {
    if (!math.getClientRects().length || getComputedStyle(math).visibility !== 'visible') return;
    const [bg, opacity, image] = background(math);
    const where = `${(math.closest('[id]') || {}).id || 'page'} math ${i}`;
    if (!bg) { low.push([where, `drawn on a background image (${image.tagName})`]); return; }
    const colours = new Set([...math.querySelectorAll('mjx-c')].map((c) => getComputedStyle(c).color));
    for (const colour of colours) {
      const [r, g, b, a] = rgba(colour);
      const contrast = ratio(over([r, g, b, a * opacity], bg), bg);
      const on = `rgb(${bg.slice(0, 3).map(Math.round)})`;
      if (contrast < 4.5) low.push([where, `${contrast.toFixed(2)}:1, ${colour} on ${on}`]);
    }
  });
  return low;
}"""
# axe-core's rules at WCAG 2.1 A and AA: {rule: [(target, why)]} of each violation (color-contrast on the texts
# CONTRAST_KEYS marks). Of what axe-core preloads before its rules, only the media (no-autoplay-audio) serves a
# rule of these tags: the style sheets (cssom) serve css-orientation-lock alone, which is experimental and not run;
# parsing them took a fifth of an axe run's time.
AXE_RUN = """async ({tags, rules}) => {
  const options = {
    resultTypes: ['violations'], runOnly: { type: 'tag', values: tags }, preload: { assets: ['media'] },
  };
  if (rules === 'color-contrast') options.runOnly = { type: 'rule', values: ['color-contrast'] };
  contrastAudit.begin();
  const result = await axe.run(document, options);
  return Object.fromEntries(result.violations.map((v) => [v.id, v.nodes.map((n) => [
    n.target.join(' '), (n.failureSummary || '').split('\\n').slice(1, 2).join('').trim().slice(0, 120)])]));
}"""
# The colour scheme the page shows (pydata-sphinx-theme's data-theme), once it follows the reader's setting.
THEME_IS = "(scheme) => document.documentElement.dataset.theme === scheme"
# pydata-sphinx-theme makes what scrolls focusable (tabindex 0; axe's scrollable-region-focusable) 300 ms after the
# last resize of the window or change of the page's main content (a debounced setTimeout). WATCH_THE_THEME mirrors
# that debounce in the page, registered after the theme's, so that its timer fires after the theme's:
# ``window.themeSettled`` resolves once the theme has caught up, in the page's own clock (a fixed wait in the
# test's clock would be too short on a loaded machine and too long on an idle one).
THEME_DEBOUNCE_MS = 300
WATCH_THE_THEME = """(ms) => {
  let timer = null, done = null;
  const restart = () => {
    clearTimeout(timer);
    if (!done) window.themeSettled = new Promise((resolve) => { done = resolve; });
    timer = setTimeout(() => { done(); done = null; }, ms);
  };
  window.addEventListener('resize', restart);
  const main = document.getElementById('main-content');
  if (main) new MutationObserver(restart).observe(main, { subtree: true, childList: true });
  restart();
}"""


# While the audit switches the colour scheme, colours change at once: a transition (the theme's search button has
# one) would let axe-core measure a colour halfway between the two schemes.
NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; }"


def add_axe(page) -> None:
    """Put axe-core into the page, with its color-contrast check recording the keys it decides (CONTRAST_KEYS) and
    its colours switching without transitions, and start WATCH_THE_THEME."""
    page.add_script_tag(path=str(AXE))
    page.evaluate(CONTRAST_KEYS, {scheme: sorted(keys) for scheme, keys in DECIDED_CONTRAST.items()})
    page.evaluate(CONTRAST_ONLY_MARKED)
    page.add_style_tag(content=NO_TRANSITIONS)
    page.evaluate(WATCH_THE_THEME, THEME_DEBOUNCE_MS)


def audit_at_this_width(page, found: dict) -> None:
    """Run the passes of AUDIT for the page's window width (axe-core is in the page) into ``found``: {(colour
    scheme, width): {rule: [(target, why)]}} (with MATH_CONTRAST's findings as "mathjax-contrast"), once the theme
    has caught up with the last resize (WATCH_THE_THEME).
    The site follows the colour scheme the reader's system asks for; the browser's own setting is given back
    afterwards."""
    width = page.viewport_size["width"]
    page.evaluate("() => window.themeSettled")
    try:
        for scheme, rules in AUDIT[width]:
            page.emulate_media(color_scheme=scheme)
            page.wait_for_function(THEME_IS, arg=scheme)
            seen = found.setdefault((scheme, width), {})
            if math := page.evaluate(MATH_CONTRAST):
                seen["mathjax-contrast"] = math
            if page.evaluate("() => contrastAudit.mark()") or rules == "all":  # texts whose key is not decided
                seen.update(page.evaluate(AXE_RUN, {"tags": WCAG_TAGS, "rules": rules}))
        for scheme, keys in page.evaluate("() => contrastAudit.decided()").items():
            DECIDED_CONTRAST.setdefault(scheme, set()).update(keys)
    finally:
        page.emulate_media(color_scheme="null")


def audit(page, site: str, name: str, *, before=None) -> dict[tuple[str, int], dict]:
    """axe-core's WCAG 2.1 A/AA violations of ``name`` after ``before(page)`` (the lab's steps), by colour scheme
    and window width (AUDIT): the page loaded at 1280 px and audited, then narrowed and audited. The pages of the
    table of contents are audited during their :func:`visit` instead, the source listings here."""
    assert (SITE / name).is_file(), f"{name} was not built"
    found: dict[tuple[str, int], dict] = {}
    size = page.viewport_size
    page.set_viewport_size({"width": 1280, "height": 900})
    try:
        _open(page, site + name, idle=False)
        settle(page)
        add_axe(page)
        if before:
            before(page)
        for width in AUDIT:
            page.set_viewport_size({"width": width, "height": 900})
            audit_at_this_width(page, found)
    finally:
        page.set_viewport_size(size)
    return found


# Every page: those of the table of contents, the generated ones and the source listing of each public module
# of grpo_core (sphinx.ext.viewcode's pages, which the API reference's [source] links open), with their index.
SOURCE_PAGES = [
    "_modules/index.html",
    *sorted(
        f"_modules/{path.relative_to(ROOT / 'src').with_suffix('.html').as_posix()}"
        for path in (ROOT / "src" / "grpo_core").rglob("*.py")
        if not path.name.startswith("_")
    ),
]


# The source listings a run audits: their index, and two more drawn afresh each run; `make test-sweeps` audits every
# listing.
AUDITED_SOURCES = sample(SOURCE_PAGES, ("_modules/index.html",), 2)


@pytest.mark.parametrize("name", [*VISITED, *AUDITED_SOURCES])
def test_axe_finds_no_wcag_violation(reader, site, name):
    """WCAG 2.1 A and AA as axe-core checks them: 0 violations on every page, light and dark, 1280 and 390 px."""
    audited = visit(reader, site, name).axe if name in VISITED else audit(reader, site, name)
    found = {f"{scheme} {width}px": rules for (scheme, width), rules in audited.items() if rules}
    assert found == {}, "axe-core's violations: {rule: [(element, what fails)]}, by colour scheme and width"


def test_the_vendored_axe_core_is_the_one_its_readme_names():
    readme = (AXE.parents[1] / "README.md").read_text(encoding="utf8")
    recorded = dict(re.findall(r"^\| `(axe-core/[^`]+)` \|.*\| `([0-9a-f]{64})` \|$", readme, re.M))
    assert recorded == {"axe-core/axe.min.js": hashlib.sha256(AXE.read_bytes()).hexdigest()}
    version = re.search(r"axe-core@([\d.]+)", readme).group(1)
    assert AXE.read_text(encoding="utf8").startswith(f"/*! axe v{version}")


def test_axe_finds_what_it_is_meant_to(reader, site):
    """The audit cannot pass vacuously: text of too little contrast, an image without alt text and an unnamed
    input put on a page are each reported, in every pass that looks for them; so is a faint word in a code block
    after words of the same class in the block's own colour (a key of its own), text
    that only a phone's window makes faint, in either scheme (CONTRAST_KEYS), and math drawn faint in dark mode
    (MATH_CONTRAST)."""

    def spoil(page):
        page.evaluate("""() => document.querySelector('article').insertAdjacentHTML('afterbegin',
          '<p style="color:#999;background:#fff">faint text</p><img src="_static/favicon.svg"><input type="range">'
          + '<div class="highlight"><pre><span class="n">alpha</span> <span class="n">beta</span> '
          + '<span class="n" id="faint-code" style="color:#bbb">gamma</span></pre></div>'
          + '<style>@media (max-width: 500px) { #phone-faint { color: #aaa } '
          + 'html[data-theme=dark] #phone-faint-dark { color: #444 } }'
          + 'html[data-theme=dark] mjx-container { color: #555 }</style>'
          + '<p id="phone-faint">faint on a phone</p><p id="phone-faint-dark">faint on a phone, dark</p>')""")

    found = audit(reader, site, "book/notation.html", before=spoil)
    assert {"color-contrast", "image-alt", "label"} <= set(found["light", 1280]), found
    contrast = {key: [target for target, _ in found[key].get("color-contrast", [])] for key in found}
    assert "#faint-code" in contrast["light", 1280], found
    assert "color-contrast" in found["dark", 1280], found
    assert {"image-alt", "label"} <= set(found["light", NARROW]), found
    assert "#phone-faint" in contrast["light", NARROW] and "#phone-faint" not in contrast["light", 1280], found
    assert "#phone-faint-dark" in contrast["dark", NARROW] and "#phone-faint-dark" not in contrast["dark", 1280], found
    assert "mathjax-contrast" in found["dark", 1280] and "mathjax-contrast" in found["dark", NARROW], found
    assert "mathjax-contrast" not in found["light", 1280], found


# Alt text: what an image shows, never its file's name.
PATH_LIKE = re.compile(r"(?:^|/)[\w.-]+\.(?:png|svg|jpe?g|gif|webp)$|^[\w./-]*/[\w./-]*$|^_?build|\bimg\b", re.I)


LINK = re.compile(r"<a\b[^>]*>(.*?)</a>", re.S)


def alt_problems(html: str) -> list[str]:
    """The <img> elements of ``html`` whose alt text is missing, empty or a path (what a screen reader says instead
    of describing the figure). An image in a link that has text of its own (a logo beside the site's name) may
    have an empty alt: the text names the link (WCAG technique H2; that no link says its name twice is checked in
    the page, where accessibility.js has run: NAMED_TWICE)."""
    named_links = [link.span() for link in LINK.finditer(html) if re.sub(r"<[^>]+>", "", link.group(1)).strip()]
    problems = []
    for image in re.finditer(r"<img\b[^>]*>", html):
        tag = image.group()
        alt = re.search(r'\balt="([^"]*)"', tag)
        text = alt.group(1).strip() if alt else None
        if text == "" and any(start < image.start() < end for start, end in named_links):
            continue
        if not text or PATH_LIKE.search(text) or len(text) < 8:
            problems.append(tag[:160])
    return problems


def problems_on_built_pages(check) -> dict[str, list[str]]:
    """``check(html)`` on every built page (the source listings left out), by page, where it finds something."""
    pages = [p for p in SITE.rglob("*.html") if not p.relative_to(SITE).parts[0].startswith("_")]
    assert len(pages) == len(PAGES) + 1, f"{SITE} is not built: run `make book` first"
    found = {path.relative_to(SITE).as_posix(): check(path.read_text(encoding="utf8")) for path in pages}
    return {page: problems for page, problems in found.items() if problems}


def test_every_image_says_what_it_shows():
    missing = problems_on_built_pages(alt_problems)
    assert missing == {}, "images whose alt text is missing, empty or a file path"


# A [source] link of the API reference (sphinx.ext.viewcode), as a screen reader lists the links of a page: its text,
# hidden parts included.
SOURCE_LINK = re.compile(r'<a\b[^>]*>\s*<span class="viewcode-link">.*?</a>', re.S)


def source_link_names(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", link).strip() for link in SOURCE_LINK.findall(html)]


def test_every_source_link_names_what_it_opens():
    """A screen reader's list of links shows each link by its name alone: 66 links named "[source]" on one page
    cannot be told apart. Each says whose source it opens ("[source] of BanditTrainer.start")."""
    names = {path.name: source_link_names(path.read_text(encoding="utf8")) for path in SITE.glob("book/api/*.html")}
    assert sum(map(len, names.values())) > 50, f"{SITE} is not built, or its API pages have no [source] links"
    repeated = {page: sorted({n for n in found if found.count(n) > 1}) for page, found in names.items()}
    assert {page: found for page, found in repeated.items() if found} == {}, "[source] links with the same name"


def test_the_alt_text_check_rejects_paths_and_empty_text():
    bad = [
        '<img src="a.png">',
        '<img alt="" src="a.png">',
        '<img alt="  " src="a.png">',
        '<img alt="../_images/7f3a9c.png" src="x">',
        '<img alt="_build/jupyter_execute/abc.svg" src="x">',
        '<img alt="figure.png" src="x">',
        '<img alt="image" src="x">',
    ]
    bad += ['<a href="#"><img src="logo.svg"><p>GRPO Companion</p></a>', '<a href="#"><img alt="" src="x.png"></a>']
    assert [len(alt_problems(tag)) for tag in bad] == [1] * len(bad)
    good = '<img alt="Bar chart of the four answers: P(B) rises from 0.25 to 0.91 in 200 steps." src="fig.png">'
    assert alt_problems(good) == []
    assert alt_problems('<a href="#"><img alt="" src="logo.svg"><p>GRPO Companion</p></a>') == []


# --- Headings: their name, in the page and in "On this page", is all of what they show ----------------------------

HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1>", re.S)
TOC_LINK = re.compile(r'<a class="reference internal nav-link" href="#([^"]+)">(.*?)</a>', re.S)


def _text(html: str) -> str:
    """What a screen reader names an element by, from its HTML: its text, without the heading's ¶ link."""
    html = re.sub(r'<a class="headerlink".*?</a>', "", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def heading_name_problems(html: str) -> list[str]:
    """The headings of a page whose name loses something they show: math typeset in a heading (MathJax draws it
    as glyphs without the formula's text), and a heading whose "On this page" entry reads otherwise."""
    article = html.split('<article class="bd-article"', 1)[-1].split("</article>", 1)[0]
    problems = [f"math in a heading: {_text(inner)!r}" for _, inner in HEADING.findall(article) if "math" in inner]
    named = {}
    for section_id, inner in re.findall(r'<section id="([^"]+)">\s*<h[1-6]\b[^>]*>(.*?)</h[1-6]>', article, re.S):
        named[section_id] = _text(inner)
    for anchor, inner in TOC_LINK.findall(html.split('id="pst-page-navigation-heading', 1)[-1]):
        if anchor in named and _text(inner) != named[anchor]:
            problems.append(f"'On this page' names {named[anchor]!r} {_text(inner)!r}")
    return problems


def test_every_heading_is_named_by_all_it_shows():
    found = problems_on_built_pages(heading_name_problems)
    assert found == {}, "headings whose name (screen reader, 'On this page') is not what they show"


def test_the_heading_check_finds_math_and_a_toc_entry_that_lost_it():
    page = (
        '<nav id="pst-page-navigation-heading-2"><a class="reference internal nav-link" href="#two">Two points:'
        ' and</a></nav><article class="bd-article"><section id="two"><h2>Two points: <span class="math notranslate'
        ' nohighlight">\\(\\pi_\\mathrm{ref}\\)</span> and<a class="headerlink" href="#two">#</a></h2></section>'
        "</article>"
    )
    assert len(heading_name_problems(page)) == 2
    fixed = page.replace(
        '<span class="math notranslate nohighlight">\\(\\pi_\\mathrm{ref}\\)</span>', "π<sub>ref</sub>"
    )
    assert len(heading_name_problems(fixed)) == 1  # the entry that reads "Two points: and" is still found
    assert heading_name_problems(fixed.replace("Two points: and</a>", "Two points: π<sub>ref</sub> and</a>")) == []
