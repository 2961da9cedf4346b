"""The JupyterLab lab's controls: ipywidgets built from :mod:`grpo_core.lab.spec` (the site's ``lab-site.js`` builds
the same controls in plain HTML from the same definition), laid out beside the view widget.

:func:`build` returns them as :class:`Controls`; the lab (:class:`grpo_core.lab.BanditLab`) links each knob's
control to its trait, and each button calls ``press(name)`` of the lab, which hands them to the one controller.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import traitlets

from grpo_core.lab.spec import (
    ACTIONS,
    KNOB,
    KNOBS,
    LIMITS,
    TITLE,
    TOP_ACTION,
    WORDS,
    sharpen_minimum,
    sharpen_start,
    subtitle,
)

CONTROL_WIDTH = "298px"
LABEL_STYLE = {"description_width": "104px"}
TOGGLE_STYLE = {"button_width": "92px"}
SHARPEN = LIMITS["sharpen_prob"]


class Knobs(traitlets.HasTraits):
    """A trait per knob of :data:`~grpo_core.lab.spec.KNOBS` (named as the field of
    :class:`~grpo_core.bandit.GRPOConfig` it sets), each linked to its control by :meth:`link_knobs`.

    Setting a trait, from code or by moving its control, calls ``self.configure(name, value)``, which the lab
    defines: the controller's *configure* action, which refuses a value no control can reach (a TypeError or
    ValueError naming the knob; the trait keeps its value) and returns the value it took.
    """

    locals().update({knob.name: traitlets.TraitType(knob.default, help=knob.label) for knob in KNOBS})
    __signature__ = inspect.Signature()  # not HasTraits.__new__'s (*args, **kwargs), for help() and the API page

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__signature__ = inspect.signature(functools.partial(cls.__init__, None))  # the subclass's own

    def link_knobs(self, controls: dict) -> None:
        """Link each knob's trait to its control (``controls`` by knob name): either follows the other."""
        for name, control in controls.items():
            traitlets.link((self, name), (control, "value"))

    def show_config(self, config: dict) -> None:
        """Set the traits, and through their links the controls, to ``config`` (what the engine has), without
        configuring anything."""
        with self.cross_validation_lock:
            for name, value in config.items():
                setattr(self, name, value)

    @traitlets.validate(*KNOB)
    def _configure(self, proposal):
        name, value = proposal.trait.name, proposal.value
        current = getattr(self, name)
        if type(value) is type(current) and value == current:
            return current  # what moving a control to where it is does: nothing
        return self.configure(name, value)


def close(widget) -> None:
    """Close ``widget`` and every widget in it (their models leave the kernel and the saved widget state)."""
    stack = [widget]
    while stack:
        widget = stack.pop()
        stack.extend(getattr(widget, "children", ()))
        widget.close()


def _classed(widget, css: str):
    """``widget`` with the CSS class ``css`` (what the lab's stylesheet and the tests select on)."""
    widget.add_class(css)
    return widget


@dataclass
class Controls:
    """The lab's widgets: ``knobs`` and ``buttons`` by name, the seed box, the N box, *Sharpen π*'s target and
    probability, and ``widget``, the whole lab (header, controls and ``view``)."""

    knobs: dict
    buttons: dict
    seed: object
    steps: object
    sharpen_action: object
    sharpen_prob: object
    widget: object = None


def build(widgets, view, *, seed: int, names, rewards, press) -> Controls:
    """The controls for a run of ``seed`` over the answers ``names`` (rewards ``rewards``), beside
    ``view``."""
    controls = Controls(
        knobs=_knobs(widgets),
        buttons=_buttons(widgets, press),
        seed=_control(widgets, widgets.Text, "seed", value=str(seed)),
        steps=_control(
            widgets, widgets.BoundedIntText, "steps", value=LIMITS["steps"], min=1, max=LIMITS["max_steps_per_run"]
        ),
        sharpen_action=_control(
            widgets,
            widgets.Dropdown,
            "sharpen_action",
            options=[(WORDS["top_action"], TOP_ACTION), *((name, k) for k, name in enumerate(names))],
            value=sharpen_start(len(names)),
        ),
        sharpen_prob=_control(
            widgets,
            widgets.FloatSlider,
            "sharpen_prob",
            value=SHARPEN["default"],
            min=sharpen_minimum(len(names)),
            max=SHARPEN["maximum"],
            step=SHARPEN["step"],
            continuous_update=False,
            readout_format=".2f",
        ),
    )
    controls.widget = _layout(widgets, controls, view, names, rewards)
    return controls


def _wide(widgets):
    return widgets.Layout(width=CONTROL_WIDTH)


def _control(widgets, kind, name: str, **options):
    """A ``kind`` control as wide as the column, with the CSS class ``grpo-lab-<name>`` and ``options``; unless they
    say otherwise, labelled ``WORDS[name]`` in a label column of ``LABEL_STYLE``."""
    options = {"style": LABEL_STYLE, **options}
    if "description" not in options:
        options["description"] = WORDS[name]
    return _classed(kind(layout=_wide(widgets), **options), f"grpo-lab-{name.replace('_', '-')}")


def _knobs(widgets) -> dict:
    """A slider or toggle per knob of :data:`grpo_core.lab.spec.KNOBS` (the lab links each to its trait)."""
    knobs = {}
    for knob in KNOBS:
        if knob.options is not None:
            kind, options = widgets.ToggleButtons, {"options": knob.options, "description": "", "style": TOGGLE_STYLE}
        else:
            kind = widgets.IntSlider if knob.integer else widgets.FloatSlider
            options = {"description": knob.label, "min": knob.minimum, "max": knob.maximum, "step": knob.step}
            options |= {"continuous_update": False} | ({} if knob.integer else {"readout_format": f".{knob.digits}f"})
        knobs[knob.name] = _control(widgets, kind, knob.name, value=knob.default, **options)
    return knobs


def _buttons(widgets, press) -> dict:
    """The buttons of :data:`~grpo_core.lab.spec.ACTIONS`, by name, each calling ``press(name)``."""
    buttons = {}
    for action in ACTIONS:
        widget = widgets.Button(
            description=action.label,
            button_style=action.style,
            icon=action.icon,
            tooltip=action.tooltip,
            layout=widgets.Layout(width="145px"),
        )
        widget.on_click(lambda _, name=action.name: press(name))
        buttons[action.name] = _classed(widget, f"grpo-lab-{action.name}")
    return buttons


def _layout(widgets, controls: Controls, view, names, rewards):
    """Header above; controls in sections beside (or, on a narrow lab, above) the views."""
    # the lab's title and its parts' titles are headings (WCAG 1.3.1), below a notebook's or a page's h2
    titled = '<div class="grpo-section" role="heading" aria-level="4">{}</div>'
    section = lambda title: widgets.HTML(titled.format(title))  # noqa: E731
    header = _classed(
        widgets.HTML(
            f'<div class="grpo-header-title" role="heading" aria-level="3">{TITLE}</div>'
            f'<div class="grpo-header-sub">{subtitle(names, rewards)}</div>'
        ),
        "grpo-lab-header",
    )
    note = widgets.HTML(f'<div class="grpo-note">{WORDS["note"]}</div>')
    actions, sharpen = WORDS["sections"]
    buttons = controls.buttons
    knobs, heading = [], None
    for knob in KNOBS:
        if knob.section != heading:
            heading = knob.section
            knobs.append(section(heading))
        knobs.append(controls.knobs[knob.name])
    column = _classed(
        widgets.VBox(
            [
                *knobs,
                section(actions),
                widgets.HBox([buttons["sample"], buttons["step"]]),
                widgets.HBox([buttons["run"], buttons["reset"]]),
                controls.steps,
                controls.seed,
                section(sharpen),
                controls.sharpen_action,
                controls.sharpen_prob,
                buttons["sharpen"],
                note,
            ]
        ),
        "grpo-lab-controls",
    )
    body = _classed(widgets.HBox([column, view]), "grpo-lab-body")
    return _classed(widgets.VBox([header, body]), "grpo-lab")
