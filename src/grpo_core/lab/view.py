"""The lab's views in JupyterLab: one anywidget whose synced state is the lab state.

Its front end is the lab's spec, the controller's formatter (``static/lab-controller.js``) and
``static/lab-view.js`` (the same modules draw the site's live lab), followed by the few lines below that connect
it to the widget model; its stylesheet is ``static/lab.css``. A click changes the one synced trait ``state``, so
it crosses to the browser as one message, and the views whose content changed are redrawn from it in one frame.
``anywidget`` (and with it ipywidgets) is imported only when a lab is built.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from grpo_core.lab.spec import script

STATIC = resources.files("grpo_core.lab") / "static"
ANYWIDGET_ENTRY = """
export default {
  render({ model, el }) {
    const view = globalThis.GRPOLab.view.mount(el, globalThis.GRPOLab.spec);
    const draw = () => view.update(model.get("state"));
    model.on("change:state", draw);
    draw();
    return () => model.off("change:state", draw);
  },
};
"""


def asset(name: str) -> str:
    """The text of one file of ``grpo_core/lab/static`` (a view module, the engine, the stylesheet)."""
    return (STATIC / name).read_text(encoding="utf8")


@cache
def view_class():
    """The anywidget class ``LabView`` (built on first use, so that importing the lab imports no widget)."""
    import anywidget
    import traitlets

    class LabView(anywidget.AnyWidget):
        """Every view of the §11 lab, drawn in the browser from ``state`` (the controller's)."""

        _esm = script() + asset("lab-controller.js") + asset("lab-view.js") + ANYWIDGET_ENTRY
        _css = asset("lab.css")
        state = traitlets.Dict().tag(sync=True)

    return LabView
