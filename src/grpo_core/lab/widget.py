r"""The bandit laboratory of chapter §11 in a notebook: ipywidgets controls beside one view widget.

:class:`BanditLab` drives a :class:`grpo_core.bandit.BanditGRPO` run and
computes no formula. Each action (*Sample group*, *GRPO step*, *Run N steps*,
*Sharpen π*, *Reset*, a moved slider) changes the engine, then ``BanditLab._render``
builds the one state of :func:`grpo_core.lab.state.lab_state` and assigns it to
the view (:mod:`grpo_core.lab.view`, an anywidget): one message per click, and
every view redrawn from it in the browser in the same frame
(``bench/bench_lab_jupyterlab.py``).

The controls are built from :mod:`grpo_core.lab.spec`, the definition the site's lab reads too; a knob takes the
value its slider shows (1.05, not the widget's 1.0499999999999998). A step that raises
:class:`~grpo_core.bandit.trainer.Diverged` stops a run and says why in the ledger. The views print, as Python,
the calls that replay the session since the last *Reset* (:class:`grpo_core.lab.state.Session`).

``import grpo_core.lab`` does not import ipywidgets or anywidget: they are
imported when a lab is built.
"""

from __future__ import annotations

import re
import string
import time
from collections import deque

import numpy as np

from grpo_core._validate import nonnegative, positive_int, seed_value
from grpo_core.bandit import BanditGRPO, GRPOConfig, StepResult
from grpo_core.bandit.trainer import Diverged
from grpo_core.lab.spec import (
    ACTIONS,
    CARDS,
    CURVE_KEYS,
    K3_WEIGHT_LARGE,
    KNOB,
    KNOBS,
    LIMITS,
    PALETTE,
    POLICY_CURVES,
    TITLE,
    TOP_ACTION,
    WORDS,
    fixed,
    k3_phrase,
    ledger_text,
    sharpen_minimum,
    sharpen_start,
    spec,
    subtitle,
)
from grpo_core.lab.state import GroupView, Session, lab_state, policy_point
from grpo_core.lab.view import view_class

ADVANTAGE_LABELS = {value: label for label, value in KNOB["advantage"].options}
LIGHT = {name: light for name, (light, _) in PALETTE.items()}  # the lab's colours, as the views draw them
SHARPEN = LIMITS["sharpen_prob"]


def signed(value: float) -> str:
    """An advantage as the group table shows it: a sign and two decimals, 0.00 unsigned."""
    text = fixed(abs(value), 2)
    return text if text == "0.00" else ("-" if value < 0 else "+") + text


# ----------------------------------------------------------------------------- the lab


CONTROL_WIDTH = "298px"
LABEL_STYLE = {"description_width": "104px"}


def _classed(widget, css: str):
    """``widget`` with the CSS class ``css`` (what the lab's stylesheet and the tests select on)."""
    widget.add_class(css)
    return widget


class BanditLab:
    r"""The §11 laboratory: GRPO on the 4-armed bandit, every quantity on screen.

    Controls: G, ε, β (the chapter's), learning rate, inner epochs, seed,
    advantage variant (GRPO / RLOO / Dr. GRPO), *Sample group*, *GRPO step*,
    *Run N steps* (animated, with a progress bar), *Sharpen π* (put π on one
    action, :math:`\pi_\mathrm{ref}` kept) and *Reset* (π back to the start, :math:`\pi_\mathrm{ref}` captured again).
    Views: π beside :math:`\pi_\mathrm{ref}`, the group (:math:`R_i`, :math:`\hat A_i`, ratios, clip), mean(R), std(R),
    clip fraction, :math:`\mathrm{KL}(\pi\|\pi_\mathrm{ref})`, H(π), P(best), a zero-variance warning, a
    ledger and learning curves.

    Everything a button does is also a method (:meth:`sample`, :meth:`step`,
    :meth:`run_steps`, :meth:`sharpen`, :meth:`reset`), synchronous, so a
    notebook or a test can drive the lab and read what it shows.
    ``frame_delay`` seconds are slept between the animated steps of
    *Run N steps* (0 for none).
    """

    def __init__(
        self,
        run: BanditGRPO | None = None,
        *,
        seed: int = 0,
        ledger_length: int = LIMITS["ledger_length"],
        frame_delay: float = 0.01,
    ):
        import ipywidgets as widgets

        self.run = BanditGRPO(seed=seed) if run is None else run
        if not isinstance(self.run, BanditGRPO):
            raise TypeError(f"run must be a grpo_core.bandit.BanditGRPO, got {type(self.run).__name__}")
        self._check_config(self.run.config)
        num_actions = self.run.reward_table.size
        if num_actions > len(string.ascii_uppercase):
            raise ValueError(f"run: the lab names at most 26 actions, got {num_actions}")
        self.names = tuple(string.ascii_uppercase[:num_actions])
        self.best = int(np.argmax(self.run.reward_table))
        self.frame_delay = nonnegative(frame_delay, "frame_delay")
        self._ledger: deque[tuple[int, list]] = deque(maxlen=positive_int(ledger_length, "ledger_length"))
        self._entries = 0
        self._last_knob: str | None = None
        self._group: GroupView | None = None
        self._progress = (0, 0)
        self._session = Session(self.run.seed, self.run.config)
        self._build(widgets)
        self._clear_curves()
        self._log(["start", {"seed": str(self.run.seed), "probs": self.run.probs.tolist()}])
        self._render()

    # -- construction ------------------------------------------------------

    @staticmethod
    def _check_config(config: GRPOConfig) -> None:
        for knob in KNOBS:
            value = getattr(config, knob.name)
            if knob.options is not None:
                continue  # GRPOConfig accepts only the toggle's values
            if not knob.minimum <= value <= knob.maximum:
                raise ValueError(
                    f"run.config.{knob.name} must lie in [{knob.minimum}, {knob.maximum}] for the lab's slider, "
                    f"got {value}"
                )
        if config.eps_high is not None and config.eps_high != config.eps_low:
            raise ValueError("run.config.eps_high must be None (the lab's ε slider is a symmetric clip)")

    def _build(self, widgets) -> None:
        """The controls (ipywidgets), the one widget that draws every view, and their layout."""
        self._build_knobs(widgets)
        self._build_buttons(widgets)
        self.view = view_class()(spec=spec())
        self.view.add_class("grpo-lab-views")
        self.widget = self._layout(widgets)

    def _build_knobs(self, widgets) -> None:
        """A slider or toggle per knob of :data:`grpo_core.lab.spec.KNOBS` (``self.group_size``, ``self.eps``, ...),
        each change going through :meth:`_configure`; the seed, N steps and *Sharpen π*'s fields."""
        config, wide = self.run.config, widgets.Layout(width=CONTROL_WIDTH)
        self.knobs = {}
        for knob in KNOBS:
            if knob.options is not None:
                widget = widgets.ToggleButtons(
                    options=knob.options,
                    value=getattr(config, knob.name),
                    style={"button_width": "92px"},
                    layout=wide,
                )
            else:
                widget = (widgets.IntSlider if knob.integer else widgets.FloatSlider)(
                    value=getattr(config, knob.name),
                    min=knob.minimum,
                    max=knob.maximum,
                    step=knob.step,
                    description=knob.label,
                    continuous_update=False,
                    style=LABEL_STYLE,
                    layout=wide,
                    **({} if knob.integer else {"readout_format": f".{knob.digits}f"}),
                )
            widget.observe(lambda change, name=knob.name: self._configure(name, change["new"]), names="value")
            self.knobs[knob.name] = _classed(widget, f"grpo-lab-{knob.name.replace('_', '-')}")
        self.group_size, self.eps, self.beta = self.knobs["group_size"], self.knobs["eps_low"], self.knobs["beta"]
        self.lr, self.inner_epochs, self.advantage = (
            self.knobs["lr"],
            self.knobs["inner_epochs"],
            self.knobs["advantage"],
        )
        self.seed = _classed(
            widgets.Text(value=str(self.run.seed), description=WORDS["seed"], style=LABEL_STYLE, layout=wide),
            "grpo-lab-seed",
        )
        self.sharpen_action = _classed(
            widgets.Dropdown(
                options=[(WORDS["top_action"], TOP_ACTION), *((name, k) for k, name in enumerate(self.names))],
                value=sharpen_start(len(self.names)),
                description=WORDS["sharpen_action"],
                style=LABEL_STYLE,
                layout=wide,
            ),
            "grpo-lab-sharpen-action",
        )
        self.sharpen_prob = _classed(
            widgets.FloatSlider(
                value=SHARPEN["default"],
                min=sharpen_minimum(len(self.names)),
                max=SHARPEN["maximum"],
                step=SHARPEN["step"],
                description=WORDS["sharpen_prob"],
                continuous_update=False,
                readout_format=".2f",
                style=LABEL_STYLE,
                layout=wide,
            ),
            "grpo-lab-sharpen-prob",
        )
        self.steps = _classed(
            widgets.BoundedIntText(
                value=LIMITS["steps"],
                min=1,
                max=LIMITS["max_steps_per_run"],
                description=WORDS["steps"],
                style=LABEL_STYLE,
                layout=wide,
            ),
            "grpo-lab-steps",
        )

    def _build_buttons(self, widgets) -> None:
        """The buttons of :data:`~grpo_core.lab.spec.ACTIONS`, by name (``buttons``), each calling the lab's method
        of that name (*Run N steps*: :meth:`run_steps`)."""
        self.buttons = {}
        for action in ACTIONS:
            method = self.run_steps if action.name == "run" else getattr(self, action.name)
            widget = widgets.Button(
                description=action.label,
                button_style=action.style,
                icon=action.icon,
                tooltip=action.tooltip,
                layout=widgets.Layout(width="145px"),
            )
            widget.on_click(lambda _, method=method: method())
            self.buttons[action.name] = _classed(widget, f"grpo-lab-{action.name}")

    def _layout(self, widgets):
        """Header above; controls in sections beside (or, on a narrow lab, above) the views."""
        # the lab's title and its parts' titles are headings (WCAG 1.3.1), below a notebook's or a page's h2
        titled = '<div class="grpo-section" role="heading" aria-level="4">{}</div>'
        section = lambda title: widgets.HTML(titled.format(title))  # noqa: E731
        header = _classed(
            widgets.HTML(
                f'<div class="grpo-header-title" role="heading" aria-level="3">{TITLE}</div>'
                f'<div class="grpo-header-sub">{subtitle(self.names, self.run.reward_table)}</div>'
            ),
            "grpo-lab-header",
        )
        note = widgets.HTML(f'<div class="grpo-note">{WORDS["note"]}</div>')
        actions, sharpen = WORDS["sections"]
        buttons = self.buttons
        knobs, heading = [], None
        for knob in KNOBS:
            if knob.section != heading:
                heading = knob.section
                knobs.append(section(heading))
            knobs.append(self.knobs[knob.name])
        controls = _classed(
            widgets.VBox(
                [
                    *knobs,
                    section(actions),
                    widgets.HBox([buttons["sample"], buttons["step"]]),
                    widgets.HBox([buttons["run"], buttons["reset"]]),
                    self.steps,
                    self.seed,
                    section(sharpen),
                    self.sharpen_action,
                    self.sharpen_prob,
                    buttons["sharpen"],
                    note,
                ]
            ),
            "grpo-lab-controls",
        )
        body = _classed(widgets.HBox([controls, self.view]), "grpo-lab-body")
        return _classed(widgets.VBox([header, body]), "grpo-lab")

    # -- actions -----------------------------------------------------------

    def sample(self) -> GroupView:
        r"""*Sample group*: draw G actions from π (eq. 1) and show :math:`R_i` and :math:`\hat A_i` (eq. 3)."""
        actions, rewards = self.run.sample()
        self._session.add("sample")
        self._group = GroupView.sampled(self.run, actions, rewards)
        values = {"G": actions.size, "drawn": self._actions_text(actions), "mean": float(rewards.mean())}
        if self._group.zero_variance:
            self._log(["sample_silent", values])
        else:
            self._log(["sample", {**values, "std": float(rewards.std())}])
        self._render()
        return self._group

    def step(self) -> StepResult | None:
        """*GRPO step* on the group on screen (a fresh group is sampled first if there is none).

        A step that raises :class:`~grpo_core.bandit.trainer.Diverged` leaves π as it was, puts the error's message
        in the ledger and returns None.
        """
        before = float(self.run.probs[self.best])
        result = self._step()
        if result is not None:
            self._log(*self._step_entry(result, before))
        self._render()
        return result

    def _step_entry(self, result: StepResult, before: float) -> list:
        """The ledger's parts for a step: its numbers; for a group with no signal, what the step did to π
        (measured: :func:`grpo_core.lab.spec.kl_outcome`); a large k3 weight when β > 0."""
        group = self._group
        parts = [
            [
                "step",
                {
                    "step": len(self.run.history),
                    "mean": result.reward_mean,
                    "std": result.reward_std,
                    "clip": result.clip_fraction,
                    "best": self.names[self.best],
                    "before": before,
                    "after": float(result.probs[self.best]),
                    "kl": result.kl,
                },
            ]
        ]
        if group.outcome is not None:
            parts.append([group.outcome, {"before": group.kl_before, "after": result.kl}])
        if group.beta > 0 and group.k3[0] >= K3_WEIGHT_LARGE:
            parts.append([k3_phrase(group.k3[0]), {"weight": group.k3[0], "answer": self.names[group.k3[1]]}])
        return parts

    def run_steps(self, steps: int | None = None) -> list[StepResult]:
        """*Run N steps*: each on a fresh group, the views and the progress bar redrawn after every step; a step
        that diverges ends the run."""
        if steps is not None:
            self.steps.value = positive_int(steps, "steps")
        total = self.steps.value
        first, before = len(self.run.history), float(self.run.probs[self.best])
        self._progress = (0, total)
        self.buttons["run"].disabled = True
        results = []
        try:
            for done in range(1, total + 1):
                result = self._step()
                if result is None:
                    break
                results.append(result)
                self._progress = (done, total)
                self._render()
                if self.frame_delay and done < total:
                    time.sleep(self.frame_delay)
        finally:
            self.buttons["run"].disabled = False
        done, silent = len(results), sum(result.zero_variance for result in results)
        values = {
            "total": total,
            "done": done,
            "first": first,
            "last": len(self.run.history),
            "best": self.names[self.best],
            "before": before,
            "after": float(self.run.probs[self.best]),
            "kl": self._curves["kl"][1][-1],
            "silent": silent,
        }
        self._log(["run" if done == total else "run_stopped", values])
        self._render()
        return results

    def sharpen(self, action: str | int | None = None, prob: float | None = None) -> np.ndarray:
        r"""*Sharpen π*: π(onto) ← ``prob``, the rest shared equally; :math:`\pi_\mathrm{ref}` is kept.

        ``action`` is a name ("C"), an index, or None for the widget's choice
        ("top" = argmax π); ``prob`` defaults to the slider, and both are set
        on the widgets (so their ranges apply).
        """
        if action is not None:
            self.sharpen_action.value = self._sharpen_target(action)
        if prob is not None:
            self.sharpen_prob.value = self._sharpen_prob(prob)
        prob = round(self.sharpen_prob.value, 2)  # what the slider shows
        target = self.sharpen_action.value
        target = int(np.argmax(self.run.probs)) if target == TOP_ACTION else target
        probs = np.full(len(self.names), (1.0 - prob) / (len(self.names) - 1))
        probs[target] = prob
        self.run.set_policy(probs)
        self._session.add("set_policy", probs.tolist())
        self._group = None
        self._record_policy()
        self._log(["sharpen", {"answer": self.names[target], "probs": self.run.probs.tolist()}])
        self._render()
        return self.run.probs

    def _sharpen_target(self, action) -> int:
        """*Sharpen π*'s ``action`` as the dropdown's value: a name, an index or :data:`TOP_ACTION`."""
        if isinstance(action, str):
            if action not in self.names:
                raise ValueError(f"action must be one of {', '.join(self.names)}, got {action!r}")
            return self.names.index(action)
        if isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer):
            raise TypeError(f"action must be a name, an index or {TOP_ACTION}, got {type(action).__name__}")
        if int(action) not in (TOP_ACTION, *range(len(self.names))):
            raise ValueError(f"action must be an index from 0 to {len(self.names) - 1} or {TOP_ACTION}, got {action}")
        return int(action)

    def _sharpen_prob(self, prob) -> float:
        """*Sharpen π*'s ``prob``: a number within the π(onto) slider's range (a NaN, a bool or a string refused)."""
        if isinstance(prob, bool | np.bool_) or not isinstance(prob, int | float | np.integer | np.floating):
            raise TypeError(f"prob must be a number, got {type(prob).__name__}")
        low, high = self.sharpen_prob.min, self.sharpen_prob.max
        if not low <= prob <= high:
            raise ValueError(f"prob must lie in [{low}, {high}] (the π(onto) slider), got {prob}")
        return float(prob)

    def reset(self, seed: int | None = None) -> None:
        r"""*Reset*: π back to the start, :math:`\pi_\mathrm{ref} \leftarrow \pi`, the RNG reseeded with the seed box
        (set to ``seed`` first, if given), curves cleared, a new session.

        The box takes any integer from 0 to 2**64 - 1, in full; any other text is refused in the ledger and
        nothing is reset.
        """
        if seed is not None:
            self.seed.value = str(seed_value(seed))
        text = self.seed.value.strip()
        if not re.fullmatch("[0-9]+", text) or int(text) > int(LIMITS["max_seed"]):
            self._log(["refused", {"maximum": LIMITS["max_seed"], "text": text}])
            self._render()
            return
        self.run.reset(int(text))
        self._session = Session(self.run.seed, self.run.config)
        self._group = None
        self._progress = (0, 0)
        self._clear_curves()
        self._log(["reset", {"seed": str(self.run.seed), "probs": self.run.probs.tolist()}])
        self._render()

    def _configure(self, name: str, value) -> None:
        value = KNOB[name].value(value)
        changes = {"eps_low": value, "eps_high": None} if name == "eps_low" else {name: value}
        self.run.configure(**changes)
        self._session.add("configure", changes)
        if name == "group_size" and self.run.pending is not None:
            self.run.pending = None  # a group of the old size would not match the slider
            self._session.add("drop")
            self._group = None
        elif name == "advantage" and self._group is not None and self._group.ratios is None:
            self._group = GroupView.sampled(self.run, self._group.actions, self._group.rewards)
        knob = KNOB[name]
        if knob.options is not None:
            self._log(["set_option", {"knob": knob.short, "label": ADVANTAGE_LABELS[value]}], knob=name)
        else:
            self._log(["set", {"knob": knob.short, "value": value, "digits": knob.digits}], knob=name)
        self._render()

    def _step(self) -> StepResult | None:
        kl_before = self._curves["kl"][1][-1]
        try:
            result = self.run.step()
        except Diverged as error:
            self._session.add("diverged", str(error))
            self._group = None
            self._log(["diverged", {"message": str(error)}])
            return None
        self._session.add("step", 1)
        self._group = GroupView.of_step(result, self.run.config, kl_before)
        step = len(self.run.history)
        for key, value in (("mean_reward", result.reward_mean), ("clip_fraction", result.clip_fraction)):
            self._curves[key][0].append(step)
            self._curves[key][1].append(value)
        self._record_policy()
        return result

    # -- curves and ledger ---------------------------------------------------

    def _clear_curves(self) -> None:
        self._curves: dict[str, tuple[list, list]] = {key: ([], []) for key in CURVE_KEYS}
        self._record_policy()

    def _record_policy(self) -> None:
        r"""Append the current policy's :math:`V^\pi`, P(best), KL and H at the current step (a sharpen adds a jump)."""
        step = len(self.run.history)
        point = policy_point(self.run, self.best)
        for key in POLICY_CURVES:
            self._curves[key][0].append(step)
            self._curves[key][1].append(point[key])

    @property
    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        r"""The learning curves, each a pair of arrays (steps, values).

        Keys ``mean_reward`` and ``clip_fraction`` (of each step's group), ``value`` (:math:`V^\pi`),
        ``p_best``, ``kl`` and ``entropy``.
        """
        return {key: (np.array(xs, dtype=float), np.array(ys)) for key, (xs, ys) in self._curves.items()}

    @property
    def ledger(self) -> list[str]:
        """The ledger's texts, most recent first."""
        return [ledger_text(parts) for _, parts in reversed(self._ledger)]

    def _log(self, *parts: list, knob: str | None = None) -> None:
        """Add a ledger entry, its parts ``[key, values]`` (:data:`grpo_core.lab.spec.LEDGER`); a change of the
        ``knob`` changed just before replaces that entry (one per gesture)."""
        if knob is not None and knob == self._last_knob and self._ledger:
            self._ledger[-1] = (self._ledger[-1][0], list(parts))
        else:
            self._entries += 1
            self._ledger.append((self._entries, list(parts)))
        self._last_knob = knob

    def _actions_text(self, actions) -> str:
        return "".join(self.names[a] for a in actions)

    # -- the one place that draws --------------------------------------------

    def state(self) -> dict:
        """The one state every view is drawn from (:func:`grpo_core.lab.state.lab_state`)."""
        return lab_state(
            self.run,
            names=self.names,
            best=self.best,
            group=self._group,
            curves=self._curves,
            ledger=self._ledger,
            session=self._session,
            progress=self._progress,
        )

    def _render(self) -> None:
        """Send the state to the view: one message, every view redrawn from it in the browser."""
        self.view.state = self.state()

    def _stat_texts(self) -> dict[str, str]:
        """The cards' labels and texts, formatted as ``static/lab-view.js`` formats them (the steps card left out)."""
        stats = self.state()["stats"]
        return {
            label.replace("best", self.names[self.best]): "—" if stats[key] is None else fixed(stats[key], digits)
            for _, key, label, digits in CARDS
            if key != "steps"
        }

    # -- reading and showing ---------------------------------------------------

    def readout(self) -> str:
        r"""What the views show, as plain text (the numbers of the cards, π, :math:`\pi_\mathrm{ref}`, the group, the
        warning)."""
        config = self.run.config
        stats = self._stat_texts()
        lines = [
            f"step {len(self.run.history)} · G={config.group_size} ε={fixed(config.eps_low, 2)} "
            f"β={fixed(config.beta, 3)} lr={fixed(config.lr, 2)} epochs={config.inner_epochs} "
            f"advantage={ADVANTAGE_LABELS[config.advantage]}",
            "π      " + "  ".join(f"{n} {fixed(p, 3)}" for n, p in zip(self.names, self.run.probs, strict=True)),
            "π_ref  " + "  ".join(f"{n} {fixed(p, 3)}" for n, p in zip(self.names, self.run.ref_probs, strict=True)),
        ]
        group = self._group
        if group is not None:
            lines.append(f"group  {' '.join(self._actions_text(group.actions))}")
            lines.append("R      " + " ".join(f"{r:g}" for r in group.rewards))
            lines.append("Â      " + " ".join(signed(a) for a in group.advantages))
            if group.ratios is not None:
                lines.append("ratio  " + " ".join(fixed(r, 2) for r in group.ratios))
        lines.append("  ".join(f"{label} {text}" for label, text in stats.items()))
        if group is not None and group.zero_variance:
            lines.append("⚠ no signal from this group: std(R) = 0, every Â = 0 (Property 4.1)")
        return "\n".join(lines)

    def plot(self):
        r"""A static matplotlib snapshot of the run (for a page read without a kernel): π beside
        :math:`\pi_\mathrm{ref}`,
        the raw reward, and P(best), KL, H over the steps. Returns the figure."""
        import matplotlib.pyplot as plt

        curves = self.curves
        fig, (ax_pi, ax_r, ax_p) = plt.subplots(
            1, 3, figsize=(7.0, 3.0), width_ratios=(1, 1.3, 1.3), layout="constrained"
        )
        x = np.arange(len(self.names))
        ax_pi.bar(x - 0.18, self.run.probs, 0.36, label=r"$\pi_\theta$", color=LIGHT["blue"])
        ax_pi.bar(
            x + 0.18,
            self.run.ref_probs,
            0.36,
            label=r"$\pi_{\mathrm{ref}}$",
            color=LIGHT["ref"],
            edgecolor=LIGHT["grey"],
        )
        ax_pi.set_xticks(x, [f"{n}\n{r:g}" for n, r in zip(self.names, self.run.reward_table, strict=True)])
        ax_pi.set(ylim=(0, 1), ylabel="probability", title=f"policy after {len(self.run.history)} steps")
        ax_pi.legend(loc="upper right", fontsize=8)
        ax_r.plot(*curves["mean_reward"], "o", ms=3, color=LIGHT["grey"], label="group mean R (raw)")
        ax_r.plot(*curves["value"], color=LIGHT["blue"], label=r"$V^\pi = \sum_a \pi(a)\,r(a)$")
        ax_r.set(xlabel="GRPO step", ylabel="reward", title="reward", ylim=(0, 1))
        ax_r.legend(loc="lower right")
        ax_p.plot(*curves["p_best"], color=LIGHT["green"], label=f"P({self.names[self.best]})")
        ax_p.plot(*curves["kl"], color=LIGHT["purple"], label=r"KL($\pi\,\|\,\pi_{\mathrm{ref}}$) [nats]")
        ax_p.plot(*curves["entropy"], color=LIGHT["orange"], label=r"$H(\pi)$ [nats]")
        ax_p.set(xlabel="GRPO step", title="policy statistics")
        ax_p.axhline(np.log(len(self.names)), color=LIGHT["grey"], lw=0.8, ls="--")
        ax_p.legend(loc="center left", fontsize=8)
        return fig

    def show(self) -> None:
        """Display the lab in the notebook."""
        from IPython.display import display

        display(self)

    def close(self) -> None:
        """Close every widget of the lab (their models leave the kernel and the saved widget state)."""
        stack = [self.widget]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            widget.close()

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        config = self.run.config
        return (
            f"BanditLab(steps={len(self.run.history)}, G={config.group_size}, eps={config.eps_low:.2f}, "
            f"beta={config.beta:.3f}, P({self.names[self.best]})={self.run.probs[self.best]:.3f})"
        )
