"""The built site as the browser tests see it: where it is, its local server, and what a page did.

Shared by ``test_site.py`` (every page) and ``test_lab_site.py`` (the live lab of §11), and the progress recorder
by ``test_lab_browser.py`` (the lab in JupyterLab);
``conftest.py`` serves the site once per test worker (the ``site`` fixture).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots" / "site"
LAB_PAGE = "notebooks/11-bandit-lab.html"
TIMEOUT_MS = 30_000
# Window widths of the sideways-scrolling check: small and large phones, tablets, the theme's breakpoints, laptops.
WINDOW_WIDTHS = (360, 390, 768, 1024, 1100, 1280, 1920)
# After a resize, at the next frame (the resize handlers have run and the page is laid out again): the page's width
# and the window's, in one call.
OVERFLOW = """async () => {
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  return [document.documentElement.scrollWidth, window.innerWidth];
}"""
# Started before a click on *Run N steps*: at every frame, the run's progress label (``selector``) is kept until it
# reads ``done``; the page records it whatever the test process is doing, so a short run's labels are all seen.
# Read it with PROGRESS_SEEN (wait_for_function: the labels seen, once the last one is).
RECORD_PROGRESS = """([selector, done]) => {
  window.progressSeen = new Set();
  window.progressDone = false;
  const frame = () => {
    const label = document.querySelector(selector)?.innerText.trim();
    if (label) window.progressSeen.add(label);
    if (label === done) window.progressDone = true;
    else requestAnimationFrame(frame);
  };
  frame();
}"""
PROGRESS_SEEN = "() => window.progressDone && [...window.progressSeen]"
NETWORK = ("http", "https", "ws", "wss")  # blob: and data: URLs are the page's own memory, not requests


class LoggingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site and keeps (path, status) of every request in ``served``, including the ones the browser
    makes on its own (an icon), which Playwright's request events do not report."""

    served: ClassVar[list[tuple[str, int]]] = []

    def log_request(self, code="-", size="-"):
        self.served.append((self.path, int(getattr(code, "value", code))))

    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def tab(browser, width: int, height: int, *, context=None) -> Iterator:
    """A new tab with a window of ``width`` x ``height`` px and the site tests' timeout, closed afterwards: in a
    context of its own of ``browser`` or, if given, in ``context`` (whose cache it then shares)."""
    own = context is None
    if own:
        context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.set_default_timeout(TIMEOUT_MS)
    try:
        yield page
    finally:
        (context if own else page).close()


def served_errors() -> list[str]:
    return [f"{path} ({status})" for path, status in LoggingHandler.served if status >= 400]


@contextlib.contextmanager
def serve_site() -> Iterator[str]:
    """Base URL of ``_build/html`` served on a free port of 127.0.0.1."""
    assert (SITE / "index.html").is_file(), f"{SITE} is not built: run `make book` first"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(LoggingHandler, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class PageLog:
    """What a page did while this log listened: console errors, network requests, failed requests."""

    def __init__(self, page):
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.failures: list[str] = []
        self._page = page
        self._listeners = {
            "console": lambda msg: msg.type == "error" and self.errors.append(msg.text),
            "pageerror": lambda exc: self.errors.append(str(exc)),
            "request": lambda request: urlsplit(request.url).scheme in NETWORK and self.requests.append(request.url),
            "requestfailed": lambda request: self.failures.append(f"{request.url} ({request.failure})"),
            "response": lambda response: response.status >= 400 and self.failures.append(response.url),
        }
        for event, listener in self._listeners.items():
            page.on(event, listener)

    def detach(self) -> None:
        """Stop listening (the page goes on to the next visit)."""
        for event, listener in self._listeners.items():
            self._page.remove_listener(event, listener)

    def foreign_requests(self, base: str) -> list[str]:
        return [url for url in self.requests if urlsplit(url).netloc != urlsplit(base).netloc]

    def assert_clean(self, base: str) -> None:
        assert self.foreign_requests(base) == [], "requests left the site"
        assert self.failures == [], "requests failed"
        assert self.errors == [], "console errors"
