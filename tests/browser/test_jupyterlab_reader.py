"""A reader's JupyterLab, as ``make lab`` configures it, in headless Chromium.

JupyterLab runs with the project's own configuration
(``jupyterlab/jupyter_lab_config.py`` and ``jupyterlab/overrides.json``) on a
temporary git clone of the notebooks and the book's pages, so the checkout
is never touched, and with empty user settings, so the reader's own JupyterLab
settings cannot interfere. A reader opens a notebook, finds its answers folded
and its math typeset, runs every cell, saves and closes it: afterwards
``git status`` must be clean. The file browser must open on ``notebooks/`` and
list each notebook once. Every link of the rendered notebooks leads somewhere
(the server's root is the project), a link to a book page opens the page, and
the browser's console shows no error of jupyterlab-myst's rendering.
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import jupytext
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from sweeps import sample
from test_lab_browser import (
    SERVER_START_S,
    SHOWN,
    api,
    jupyterlab_server,
    run_all_cells,
    start_session,
    wait_for_kernel,
)

ROOT = Path(__file__).resolve().parents[2]
LAB_CONFIG = ROOT / "jupyterlab" / "jupyter_lab_config.py"
NOTEBOOKS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.md"))
# Run All in §6 (which logged an error once) and one more drawn afresh each run (tests/sweeps.py); all of them in
# `make test-sweeps`.
RUN_ALL = sample(NOTEBOOKS, ("06-clipped-surrogate-and-kl",), 1)
READ = "04-group-relative-advantage"  # a notebook with folded answers and math in them
LINKED = "06-clipped-surrogate-and-kl"  # a notebook with a link to one of its own sections
SCREENSHOTS = ROOT / "_build" / "screenshots"
RUN_ALL_S = 240


def git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A git repository holding the project's notebooks, book pages, .gitignore and jupytext.toml, all committed."""
    repo = tmp_path_factory.mktemp("clone")
    for folder in ("notebooks", "book"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    for name in (".gitignore", "jupytext.toml"):
        shutil.copy(ROOT / name, repo / name)
    git(repo, "init", "--quiet")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "the notebooks")
    assert git(repo, "status", "--porcelain") == ""
    return repo


@pytest.fixture(scope="module")
def reader_lab(clone, tmp_path_factory):
    """JupyterLab started like ``make lab`` (its config file) on the clone, for a reader with no settings of their
    own (the project's overrides.json applies); yields base URL and token. Its workspaces (open tabs) are its own,
    not the checkout's ``_build/jupyterlab-workspaces``: a run never reopens the tabs of an earlier one, or of the
    developer's own ``make lab``."""
    home = tmp_path_factory.mktemp("jupyterlab-reader")
    options = (f"--config={LAB_CONFIG}", f"--LabApp.workspaces_dir={home / 'workspaces'}")
    with jupyterlab_server(home, clone, options, settings={}) as server:
        yield server


@pytest.fixture(scope="module")
def reader_tab(browser):
    """One browser tab for the file's browser tests, as a reader keeps JupyterLab open: the app is loaded once
    (:func:`app_in`), and each test opens its notebooks in it and closes them."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


def app_in(page, base: str, token: str) -> None:
    """JupyterLab in ``page`` with no notebook and no dialog open: as the test before left it or, for the first
    test (or after one that failed midway), loaded in an empty workspace (``?reset``)."""
    if page.url.startswith(f"{base}/lab") and page.locator(".jp-NotebookPanel, .jp-Dialog").count() == 0:
        return
    page.goto(f"{base}/lab?token={token}&reset", timeout=SERVER_START_S * 1000)
    page.locator(".lm-MenuBar-itemLabel", has_text="File").first.wait_for(timeout=SERVER_START_S * 1000)


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_each_md_is_stored_as_jupyterlab_saves_it(stem):
    """Every notebook, not only the one the browser test runs: JupyterLab sets the kernelspec of the kernel it
    starts (name, display name, language, in that order), and jupytext writes the .md with the metadata filter of
    the project's jupytext.toml. The result must be the file as it is stored, byte for byte."""
    path = ROOT / "notebooks" / f"{stem}.md"
    spec = KernelSpecManager().get_kernel_spec("python3")
    notebook = jupytext.read(path)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": spec.display_name, "language": spec.language}
    fmt = {
        "extension": ".md",
        "format_name": "myst",
        "notebook_metadata_filter": tomllib.loads((ROOT / "jupytext.toml").read_text())["notebook_metadata_filter"],
    }
    assert jupytext.writes(notebook, fmt=fmt) == path.read_text(encoding="utf8"), (
        f"saving {path.name} in JupyterLab would rewrite it: store it as jupytext writes it"
    )


@pytest.mark.parametrize("uid", [0, 1000])
def test_root_may_start_it_and_only_root_is_told_it_may(monkeypatch, uid):
    """A container or a Codespace runs ``make lab`` as root, whom Jupyter refuses unless allow_root is set: the
    configuration sets it for uid 0 alone, and keeps the server on localhost."""
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setattr("os.geteuid", lambda: uid)
    config = PyFileConfigLoader(LAB_CONFIG.name, path=str(LAB_CONFIG.parent)).load_config()
    assert config.ServerApp.allow_root is (uid == 0)
    assert config.ServerApp.ip == "localhost"


def test_the_landing_page_names_its_links_and_cites_in_words():
    """jupyterlab-myst shows a link without text as its raw path and leaves a {cite} role as its bare key: the landing
    page (book/intro.md, which a notebook's link opens in JupyterLab) names every link, each notebook by its title,
    and cites in words, so that its table reads the same there as on the site."""
    text = (ROOT / "book" / "intro.md").read_text(encoding="utf8")
    assert re.findall(r"\[\]\([^)]*\)", text) == [], "links without text"
    assert re.findall(r"\{cite(?::\w+)?\}`[^`]*`", text) == [], "citation roles"
    named = dict((target, name) for name, target in re.findall(r"\[([^\]]+)\]\(\.\./(notebooks/[^)#]+\.md)\)", text))
    titles = {
        f"notebooks/{path.name}": re.search(r"^# (.+)$", path.read_text(encoding="utf8"), re.M).group(1)
        for path in (ROOT / "notebooks").glob("*.md")
    }
    assert named and named == {target: titles[target] for target in named}


def test_the_project_settings_apply(reader_lab):
    """overrides.json: no news pop-up (and no update check), a .md opens as a notebook."""
    base, token = reader_lab

    def composite(plugin: str) -> dict:
        """The plugin's effective settings: its defaults (where overrides.json applies) under the user's settings."""
        answer = json.loads(api(f"{base}/lab/api/settings/{plugin}", token))
        defaults = {key: spec.get("default") for key, spec in answer["schema"]["properties"].items()}
        return {**defaults, **answer["settings"]}

    notification = composite("@jupyterlab/apputils-extension:notification")
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False
    viewers = composite("@jupyterlab/docmanager-extension:plugin")["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook"}


def test_the_file_browser_opens_on_the_notebooks_and_lists_each_once(reader_lab):
    base, token = reader_lab
    lab = api(f"{base}/lab", token).decode()
    page_config = json.loads(
        re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', lab, re.S)[1]
    )
    assert page_config["preferredPath"] == "notebooks", "the file browser opens on notebooks/"
    listing = json.loads(api(f"{base}/api/contents/notebooks", token))
    names = sorted(item["name"] for item in listing["content"])
    assert names == [f"{stem}.md" for stem in NOTEBOOKS], "one entry per notebook: its .md (the .ipynb is hidden)"


# What the rendered Markdown of the open notebook shows: jupyterlab-myst renders an
# answer (``{admonition}`` with ``:class: dropdown``) as a <details> element.
ANSWERS = """() => {
  const text = [...document.querySelectorAll('.jp-MarkdownCell.jp-mod-rendered')]
    .map((c) => c.innerText).join('\\n');
  const answers = [...document.querySelectorAll('.jp-MarkdownCell details')]
    .filter((d) => (d.querySelector('summary') || {}).innerText?.includes('Answer'));
  return {
    text: text.length,
    answers: answers.length,
    open: answers.filter((d) => d.open).length,
    hiddenText: answers.filter((d) => !d.open).map((d) => d.innerText).join(' ').length,
    katex: document.querySelectorAll('.jp-MarkdownCell .katex').length,
    dollars: (text.match(/\\$[^$\\n]+\\$/g) || []).length,
    directives: (text.match(/:class:|```\\{|\\{admonition\\}/g) || []).length,
  };
}"""


def test_a_book_page_is_read_only_as_a_notebook(reader_lab):
    """Saved in the notebook format a book page would gain a jupytext header, so JupyterLab gets it read-only as a
    notebook (and neither autosaves it nor saves it on Ctrl+S); as a file, and a notebook as a notebook, stay
    writable."""
    base, token = reader_lab

    def writable(path: str, kind: str) -> bool:
        return json.loads(api(f"{base}/api/contents/{path}?type={kind}&content=0", token))["writable"]

    assert writable("book/intro.md", "notebook") is False
    assert writable("book/intro.md", "file") is True
    assert writable(f"notebooks/{READ}.md", "notebook") is True


# Every link of the rendered Markdown: where it leads and, for a link into the server (a file or a notebook), the
# HTTP status of what it leads to (null for a link to another site or to an anchor of the page).
LINKS = """async () => {
  const anchors = [...document.querySelectorAll('.jp-MarkdownCell a[href]')];
  return Promise.all(anchors.map(async (a) => {
    const url = new URL(a.href, document.baseURI);
    const local = url.origin === location.origin && !a.getAttribute('href').startsWith('#');
    return {text: a.innerText, href: a.getAttribute('href'),
            status: local ? (await fetch(url, {credentials: 'same-origin'})).status : null};
  }));
}"""
# The book page a notebook's link opened (book/intro.md), as JupyterLab shows it once its text is rendered: a
# MyST notebook of Markdown cells (jupytext.toml reads every .md as MyST), its headings and typeset math, any MyST
# markup left as text, and any dialog still shown over it.
BOOK_PAGE_SHOWN = f"""() => {{
  const panel = document.querySelector('{SHOWN}');
  if (!panel || !panel.querySelector('.jp-MarkdownCell.jp-mod-rendered h1')) return null;
  const text = panel.innerText;
  return {{
    headings: [...panel.querySelectorAll('.jp-MarkdownCell h1')].map((h) => h.innerText.replace('¶', '').trim()),
    math: panel.querySelectorAll('.katex').length,
    raw: (text.match(/[:{{]\\w+[}}:]|;sd-|1\\.2em/g) || []),
    dialog: document.querySelector('.jp-Dialog')?.innerText ?? null,
    modified: !!document.querySelector('#jp-main-dock-panel .lm-TabBar-tab.jp-mod-current.jp-mod-dirty'),
  }};
}}"""
# jupyterlab-myst's errors: JupyterLab's cell toolbar reading a rendered Markdown cell that jupyterlab-myst draws
# itself (TypeError in _markdownOverlapsToolbar), and a link to a heading that has no explicit label.
MYST_ERRORS = ("_markdownOverlapsToolbar", "heading reference")


# Markdown links, [text](target), and what becomes of them in JupyterLab: an anchor whose href is the target or, for a
# relative one, whose resolved path ends with the target's path from the server's root. RENDERED gives the targets
# not rendered (yet).
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
RENDERED = """(targets) => {
  const anchors = [...document.querySelectorAll('.jp-MarkdownCell a[href]')]
    .map((a) => [a.getAttribute('href'), decodeURI(new URL(a.href).pathname)]);
  return targets.filter((t) => !anchors.some(([href, path]) => href === t || path.endsWith('/' + t)));
}"""


def wait_for_links(page, stem: str) -> None:
    """Wait until every link of the notebook's Markdown is rendered: jupyterlab-myst draws each cell, then resolves
    the links and references of the whole notebook, cell by cell, over a few seconds."""
    notebook = jupytext.read(ROOT / "notebooks" / f"{stem}.md")
    targets = sorted(
        {
            t if t.startswith(("http://", "https://", "#")) else posixpath.normpath(posixpath.join("notebooks", t))
            for c in notebook.cells
            if c.cell_type == "markdown"
            for t in MARKDOWN_LINK.findall(c.source)
        }
    )
    try:
        page.wait_for_function(
            f"(targets) => ({RENDERED})(targets).length === 0", arg=targets, timeout=SERVER_START_S * 1000
        )
    except PlaywrightTimeout:
        raise AssertionError(
            f"{stem}: links of its Markdown not rendered: {page.evaluate(RENDERED, targets)}"
        ) from None


def open_in_app(page, base: str, token: str, path: str) -> None:
    """File → Open from Path… in the app already loaded, and wait for the notebook's kernel."""
    page.locator(".lm-MenuBar-itemLabel", has_text="File").first.click()
    page.locator('.lm-Menu-item[data-command="filebrowser:open-path"]').click()
    page.locator(".jp-Dialog input").fill(path)
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.wait_for_selector(f"{SHOWN} .jp-Cell", timeout=SERVER_START_S * 1000)
    wait_for_kernel(page, base, token)


# 'dialog' while JupyterLab asks something, 'closed' once no notebook is left.
CLOSING = "() => document.querySelector('.jp-Dialog') ? 'dialog' : !document.querySelector('.jp-Notebook') && 'closed'"


def close_notebook(page) -> None:
    """File → Close All Tabs; discard what JupyterLab asks to keep (a notebook run or read, not saved: its kernel's
    metadata); wait until no notebook is shown."""
    page.locator(".lm-MenuBar-itemLabel", has_text="File").first.click()
    page.locator('.lm-Menu-item[data-command="application:close-all"]').click()
    for _ in range(3):
        if page.wait_for_function(CLOSING, timeout=60_000).json_value() == "closed":
            return
        page.locator(".jp-Dialog button", has_text="Discard").click()
    raise AssertionError("JupyterLab kept asking what to keep")


def close_shown(page) -> None:
    """File → Close Tab on the tab shown; fail if JupyterLab asks anything (such as whether to save it)."""
    count = page.locator(".jp-NotebookPanel").count()
    page.locator(".lm-MenuBar-itemLabel", has_text="File").first.click()
    page.locator('.lm-Menu-item[data-command="application:close"]').click()
    closed = f"""() => document.querySelector('.jp-Dialog') ? 'dialog'
      : document.querySelectorAll('.jp-NotebookPanel').length < {count} && 'closed'"""
    if page.wait_for_function(closed, timeout=60_000).json_value() == "dialog":
        raise AssertionError(f"closing asked: {page.locator('.jp-Dialog').inner_text()}")


def listen(page, on_console, on_error) -> None:
    page.on("console", on_console)
    page.on("pageerror", on_error)


def stop_listening(page, on_console, on_error) -> None:
    page.remove_listener("console", on_console)
    page.remove_listener("pageerror", on_error)


def test_open_run_save_and_close_leaves_git_clean(reader_lab, clone, reader_tab):
    base, token = reader_lab
    page = reader_tab
    errors: list[str] = []
    listeners = (
        lambda message: errors.append(message.text) if message.type == "error" else None,
        lambda error: errors.append(f"uncaught: {error}"),
    )
    listen(page, *listeners)
    name = f"notebooks/{READ}.md"
    try:
        app_in(page, base, token)
        start_session(base, token, name)
        open_in_app(page, base, token, name)
        page.wait_for_selector(".jp-MarkdownCell details", timeout=SERVER_START_S * 1000)
        rendered = page.evaluate(ANSWERS)
        wait_for_links(page, READ)
        links = page.evaluate(LINKS)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(".jp-MarkdownCell details").first.scroll_into_view_if_needed()
        page.screenshot(path=SCREENSHOTS / "jupyterlab-reader-answer.png")

        run_all_cells(page)
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-InputPrompt')].every(p => !p.textContent.includes('*'))",
            timeout=RUN_ALL_S * 1000,
        )
        page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=RUN_ALL_S * 1000)
        outputs = page.locator(".jp-Notebook .jp-OutputArea-output").count()
        with page.expect_response(lambda r: r.request.method == "PUT" and "/api/contents/" in r.url) as saved:
            page.keyboard.press("Control+s")
        assert saved.value.ok, f"saving failed: HTTP {saved.value.status}"
        close_notebook(page)
        open_in_app(page, base, token, f"notebooks/{LINKED}.md")  # its Markdown rendered, not run
        wait_for_links(page, LINKED)
        links += page.evaluate(LINKS)
        page.locator(f"{SHOWN} .jp-MarkdownCell a", has_text="all sections").first.click()  # a book page
        # JupyterLab asks which kernel a notebook that names none should run (a page has no code): No Kernel. Had
        # the page failed to load, the dialog would say so instead.
        asked = page.locator(".jp-Dialog").inner_text(timeout=SERVER_START_S * 1000)
        if "select kernel" not in asked.lower():
            raise AssertionError(f"opening a book page from a notebook's link: {asked}")
        page.locator(".jp-Dialog button", has_text="No Kernel").click()
        page.wait_for_selector(".jp-Dialog", state="detached")
        page.wait_for_function(BOOK_PAGE_SHOWN, timeout=SERVER_START_S * 1000)
        page.evaluate(IDLE)  # whatever reads the page's model once it is drawn has read it
        book_page = page.evaluate(BOOK_PAGE_SHOWN)
        page.screenshot(path=SCREENSHOTS / "jupyterlab-reader-book-page.png")
        page.locator(f"{SHOWN} .jp-MarkdownCell").first.click()
        page.keyboard.press("Control+s")  # refused: the page is read-only as a notebook (git status stays clean)
        page.get_by_text("is read-only").first.wait_for(timeout=SERVER_START_S * 1000)
        close_shown(page)  # a page only read asks nothing on close
        close_notebook(page)
    except BaseException:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOTS / "jupyterlab-reader-failure.png")
        raise
    finally:
        stop_listening(page, *listeners)

    assert rendered["answers"] >= 4, f"the Try-it answers are not folded <details>: {rendered}"
    assert rendered["open"] == 0, "an answer is open before the reader opens it"
    assert rendered["text"] > 2000, f"the notebook's Markdown was not rendered: {rendered}"
    assert rendered["directives"] == 0, "MyST directives shown as raw text"
    assert rendered["katex"] > 20 and rendered["dollars"] == 0, f"math is not typeset: {rendered}"
    assert outputs > 10, "Run All produced the notebook's outputs"
    assert len(links) >= 5, f"the notebooks' links were not rendered: {links}"
    assert book_page["dialog"] is None, f"a book page asked: {book_page['dialog']}"
    assert not book_page["modified"], "a book page only opened is marked modified"
    assert book_page["headings"][0] == "GRPO Companion" and book_page["math"] > 0, f"not the page: {book_page}"
    assert not book_page["raw"], f"the book page shows MyST markup as text: {book_page['raw']}"
    broken = [link for link in links if link["status"] not in (None, 200)]
    assert not broken, f"links that lead nowhere in JupyterLab: {broken}"
    myst_errors = [error for error in errors if any(sign in error for sign in MYST_ERRORS)]
    assert not myst_errors, f"jupyterlab-myst's errors in the browser console: {myst_errors}"
    status = git(clone, "status", "--porcelain")
    assert status == "", f"opening, running and saving changed the clone:\n{status}\n{git(clone, 'diff')}"


# Settings → Notebook (tracker) as the reader has them: nothing of their own, so the project's overrides.json applies.
TRACKER = "@jupyterlab/notebook-extension:tracker"
CODE_DONE = f"""() => [...document.querySelectorAll('{SHOWN} .jp-CodeCell .jp-InputPrompt')]
  .every((p) => /\\d/.test(p.textContent))"""
# Resolves when the browser is next idle, after the idle callbacks asked for before (the cell toolbar measures the
# active cell in one: JupyterLab 4.6's _updateCellForToolbarOverlap), or after 60 s of no idle time.
IDLE = "() => new Promise((resolve) => requestIdleCallback(resolve, {timeout: 60000}))"


def test_run_all_logs_no_console_error_in_any_notebook(reader_lab, clone, reader_tab):
    """Run All in each notebook of RUN_ALL, as a reader's JupyterLab shows it (JupyterLab's own settings under the
    project's, and no user settings): the browser's console stays empty. jupyterlab-myst 2.7 draws a
    Markdown cell after JupyterLab 4.6 thinks it drawn, and cells out of view later still: without the project's
    settings, the cell toolbar threw a TypeError in _markdownOverlapsToolbar on 7 or 8 of 13 notebooks, and 06 logged
    "No target for internal reference". What is checked is the notebooks' Markdown, so each code cell is replaced
    by ``pass`` (its outputs are nbval's, and the test above runs 04's real code), and each notebook is opened with
    File → Open from Path…, in the app already loaded, on the first one's kernel (a session made for it beforehand:
    one kernel started, not thirteen)."""
    base, token = reader_lab
    folder = clone / "run-all"  # beside notebooks/: their links to ../book/ lead to the clone's book
    folder.mkdir()
    for stem in RUN_ALL:
        notebook = jupytext.read(ROOT / "notebooks" / f"{stem}.md")
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.source, cell.outputs = "pass", []
        jupytext.write(notebook, folder / f"{stem}.md", fmt="md:myst")
    assert json.loads(api(f"{base}/lab/api/settings/{TRACKER}", token))["raw"] == "{}", "the reader has settings"
    page = reader_tab
    errors: dict[str, list[str]] = {}
    listeners = (
        lambda message: message.type == "error" and errors[stem].append(message.text),
        lambda error: errors[stem].append(f"uncaught: {error} {(error.stack or '').split(chr(10))[1:2]}"),
    )
    listen(page, *listeners)
    kernel = None
    try:
        app_in(page, base, token)
        for stem in RUN_ALL:
            errors[stem] = []
            kernel = start_session(base, token, f"run-all/{stem}.md", kernel and {"id": kernel})
            open_in_app(page, base, token, f"run-all/{stem}.md")
            page.locator(f"{SHOWN} .jp-Cell").first.click()
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator('.lm-Menu-item[data-command="runmenu:run-all"]:not(.lm-mod-disabled)').click()
            page.wait_for_function(CODE_DONE, timeout=RUN_ALL_S * 1000)
            page.evaluate(IDLE)  # the toolbar has measured the cell Run All left active
            close_notebook(page)
    finally:
        stop_listening(page, *listeners)
        shutil.rmtree(folder)
    assert {stem: found for stem, found in errors.items() if found} == {}, "console errors during Run All"
