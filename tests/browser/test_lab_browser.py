"""The bandit lab in a real JupyterLab, driven by headless chromium.

The test starts its own JupyterLab on 127.0.0.1 (a free port, a random token,
config/runtime/settings in a temporary directory, a temporary copy of the lab
notebook so autosave never touches the repository), opens
``11-bandit-lab.ipynb``, runs every cell and then uses the lab with the mouse:
*Reset*, *Sample group*, *GRPO step*, the advantage toggle, *Run N steps*, the
G slider from the keyboard and *Sharpen π*. It asserts on the numbers the page
shows and on the kernel's messages (a click is answered by one widget update,
issue 18), saves screenshots to ``_build/screenshots/`` and fails on JavaScript
errors that concern widgets. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from site_browser import PROGRESS_SEEN, RECORD_PROGRESS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "11-bandit-lab.ipynb"
SCREENSHOTS = ROOT / "_build" / "screenshots"
JUPYTER = Path(sys.executable).parent / "jupyter"
SERVER_START_S = 90
RUN_ALL_S = 240
CLICK_S = 60
WIDGET_WORDS = ("widget", "ipywidgets", "comm", "model")


def kernel_message(payload: str | bytes) -> dict | None:
    """The Jupyter message in a kernel websocket frame, as {channel, msg_type, msg_id, parent (the msg_id of the
    request it answers), content}: JSON text, or the binary v1 protocol (uint64 count n, n uint64 offsets, then
    channel, header, parent header, metadata, content, buffers)."""
    if isinstance(payload, str):
        message = json.loads(payload)
        channel, header, parent = message.get("channel"), message.get("header", {}), message.get("parent_header", {})
        content = message.get("content", {})
    else:
        count = int.from_bytes(payload[:8], "little")
        offsets = [int.from_bytes(payload[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
        if count < 6:
            return None
        part = lambda i: payload[offsets[i] : offsets[i + 1]]  # noqa: E731
        channel, header, parent, content = (
            part(0).decode(),
            json.loads(part(1)),
            json.loads(part(2)),
            json.loads(part(4)),
        )
    return {
        "channel": channel,
        "msg_type": header.get("msg_type"),
        "msg_id": header.get("msg_id"),
        "parent": (parent or {}).get("msg_id"),
        "content": content,
    }


def widget_updates(messages: list) -> list[dict]:
    """The widget state updates among kernel messages: {comm_id, keys} of each comm_msg "update"."""
    return [
        {"comm_id": m["content"].get("comm_id"), "keys": sorted(m["content"]["data"].get("state", {}))}
        for m in messages
        if m and m["msg_type"] == "comm_msg" and m["content"].get("data", {}).get("method") == "update"
    ]


class KernelTraffic:
    """The kernel messages of a page's notebooks (:func:`kernel_message`): the page's requests and the kernel's
    messages, in the order they crossed the websocket."""

    def __init__(self, page) -> None:
        self.sent: list[dict | None] = []
        self.received: list[dict | None] = []
        self.socket = None
        page.on("websocket", self._watch)

    def _watch(self, socket) -> None:
        if "/api/kernels/" in socket.url:
            self.socket = socket
            socket.on("framesent", lambda payload: self.sent.append(kernel_message(payload)))
            socket.on("framereceived", lambda payload: self.received.append(kernel_message(payload)))

    def unanswered(self, since: int) -> list[str]:
        """The requests (shell channel) among ``sent[since:]`` that the kernel has not finished: their idle status,
        which the kernel publishes after everything else the request caused, has not arrived."""
        finished = {
            m["parent"]
            for m in self.received
            if m and m["msg_type"] == "status" and m["content"].get("execution_state") == "idle"
        }
        return [
            m["msg_type"] for m in self.sent[since:] if m and m["channel"] == "shell" and m["msg_id"] not in finished
        ]

    def wait_answered(self, since: int = 0, *, requests: int = 0, timeout_s: float = CLICK_S) -> None:
        """Wait until the page has sent at least ``requests`` requests since ``sent[since]`` and the kernel has
        finished every one of them: all the messages they cause have arrived."""

        def answered(_=None) -> bool:
            sent = [m for m in self.sent[since:] if m and m["channel"] == "shell"]
            return len(sent) >= requests and not self.unanswered(since)

        if answered():
            return
        assert self.socket is not None, "the page has no kernel websocket"
        try:
            self.socket.wait_for_event("framereceived", answered, timeout=timeout_s * 1000)
        except PlaywrightTimeout:
            raise AssertionError(
                f"the kernel did not finish the page's requests within {timeout_s} s: {self.unanswered(since)}"
            ) from None


def api(url: str, token: str, method: str = "GET", body: dict | None = None) -> bytes:
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, method=method, headers=headers, data=data)
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.read()


def write_json(path: Path, content: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))


# The user settings of the test server (JupyterLab's Settings Editor, by plugin): every cell rendered (no virtual
# scrolling), so that the lab stays in the DOM.
RENDER_EVERY_CELL = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}


def server_port(runtime: Path, pid: int) -> int:
    """The port the Jupyter server of process ``pid`` listens on, from the file it writes in its ``runtime`` folder
    once it listens (FileNotFoundError before; ValueError while it is half written)."""
    return int(json.loads((runtime / f"jpserver-{pid}.json").read_text())["port"])


@contextlib.contextmanager
def jupyterlab_server(
    home: Path, notebooks: Path | None = None, options: tuple[str, ...] = (), settings: dict = RENDER_EVERY_CELL
):
    """A JupyterLab server of our own on ``notebooks`` (default ``home / "notebooks"``; settings under ``home``),
    started with the extra command-line ``options`` and the user ``settings`` (``{}``: none, as a reader who never
    opened the Settings Editor); yields its base URL and token, stops it (and its kernels) afterwards. Also used by
    ``tests/browser/test_jupyterlab_reader.py`` and ``bench/bench_lab_jupyterlab.py``."""
    notebooks = home / "notebooks" if notebooks is None else notebooks
    write_json(  # no news pop-up
        home / "config" / "labconfig" / "page_config.json",
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}},
    )
    for plugin, values in settings.items():
        package, _, name = plugin.partition(":")
        write_json(home / "settings" / package / f"{name}.jupyterlab-settings", values)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    token, base = secrets.token_hex(16), None
    log = (home / "server.log").open("w")
    server = subprocess.Popen(
        [
            str(JUPYTER),
            "lab",
            "--no-browser",
            f"--ServerApp.token={token}",
            "--ip=127.0.0.1",
            "--port=0",  # a free port of the server's choosing, which its runtime file names
            "--port-retries=0",
            "--allow-root",
            f"--ServerApp.root_dir={notebooks}",
            *options,
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            assert server.poll() is None, f"jupyter lab exited early:\n{(home / 'server.log').read_text()}"
            try:
                base = base or f"http://127.0.0.1:{server_port(home / 'runtime', server.pid)}"
                api(f"{base}/api/status", token)
                break
            except (FileNotFoundError, ValueError, urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, f"jupyter lab did not answer within {SERVER_START_S} s"
                time.sleep(0.1)
        yield base, token
    finally:
        try:
            if base is None:
                raise ConnectionError("the server never said where it listens")
            api(f"{base}/api/shutdown", token, method="POST")  # also shuts its kernels down
            server.wait(timeout=20)
        except (urllib.error.URLError, ConnectionError, TimeoutError, subprocess.TimeoutExpired):
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """The server of :func:`jupyterlab_server` on a temporary copy of the lab notebook."""
    home = tmp_path_factory.mktemp("jupyterlab")
    (home / "notebooks").mkdir()
    shutil.copy(NOTEBOOK, home / "notebooks" / NOTEBOOK.name)
    with jupyterlab_server(home) as server:
        yield server


def card(lab, name: str) -> str:
    return lab.locator(f".grpo-lab-{name} .grpo-card-value").inner_text().strip()


# The text of the first element of a selector (the first lab's), trimmed: whether it is (or is not) a given text,
# or contains one and differs from another.
TEXT_IS = """([selector, text, wanted]) => {
  const shown = document.querySelector(selector)?.innerText.trim();
  return shown !== undefined && (shown === text) === wanted;
}"""
TEXT_HAS = """([selector, needle, previous]) => {
  const shown = document.querySelector(selector)?.innerText.trim();
  return shown !== undefined && shown !== previous && shown.includes(needle);
}"""


def wait_for_card(
    page, lab, name: str, text: str, what: str, *, wanted: bool = True, timeout_s: float = CLICK_S
) -> str:
    """Wait until card ``name`` shows ``text`` (with ``wanted=False``: anything else); return what it shows."""
    try:
        page.wait_for_function(
            TEXT_IS, arg=[f".grpo-lab .grpo-lab-{name} .grpo-card-value", text, wanted], timeout=timeout_s * 1000
        )
    except PlaywrightTimeout:
        raise AssertionError(f"{what}: card {name} still shows {card(lab, name)!r} after {timeout_s} s") from None
    return card(lab, name)


def top_of_ledger(lab) -> str:
    return lab.locator(".grpo-lab-ledger li").first.inner_text().strip()


def wait_for_ledger(page, lab, needle: str, previous: str = "", timeout_s: float = CLICK_S) -> str:
    """Wait until the newest ledger entry differs from ``previous`` and contains ``needle``; return it."""
    try:
        page.wait_for_function(
            TEXT_HAS, arg=[".grpo-lab .grpo-lab-ledger li", needle, previous], timeout=timeout_s * 1000
        )
    except PlaywrightTimeout:
        raise AssertionError(f"ledger never showed {needle!r}; newest entry {top_of_ledger(lab)!r}") from None
    return top_of_ledger(lab)


def wait_for_idle_kernel(page, timeout_s: float) -> None:
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=timeout_s * 1000)


def start_session(base: str, token: str, path: str, kernel: dict | None = None) -> str:
    """A session for the notebook ``path`` with ``kernel`` ({"id": ...} of a running one; default a new python3
    kernel): JupyterLab opening the notebook connects to it. Returns the kernel's id."""
    body = {"path": path, "type": "notebook", "name": path, "kernel": kernel or {"name": "python3"}}
    return json.loads(api(f"{base}/api/sessions", token, "POST", body))["kernel"]["id"]


def open_notebook(page, base: str, token: str, name: str) -> str:
    """Open ``name`` in JupyterLab with a python3 kernel already started for it, and wait for the kernel
    (:func:`wait_for_kernel`). Returns the kernel's id."""
    kernel = start_session(base, token, name)
    page.goto(f"{base}/lab/tree/{name}?token={token}", timeout=SERVER_START_S * 1000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=SERVER_START_S * 1000)
    wait_for_kernel(page, base, token)
    return kernel


SHOWN = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook of the tab shown (others stay in the page, hidden)
# 'dialog' while JupyterLab asks something; 'ready' once the notebook shown has a kernel of the given name (its
# toolbar reads "No Kernel" until the kernel is connected, with the status indicator already idle) and it is idle.
KERNEL_READY = f"""(name) => document.querySelector('.jp-Dialog') ? 'dialog'
  : [...document.querySelectorAll('{SHOWN}')].some((panel) =>
      panel.querySelector('.jp-KernelName')?.innerText.trim() === name
      && panel.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle') && 'ready'"""


def wait_for_kernel(page, base: str, token: str, timeout_s: float = SERVER_START_S) -> None:
    """Wait until the notebook shown is connected to an idle python3 kernel. If JupyterLab asks which kernel to start
    instead (it does when its kernelspec list arrives late on a loaded machine), accept its proposal (Python 3)."""
    name = json.loads(api(f"{base}/api/kernelspecs", token))["kernelspecs"]["python3"]["spec"]["display_name"]
    for _ in range(3):
        if page.wait_for_function(KERNEL_READY, arg=name, timeout=timeout_s * 1000).json_value() == "ready":
            return
        page.locator(".jp-Dialog .jp-mod-accept").click()
    raise AssertionError("JupyterLab kept asking which kernel to start")


RUNNING = "() => [...document.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'))"


def run_all_cells(page, attempts: int = 3) -> None:
    """Run → Run All Cells, retried (bounded) until a cell shows [*]: a menu opened while the notebook panel is
    still settling may not act."""
    for _ in range(attempts):
        page.locator(".jp-Notebook .jp-Cell").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator('.lm-Menu-item[data-command="runmenu:run-all"]:not(.lm-mod-disabled)').click()
        try:
            page.wait_for_function(RUNNING, timeout=15_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise AssertionError(f"Run All Cells did not start any cell in {attempts} attempts")


# Resolves after the second frame from now: the work JupyterLab schedules for the next frame (Lumino's update and
# layout messages) has run, and the result is on screen.
NEXT_FRAMES = "() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))"
ACTIVE_CELL = (
    "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex((c) => c.matches('.jp-mod-active'))"
)
# The contrast of every text of the lab against the background it is drawn on (WCAG's relative luminance; the
# background is the nearest opaque one of the text's element and its ancestors, semi-transparent text blended
# onto it): [number of texts measured, the texts below 4.5:1 with their ratio]. (axe-core's color-contrast cannot
# decide most of them inside JupyterLab's notebook and reports them as "incomplete".)
CONTRAST = """(selector) => {
  const rgba = (css) => (css.match(/[\\d.]+/g) || []).map(Number).concat([1]).slice(0, 4);
  const luminance = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (e) => {
    for (; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] === 1) return c;
    }
    return [255, 255, 255, 1];
  };
  const texts = [...document.querySelector(selector).querySelectorAll('*')].filter((e) =>
    [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()) && e.getClientRects().length
    && !e.closest('svg, .grpo-sr-only') && getComputedStyle(e).visibility === 'visible');
  const low = [];
  for (const e of texts) {
    const bg = background(e), fg = rgba(getComputedStyle(e).color);
    const seen = fg.slice(0, 3).map((c, i) => c * fg[3] + bg[i] * (1 - fg[3]));
    const [a, b] = [luminance(seen), luminance(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < 4.5) low.push(`${e.textContent.trim().slice(0, 30)}: ${ratio.toFixed(2)}`);
  }
  return [texts.length, low];
}"""


def set_theme(page, theme: str) -> None:
    """Settings → Theme → ``theme``, and wait until JupyterLab has applied it."""
    if page.evaluate("() => document.body.dataset.jpThemeName") != theme:
        page.locator(".lm-MenuBar-itemLabel", has_text="Settings").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
        themes = page.locator('.lm-Menu-item[data-command="apputils:change-theme"] .lm-Menu-itemLabel')
        themes.get_by_text(theme, exact=True).click()
    light = "true" if "Light" in theme else "false"
    # JupyterLab sets these attributes when it emits themeChanged, after the theme's stylesheet has loaded
    # (ThemeManager._loadTheme in @jupyterlab/apputils 4): the page is drawn in the new theme from then on.
    page.wait_for_selector(
        f'body[data-jp-theme-light="{light}"][data-jp-theme-name="{theme}"]', state="attached", timeout=CLICK_S * 1000
    )


def test_lab_in_jupyterlab(jupyterlab, browser):
    base, token = jupyterlab
    started = time.monotonic()
    context = browser.new_context(viewport={"width": 1600, "height": 1200})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    traffic = KernelTraffic(page)
    try:
        # A session with a python3 kernel before the page opens: JupyterLab then connects to it instead of
        # asking which kernel to start (it does ask when its kernelspec list arrives late on a loaded machine).
        open_notebook(page, base, token, NOTEBOOK.name)
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").first.click()  # more width
        run_all_cells(page)
        # The stored output of the first cell is text only (no kernel-side model yet): the lab appears when it runs,
        # and by then Run All has queued every other cell ([*]).
        lab = page.locator(".grpo-lab").first
        lab.wait_for(state="visible", timeout=RUN_ALL_S * 1000)
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-InputPrompt')].every(p => !p.textContent.includes('*'))",
            timeout=RUN_ALL_S * 1000,
        )
        wait_for_idle_kernel(page, RUN_ALL_S)
        assert card(lab, "step") == "5", "the notebook's recorded run takes five steps"

        lab.locator("button.grpo-lab-reset").click()
        wait_for_card(page, lab, "step", "0", "Reset")
        assert card(lab, "pB") == "0.250" and card(lab, "mean") == "—"

        lab.locator("button.grpo-lab-sample").click()
        mean = wait_for_card(page, lab, "mean", "—", "Sample group", wanted=False)
        assert 0.1 <= float(mean) <= 0.9
        assert "sampled, not yet used" in lab.locator(".grpo-lab-group").inner_text()
        assert lab.locator(".grpo-lab-group .grpo-chip").count() == 8

        traffic.wait_answered()  # everything Reset and Sample group caused has arrived
        mark, sent = len(traffic.received), len(traffic.sent)
        lab.locator("button.grpo-lab-step").click()
        wait_for_card(page, lab, "step", "1", "GRPO step")
        traffic.wait_answered(sent, requests=1)  # anything else the click caused has arrived
        updates = widget_updates(traffic.received[mark:])
        assert [update["keys"] for update in updates] == [["state"]], f"one click, one update message: {updates}"
        p_best = float(card(lab, "pB"))
        assert p_best != 0.25 and float(card(lab, "kl")) > 0
        assert card(lab, "clip") != "—"
        assert "used by the last GRPO step" in lab.locator(".grpo-lab-group").inner_text()

        lab.locator(".grpo-lab-advantage button", has_text="RLOO").click()
        wait_for_ledger(page, lab, "set advantage = RLOO")
        lab.locator(".grpo-lab-advantage button", has_text="GRPO").first.click()
        wait_for_ledger(page, lab, "set advantage = GRPO")

        steps_box = lab.locator(".grpo-lab-steps input")
        assert steps_box.input_value() == "5", "the recorded run set N = 5"
        sent = len(traffic.sent)
        steps_box.fill("30")
        steps_box.press("Enter")
        traffic.wait_answered(sent, requests=1)  # the kernel has N = 30
        page.evaluate(RECORD_PROGRESS, [".grpo-lab .grpo-lab-progress-label", "30 / 30 steps"])
        lab.locator("button.grpo-lab-run").click()
        try:  # the run is animated step by step: every label shown in a frame is kept
            seen = set(page.wait_for_function(PROGRESS_SEEN, timeout=CLICK_S * 1000).json_value())
        except PlaywrightTimeout:
            label = lab.locator(".grpo-lab-progress-label").inner_text().strip()
            raise AssertionError(f"Run N steps did not finish; progress shows {label!r}") from None
        assert any(label.endswith(" / 30 steps") for label in seen - {"30 / 30 steps"}), (
            f"no intermediate progress seen: {seen}"
        )
        wait_for_card(page, lab, "step", "31", "Run N steps")
        wait_for_ledger(page, lab, "run 30 steps")
        assert float(card(lab, "pB")) > p_best
        assert lab.locator(".grpo-lab-curves polyline").count() == 6
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        lab.scroll_into_view_if_needed()
        lab.screenshot(path=SCREENSHOTS / "lab.png")

        handle = lab.locator(".grpo-lab-group-size .noUi-handle")
        handle.focus()
        sent = len(traffic.sent)
        for _ in range(4):
            handle.press("ArrowLeft")
        wait_for_ledger(page, lab, "set G = 4")
        traffic.wait_answered(sent, requests=1)  # every key press has reached the kernel and been answered
        entries = lab.locator(".grpo-lab-ledger li").all_inner_texts()
        assert sum("set G" in entry for entry in entries) == 1, f"four key presses, one ledger entry: {entries}"
        assert lab.locator(".grpo-lab-group-size .widget-readout").inner_text().strip() == "4"
        lr = lab.locator(".grpo-lab-lr .noUi-handle")
        lr.focus()
        lr.press("ArrowRight")  # the slider sends 1.0499999999999998; the lab takes the 1.05 it shows
        wait_for_ledger(page, lab, "set learning rate = 1.05")
        replay = lab.locator(".grpo-lab-reproduce code").inner_text()
        assert "run.configure(group_size=4, lr=1.05)" in replay and "1.0499" not in replay, replay
        lab.locator("button.grpo-lab-sharpen").click()
        wait_for_ledger(page, lab, "sharpen π onto C")
        assert card(lab, "pB") == "0.020"
        for _ in range(20):  # P(all four draws are C) = 0.78: a silent group comes within a few draws
            entry = top_of_ledger(lab)
            lab.locator("button.grpo-lab-sample").click()
            wait_for_ledger(page, lab, "sample G=4", previous=entry)
            if lab.locator(".grpo-lab-warning .grpo-warning").count():
                break
        assert "No signal from this group" in lab.locator(".grpo-lab-warning").inner_text()
        lab.screenshot(path=SCREENSHOTS / "lab-zero-variance.png")
        page.screenshot(path=SCREENSHOTS / "jupyterlab.png")

        # The "onto" dropdown keeps its keys: no notebook shortcut (move the cell selection, insert a cell) fires.
        cells = page.locator(".jp-Notebook .jp-Cell")
        before = (cells.count(), page.evaluate(ACTIVE_CELL))
        onto = lab.locator(".grpo-lab-sharpen-action select")
        onto.focus()
        for key in ("ArrowDown", "ArrowUp", "a", "b", "ArrowDown", "ArrowUp"):
            onto.press(key)
        page.evaluate(NEXT_FRAMES)  # a notebook command run by a key has redrawn the notebook by then
        assert (cells.count(), page.evaluate(ACTIVE_CELL)) == before, "keys in the lab reached the notebook"

        # Contrast: every text of the lab keeps 4.5:1 in JupyterLab's Light and Dark themes.
        for theme in ("JupyterLab Light", "JupyterLab Dark"):
            set_theme(page, theme)
            checked, found = page.evaluate(CONTRAST, ".grpo-lab")
            lab.screenshot(path=SCREENSHOTS / f"lab-{theme.split()[-1].lower()}.png")
            assert checked > 100, f"{theme}: the lab's texts were measured ({checked})"
            assert found == [], f"{theme}: text of the lab below 4.5:1"
        set_theme(page, "JupyterLab Light")
    except BaseException:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOTS / "lab-failure.png")
        raise
    finally:
        context.close()
        print(f"browser test took {time.monotonic() - started:.1f} s; console errors: {errors}")
    widget_errors = [error for error in errors if any(word in error.lower() for word in WIDGET_WORDS)]
    assert not widget_errors, f"JavaScript errors about widgets: {widget_errors}"
