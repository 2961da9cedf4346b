"""The browser tier's shared page: the lab's scripts alone, for the tests of its words and of its one controller."""

import pytest

from grpo_core.lab import spec as lab_spec
from grpo_core.lab.view import asset


@pytest.fixture(scope="module")
def lab_page(browser):
    """A blank page with the spec, the engine, the view and the site's controls, nothing else."""
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
