r"""The bandit laboratory of chapter §11 as ipywidgets: controls on the left, views on the right.

:class:`BanditLab` is a view of a :class:`grpo_core.bandit.BanditGRPO` run; it
computes no formula. Each action (*Sample group*, *GRPO step*, *Run N steps*,
*Sharpen π*, *Reset*, a moved slider) changes the engine, then :meth:`BanditLab._render`
redraws every view from that one place by assigning strings to existing
widgets: bars, curves and tables are inline SVG/HTML built here, never a
matplotlib figure, so a click is answered within one frame
(``bench/bench_lab.py``).

``import grpo_core.lab`` does not import ipywidgets: the widgets are imported
when a lab is built. The functions ``policy_svg``, ``group_html``,
``curves_svg`` and ``ledger_html`` turn numbers into markup and need no widget.
"""

from __future__ import annotations

import html
import math
import string
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from grpo_core._validate import nonnegative, positive_int
from grpo_core.bandit import BanditGRPO, GRPOConfig, StepResult
from grpo_core.kl import categorical_kl, entropy

# (min, max, step) of each knob: the widgets clamp any value to these ranges.
RANGES = {
    "group_size": (2, 64, 1),
    "eps_low": (0.0, 0.5, 0.01),
    "beta": (0.0, 1.0, 0.005),
    "lr": (0.05, 4.0, 0.05),
    "inner_epochs": (1, 16, 1),
}
ADVANTAGE_OPTIONS = (("GRPO", "grpo"), ("RLOO", "rloo"), ("Dr. GRPO", "dr_grpo"))
ADVANTAGE_LABELS = {value: label for label, value in ADVANTAGE_OPTIONS}
KNOB_NAMES = {
    "group_size": "G",
    "eps_low": "ε",
    "beta": "β",
    "lr": "learning rate",
    "inner_epochs": "inner epochs",
    "advantage": "advantage",
}
MAX_STEPS_PER_RUN = 500
MAX_SEED = 2**31 - 1
TOP_ACTION = -1  # the "Sharpen π" target meaning "whichever action π already prefers"
CURVE_POINTS = 300  # longer curves are subsampled to this many points

_BLUE, _GREY, _GREEN, _MUTED = "#2f6db5", "#9aa4af", "#1a7f37", "#656d76"


@dataclass(frozen=True)
class GroupView:
    """The group on screen: just sampled (``ratios is None``) or the one the last step used (with its ε)."""

    actions: np.ndarray
    rewards: np.ndarray
    advantages: np.ndarray
    ratios: np.ndarray | None = None
    clipped: np.ndarray | None = None
    eps: float | None = None

    @classmethod
    def of_step(cls, result: StepResult, eps: float) -> GroupView:
        return cls(result.actions, result.rewards, result.advantages, result.ratios, result.clipped, eps)

    @property
    def zero_variance(self) -> bool:
        return bool(self.rewards.max() == self.rewards.min())


# ----------------------------------------------------------------------------- markup


def _fmt(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


def policy_svg(probs, ref_probs, names, rewards, width: int = 360, height: int = 196) -> str:
    """Bars of π_θ with π_ref beside each, the action names and their rewards below."""
    left, right, top, bottom = 34, 8, 22, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    slot = plot_w / len(names)
    best = int(np.argmax(rewards))
    y = lambda p: top + plot_h * (1.0 - p)  # noqa: E731
    parts = [
        f'<svg class="grpo-svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img" aria-label="policy over actions">',
        f'<rect x="{width - 150}" y="4" width="10" height="10" fill="{_BLUE}"/>'
        f'<text x="{width - 136}" y="13" class="grpo-small">π_θ</text>'
        f'<rect x="{width - 98}" y="4" width="10" height="10" fill="#e6eaef" stroke="{_GREY}"/>'
        f'<text x="{width - 84}" y="13" class="grpo-small">π_ref (reset)</text>',
    ]
    for tick in (0.0, 0.5, 1.0):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="grpo-grid"/>'
            f'<text x="{left - 5}" y="{y(tick) + 3:.1f}" text-anchor="end" class="grpo-small">{tick:.1f}</text>'
        )
    for k, name in enumerate(names):
        cx = left + slot * (k + 0.5)
        p, q = float(probs[k]), float(ref_probs[k])
        parts.append(
            f'<rect x="{cx - 17:.1f}" y="{y(p):.1f}" width="22" height="{plot_h * p:.1f}" fill="{_BLUE}" rx="2"/>'
            f'<rect x="{cx + 7:.1f}" y="{y(q):.1f}" width="11" height="{plot_h * q:.1f}" fill="#e6eaef" '
            f'stroke="{_GREY}" rx="1"/>'
            f'<text x="{cx - 6:.1f}" y="{y(p) - 4:.1f}" text-anchor="middle" class="grpo-value">{_fmt(p, 2)}</text>'
            f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="grpo-action'
            f'{" grpo-best" if k == best else ""}">{name}</text>'
            f'<text x="{cx:.1f}" y="{top + plot_h + 31}" text-anchor="middle" class="grpo-small">'
            f"r = {rewards[k]:g}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _signed(value: float) -> str:
    return f"{value:+.2f}".replace("+0.00", "0.00").replace("-0.00", "0.00")


def group_html(group: GroupView | None, names, eps: float) -> str:
    """The group's samples o_i as chips, then per action: count, R, Â and, after a step, r and the clip.

    ``eps`` is the clip range to name for a group not yet stepped (the slider's).
    """
    if group is None:
        return (
            '<div class="grpo-group-title">Group</div>'
            '<div class="grpo-empty">No group yet: press <b>Sample group</b> or <b>GRPO step</b>.</div>'
        )
    state = "sampled, not yet used" if group.ratios is None else "used by the last GRPO step"
    shown_eps = eps if group.eps is None else group.eps  # a stepped group was clipped with the ε of its step
    chips = "".join(
        f'<span class="grpo-chip grpo-{"pos" if a > 0 else "neg" if a < 0 else "zero"}" '
        f'title="o{i + 1} = {names[o]}, R = {r:g}, Â = {_signed(a)}">{names[o]}</span>'
        for i, (o, r, a) in enumerate(zip(group.actions, group.rewards, group.advantages, strict=True))
    )
    rows = []
    for k, name in enumerate(names):
        where = np.flatnonzero(group.actions == k)
        if where.size == 0:
            rows.append(f'<tr class="grpo-absent"><td>{name}</td><td>0</td><td colspan="4">not sampled</td></tr>')
            continue
        i = where[0]
        adv = group.advantages[i]
        cls = "grpo-pos" if adv > 0 else "grpo-neg" if adv < 0 else "grpo-zero"
        if group.ratios is None:
            ratio, clip = "—", "—"
        else:
            ratio = f"{group.ratios[i]:.2f}"
            clip = ("yes: r &gt; 1+ε" if adv > 0 else "yes: r &lt; 1−ε") if group.clipped[i] else "no"
        rows.append(
            f"<tr><td>{name}</td><td>{where.size}</td><td>{group.rewards[i]:g}</td>"
            f'<td class="{cls}">{_signed(adv)}</td><td>{ratio}</td><td>{clip}</td></tr>'
        )
    return (
        f'<div class="grpo-group-title">Group of G = {group.actions.size} · {state}</div>'
        f'<div class="grpo-chips">{chips}</div>'
        '<table class="grpo-table"><thead><tr><th>o</th><th>n</th><th>R</th><th>Â</th>'
        f"<th>r = π/π<sub>old</sub></th><th>clipped (ε = {shown_eps:.2f})</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def warning_html(group: GroupView | None, beta: float) -> str:
    """A banner when the group on screen has zero reward variance (Property 4.1), else ''."""
    if group is None or not group.zero_variance:
        return ""
    consequence = (
        f"only the KL term (β = {beta:.3f}) moves π, back toward π_ref."
        if beta > 0
        else "with β = 0 a GRPO step leaves π exactly where it is."
    )
    return (
        '<div class="grpo-warning"><b>⚠ No signal from this group.</b> '
        f"All G = {group.actions.size} rewards equal {group.rewards[0]:g}, so std(R) = 0 and every Â<sub>i</sub> = 0 "
        f"(Property 4.1): the clipped surrogate has zero gradient; {consequence}</div>"
    )


def _polyline(xs, ys, x_of, y_of, color: str, width: float) -> str:
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if xs.size > CURVE_POINTS:
        keep = np.unique(np.linspace(0, xs.size - 1, CURVE_POINTS).astype(int))
        xs, ys = xs[keep], ys[keep]
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(x_of(xs), y_of(ys), strict=True))
    return f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="{width}"/>'


def _nice_ceiling(value: float) -> float:
    """The smallest of 0.1, 0.2, 0.5, 1, 2, 5, 10, … that is >= value."""
    scale = 10.0 ** math.floor(math.log10(max(value, 1e-12)))
    return max(0.1, next(m * scale for m in (1.0, 2.0, 5.0, 10.0) if m * scale >= value))


def curves_svg(curves: dict[str, tuple[np.ndarray, np.ndarray]], best_name: str, reward_range, num_actions: int):
    """Four small learning curves over steps: raw reward, P(best), KL(π‖π_ref), entropy H(π).

    ``curves`` maps "mean_reward", "value", "p_best", "kl", "entropy" to (steps, values).
    """
    panel_w, panel_h, gap = 392, 112, 14
    left, right, top, bottom = 36, 10, 20, 18
    last = max(10.0, float(curves["p_best"][0][-1]))
    kl_max = _nice_ceiling(1.1 * float(np.max(curves["kl"][1])))
    h_max = math.log(num_actions)
    r_low, r_high = float(reward_range[0]), float(reward_range[1])
    panels = [
        (
            f'reward (raw): <tspan fill="{_MUTED}">group mean R</tspan> · <tspan fill="{_BLUE}">V^π</tspan>',
            [("mean_reward", _GREY, 1.0), ("value", _BLUE, 1.8)],
            r_low,
            r_high,
        ),
        (f"P({best_name})", [("p_best", _GREEN, 1.8)], 0.0, 1.0),
        ("KL(π‖π_ref)", [("kl", "#8250df", 1.8)], 0.0, kl_max),
        ("entropy H(π) [nats]", [("entropy", "#bc4c00", 1.8)], 0.0, h_max),
    ]
    width, height = 2 * panel_w + gap, 2 * panel_h + gap
    parts = [
        f'<svg class="grpo-svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img" aria-label="learning curves">'
    ]
    for n, (title, series, y_low, y_high) in enumerate(panels):
        ox, oy = (n % 2) * (panel_w + gap), (n // 2) * (panel_h + gap)
        x0, x1, y0, y1 = ox + left, ox + panel_w - right, oy + top, oy + panel_h - bottom
        x_of = lambda x, x0=x0, x1=x1: x0 + (x1 - x0) * x / last  # noqa: E731
        y_of = lambda v, y0=y0, y1=y1, lo=y_low, hi=y_high: y1 - (y1 - y0) * (v - lo) / (hi - lo)  # noqa: E731
        current = curves[series[-1][0]][1][-1]
        parts.append(
            f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" class="grpo-panel"/>'
            f'<text x="{x0}" y="{oy + 13}" class="grpo-panel-title">{title}</text>'
            f'<text x="{x1}" y="{oy + 13}" text-anchor="end" class="grpo-value">{_fmt(current)}</text>'
            f'<text x="{x0 - 4}" y="{y0 + 8}" text-anchor="end" class="grpo-small">{y_high:.3g}</text>'
            f'<text x="{x0 - 4}" y="{y1}" text-anchor="end" class="grpo-small">{y_low:.3g}</text>'
            f'<text x="{x1}" y="{y1 + 13}" text-anchor="end" class="grpo-small">step {last:g}</text>'
            f'<text x="{x0}" y="{y1 + 13}" class="grpo-small">0</text>'
        )
        for key, color, stroke in series:
            xs, ys = curves[key]
            if xs.size:
                parts.append(_polyline(xs, ys, x_of, y_of, color, stroke))
    parts.append("</svg>")
    return "".join(parts)


def ledger_html(entries) -> str:
    """The ledger, most recent entry first; ``entries`` are (number, text) in order of occurrence."""
    items = "".join(
        f'<li><span class="grpo-ledger-n">#{number}</span> {html.escape(text)}</li>'
        for number, text in reversed(entries)
    )
    return f'<div class="grpo-group-title">Ledger (most recent first)</div><ol class="grpo-ledger">{items}</ol>'


def card_html(label: str, value: str) -> str:
    """One number card: a small label above a large value."""
    return f'<div class="grpo-card-label">{label}</div><div class="grpo-card-value">{value}</div>'


_STYLE = """<style>
.grpo-lab { --grpo-bg: var(--jp-layout-color0, #ffffff); --grpo-bg2: var(--jp-layout-color2, #f6f8fa);
  --grpo-border: var(--jp-border-color2, #d0d7de); --grpo-faint: var(--jp-border-color3, #eaeef2);
  --grpo-ink: var(--jp-ui-font-color1, #1f2328); --grpo-muted: var(--jp-ui-font-color2, #656d76);
  --grpo-dim: var(--jp-ui-font-color3, #8c959f);
  font-family: var(--jp-ui-font-family, system-ui, sans-serif); color: var(--grpo-ink); gap: 6px; max-width: 1140px; }
.grpo-lab .widget-html-content { line-height: 1.35; }
.grpo-lab .grpo-header-title { font-size: 16px; font-weight: 600; }
.grpo-lab .grpo-header-sub { font-size: 12px; color: var(--grpo-muted); }
.grpo-lab-controls { background: var(--grpo-bg2); border: 1px solid var(--grpo-border); border-radius: 8px;
  padding: 6px 8px 10px; width: 318px; min-width: 318px; }
.grpo-lab-views { flex: 1 1 auto; gap: 6px; }
.grpo-lab-row { gap: 6px; }
.grpo-lab .grpo-lab-reset { border: 1px solid var(--grpo-border); }
.grpo-lab-panel { border: 1px solid var(--grpo-border); border-radius: 8px; padding: 6px 8px;
  background: var(--grpo-bg); }
.grpo-lab .grpo-section { font-size: 11px; font-weight: 600; letter-spacing: .06em; text-transform: uppercase;
  color: var(--grpo-muted); margin: 8px 0 2px; border-bottom: 1px solid var(--grpo-border); }
.grpo-lab .grpo-note { font-size: 11px; color: var(--grpo-muted); line-height: 1.3; }
.grpo-lab-card { border: 1px solid var(--grpo-border); border-radius: 6px; padding: 3px 8px; background: var(--grpo-bg);
  min-width: 92px; flex: 1 1 0; }
.grpo-lab-progress-label .widget-html-content { align-self: center; font-size: 12px; }
.grpo-lab .grpo-card-label { font-size: 11px; color: var(--grpo-muted); white-space: nowrap; }
.grpo-lab .grpo-card-value { font-size: 17px; font-weight: 600; font-variant-numeric: tabular-nums; }
.grpo-lab .grpo-svg text { font-family: var(--jp-ui-font-family, system-ui, sans-serif); fill: var(--grpo-ink); }
.grpo-lab .grpo-small { font-size: 10px; fill: var(--grpo-muted) !important; }
.grpo-lab .grpo-value { font-size: 11px; font-weight: 600; }
.grpo-lab .grpo-action { font-size: 13px; font-weight: 700; }
.grpo-lab .grpo-best { fill: #1a7f37 !important; }
.grpo-lab .grpo-grid { stroke: var(--grpo-faint); stroke-width: 1; }
.grpo-lab .grpo-panel { fill: var(--grpo-bg); stroke: var(--grpo-border); }
.grpo-lab .grpo-panel-title { font-size: 11px; font-weight: 600; }
.grpo-lab .grpo-group-title { font-size: 12px; font-weight: 600; margin-bottom: 4px; }
.grpo-lab .grpo-empty { font-size: 12px; color: var(--grpo-muted); }
.grpo-lab .grpo-chips { display: flex; flex-wrap: wrap; gap: 3px; margin-bottom: 6px; max-width: 372px; }
.grpo-lab .grpo-chip { display: inline-block; width: 18px; text-align: center; border-radius: 4px; font-size: 11px;
  font-weight: 700; line-height: 18px; }
.grpo-lab .grpo-chip.grpo-pos { background: #dafbe1; color: #1a7f37; }
.grpo-lab .grpo-chip.grpo-neg { background: #ffebe9; color: #cf222e; }
.grpo-lab .grpo-chip.grpo-zero { background: #eaeef2; color: #57606a; }
.grpo-lab .grpo-table { border-collapse: collapse; font-size: 12px; font-variant-numeric: tabular-nums; }
.grpo-lab .grpo-table th, .grpo-lab .grpo-table td { padding: 2px 7px; text-align: right;
  border-bottom: 1px solid var(--grpo-faint); }
.grpo-lab .grpo-table th { font-weight: 600; color: var(--grpo-muted); }
.grpo-lab .grpo-table td:first-child { font-weight: 700; text-align: center; }
.grpo-lab .grpo-table td.grpo-pos { color: #1a7f37; }
.grpo-lab .grpo-table td.grpo-neg { color: #cf222e; }
.grpo-lab .grpo-absent td { color: var(--grpo-dim); }
.grpo-lab .grpo-warning { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 5px 9px;
  font-size: 12px; color: #3b2300; }
.grpo-lab .grpo-ledger { margin: 0; padding-left: 0; list-style: none; font-size: 11.5px; max-height: 132px;
  overflow-y: auto; font-family: var(--jp-code-font-family, monospace); }
.grpo-lab .grpo-ledger li { padding: 1px 0; border-bottom: 1px dotted var(--grpo-faint); }
.grpo-lab .grpo-ledger-n { color: var(--grpo-dim); }
</style>"""


# ----------------------------------------------------------------------------- the lab


class BanditLab:
    """The §11 laboratory: GRPO on the 4-armed bandit, every quantity on screen.

    Controls: G, ε, β (the chapter's), learning rate, inner epochs, seed,
    advantage variant (GRPO / RLOO / Dr. GRPO), *Sample group*, *GRPO step*,
    *Run N steps* (animated, with a progress bar), *Sharpen π* (put π on one
    action, π_ref kept) and *Reset* (π back to the start, π_ref captured again).
    Views: π beside π_ref, the group (R_i, Â_i, ratios, clip), mean(R), std(R),
    clip fraction, KL(π‖π_ref), H(π), P(best), a zero-variance warning, a
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
        ledger_length: int = 12,
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
        self._ledger: deque[tuple[int, str]] = deque(maxlen=positive_int(ledger_length, "ledger_length"))
        self._entries = 0
        self._group: GroupView | None = None
        self._build(widgets)
        self._clear_curves()
        self._log(f"start · seed {self.run.seed} · π = π_ref = {self._probs_text(self.run.probs)}")
        self._render()

    # -- construction ------------------------------------------------------

    @staticmethod
    def _check_config(config: GRPOConfig) -> None:
        for name, (low, high, _) in RANGES.items():
            value = getattr(config, name)
            if not low <= value <= high:
                raise ValueError(f"run.config.{name} must lie in [{low}, {high}] for the lab's slider, got {value}")
        if config.eps_high is not None and config.eps_high != config.eps_low:
            raise ValueError("run.config.eps_high must be None (the lab's ε slider is a symmetric clip)")

    def _build(self, widgets) -> None:
        config = self.run.config
        Layout = widgets.Layout
        wide = Layout(width="298px")
        label_style = {"description_width": "104px"}

        def slider(kind, name, description, value, fmt=None):
            low, high, step = RANGES[name]
            extra = {"readout_format": fmt} if fmt else {}
            widget = kind(
                value=value,
                min=low,
                max=high,
                step=step,
                description=description,
                continuous_update=False,
                style=label_style,
                layout=wide,
                **extra,
            )
            widget.add_class(f"grpo-lab-{name.replace('_', '-')}")
            return widget

        def button(description, css, style="", icon="", tooltip=""):
            widget = widgets.Button(
                description=description, button_style=style, icon=icon, tooltip=tooltip, layout=Layout(width="145px")
            )
            widget.add_class(css)
            return widget

        def section(title):
            return widgets.HTML(f'<div class="grpo-section">{title}</div>')

        self.group_size = slider(widgets.IntSlider, "group_size", "G (group size)", config.group_size)
        self.eps = slider(widgets.FloatSlider, "eps_low", "ε clip", config.eps_low, ".2f")
        self.eps.add_class("grpo-lab-eps")
        self.beta = slider(widgets.FloatSlider, "beta", "β KL", config.beta, ".3f")
        self.lr = slider(widgets.FloatSlider, "lr", "learning rate", config.lr, ".2f")
        self.inner_epochs = slider(widgets.IntSlider, "inner_epochs", "inner epochs", config.inner_epochs)
        self.advantage = widgets.ToggleButtons(
            options=ADVANTAGE_OPTIONS, value=config.advantage, style={"button_width": "92px"}, layout=wide
        )
        self.advantage.add_class("grpo-lab-advantage")
        self.seed = widgets.BoundedIntText(
            value=self.run.seed, min=0, max=MAX_SEED, description="seed (at Reset)", style=label_style, layout=wide
        )
        self.seed.add_class("grpo-lab-seed")
        self.sharpen_action = widgets.Dropdown(
            options=[("top (argmax π)", TOP_ACTION), *((name, k) for k, name in enumerate(self.names))],
            value=2 if len(self.names) > 2 else TOP_ACTION,
            description="onto",
            style=label_style,
            layout=wide,
        )
        self.sharpen_action.add_class("grpo-lab-sharpen-action")
        self.sharpen_prob = widgets.FloatSlider(
            value=0.94,
            min=math.ceil(100 / len(self.names)) / 100,
            max=0.99,
            step=0.01,
            description="π(onto)",
            continuous_update=False,
            readout_format=".2f",
            style=label_style,
            layout=wide,
        )
        self.sharpen_prob.add_class("grpo-lab-sharpen-prob")
        self.steps = widgets.BoundedIntText(
            value=30, min=1, max=MAX_STEPS_PER_RUN, description="N steps", style=label_style, layout=wide
        )
        self.steps.add_class("grpo-lab-steps")

        self.sample_button = button(
            "Sample group", "grpo-lab-sample", "info", "random", "draw G actions from π (eq. 1)"
        )
        self.step_button = button("GRPO step", "grpo-lab-step", "primary", "play", "one GRPO iteration (§7)")
        self.run_button = button("Run N steps", "grpo-lab-run", "success", "forward", "N steps, each on a fresh group")
        self.reset_button = button("Reset", "grpo-lab-reset", "", "refresh", "π back to the start; π_ref ← π")
        self.sharpen_button = button(
            "Sharpen π", "grpo-lab-sharpen", "warning", "bullseye", "π(onto) as set; π_ref kept"
        )
        self.progress = widgets.IntProgress(value=0, min=0, max=self.steps.value, layout=Layout(width="196px"))
        self.progress.add_class("grpo-lab-progress")
        self.progress_label = widgets.HTML("", layout=Layout(width="96px"))
        self.progress_label.add_class("grpo-lab-progress-label")

        self.sample_button.on_click(lambda _: self.sample())
        self.step_button.on_click(lambda _: self.step())
        self.run_button.on_click(lambda _: self.run_steps())
        self.reset_button.on_click(lambda _: self.reset())
        self.sharpen_button.on_click(lambda _: self.sharpen())
        for widget, name in (
            (self.group_size, "group_size"),
            (self.eps, "eps_low"),
            (self.beta, "beta"),
            (self.lr, "lr"),
            (self.inner_epochs, "inner_epochs"),
            (self.advantage, "advantage"),
        ):
            widget.observe(lambda change, name=name: self._configure(name, change["new"]), names="value")

        stat_labels = {
            "mean": "mean(R)",
            "std": "std(R)",
            "clip": "clip fraction",
            "kl": "KL(π‖π_ref)",
            "entropy": "entropy H(π)",
            "pB": f"P({self.names[self.best]})",
            "step": "steps",
        }
        self._stat_labels = stat_labels
        self.stat_views = {}
        for key in stat_labels:
            view = widgets.HTML(layout=Layout(width="auto"))
            view.add_class("grpo-lab-card")
            view.add_class(f"grpo-lab-{key}")
            self.stat_views[key] = view
        self.policy_view = widgets.HTML()
        self.policy_view.add_class("grpo-lab-policy")
        self.group_view = widgets.HTML(layout=Layout(width="392px"))
        self.group_view.add_class("grpo-lab-group")
        self.warning_view = widgets.HTML()
        self.warning_view.add_class("grpo-lab-warning")
        self.curves_view = widgets.HTML()
        self.curves_view.add_class("grpo-lab-curves")
        self.ledger_view = widgets.HTML()
        self.ledger_view.add_class("grpo-lab-ledger")

        rewards = ", ".join(f"{name} {r:g}" for name, r in zip(self.names, self.run.reward_table, strict=True))
        header = widgets.HTML(
            f'{_STYLE}<div class="grpo-header-title">GRPO bandit lab</div><div class="grpo-header-sub">'
            f"One prompt, {len(self.names)} answers with rewards {rewards} (chapter §11) · "
            "sample a group → standardise its rewards (eq. 3) → clipped, KL-penalised step (eq. 9)</div>"
        )
        header.add_class("grpo-lab-header")
        controls = widgets.VBox(
            [
                section("Group &amp; clip"),
                self.group_size,
                self.eps,
                section("KL to reference"),
                self.beta,
                section("Optimiser"),
                self.lr,
                self.inner_epochs,
                section("Advantage Â (eq. 3, §8)"),
                self.advantage,
                section("Actions"),
                widgets.HBox([self.sample_button, self.step_button]),
                widgets.HBox([self.run_button, self.reset_button]),
                self.steps,
                widgets.HBox([self.progress, self.progress_label]),
                self.seed,
                section("Push π toward greedy"),
                self.sharpen_action,
                self.sharpen_prob,
                self.sharpen_button,
                widgets.HTML(
                    '<div class="grpo-note">Small G and a sharp π reproduce the zero-variance failure (§9): '
                    "most groups then hold one answer only.</div>"
                ),
            ]
        )
        controls.add_class("grpo-lab-controls")
        policy_panel = widgets.VBox(
            [widgets.HTML('<div class="grpo-group-title">Policy π over the answers</div>'), self.policy_view]
        )
        group_panel = widgets.VBox([self.group_view], layout=Layout(flex="1 1 auto"))
        curves_panel = widgets.VBox([self.curves_view])
        ledger_panel = widgets.VBox([self.ledger_view])
        for panel in (policy_panel, group_panel, curves_panel, ledger_panel):
            panel.add_class("grpo-lab-panel")
        cards = widgets.HBox(list(self.stat_views.values()), layout=Layout(flex_flow="row wrap"))
        panels = widgets.HBox([policy_panel, group_panel])
        views = widgets.VBox([cards, self.warning_view, panels, curves_panel, ledger_panel])
        views.add_class("grpo-lab-views")
        body = widgets.HBox([controls, views])
        for row in (cards, panels, body):
            row.add_class("grpo-lab-row")
        self.widget = widgets.VBox([header, body])
        self.widget.add_class("grpo-lab")

    # -- actions -----------------------------------------------------------

    def sample(self) -> GroupView:
        """*Sample group*: draw G actions from π (eq. 1) and show R_i and Â_i (eq. 3)."""
        actions, rewards = self.run.sample()
        self._group = GroupView(actions, rewards, self.run.config.advantages(rewards))
        signal = "no signal (all rewards equal)" if self._group.zero_variance else f"std(R) {rewards.std():.3f}"
        drawn = self._actions_text(actions)
        self._log(f"sample G={actions.size} · {drawn} · mean(R) {rewards.mean():.3f} · {signal}")
        self._render()
        return self._group

    def step(self) -> StepResult:
        """*GRPO step* on the group on screen (a fresh group is sampled first if there is none)."""
        before = self.run.probs[self.best]
        result = self._step()
        self._log(
            f"step {len(self.run.history)} · mean(R) {result.reward_mean:.3f} std(R) {result.reward_std:.3f}"
            f" · clip {result.clip_fraction:.2f} · P({self.names[self.best]}) {before:.3f} → "
            f"{result.probs[self.best]:.3f} · KL {result.kl:.3f}" + (" · no signal" if result.zero_variance else "")
        )
        self._render()
        return result

    def run_steps(self, steps: int | None = None) -> list[StepResult]:
        """*Run N steps*: each on a fresh group, the views and the progress bar redrawn after every step."""
        if steps is not None:
            self.steps.value = positive_int(steps, "steps")
        total = self.steps.value
        first, before = len(self.run.history), self.run.probs[self.best]
        self.progress.max, self.progress.value = total, 0
        self.run_button.disabled = True
        results = []
        try:
            for done in range(1, total + 1):
                results.append(self._step())
                self.progress.value = done
                self.progress_label.value = f"{done} / {total} steps"
                self._render()
                if self.frame_delay and done < total:
                    time.sleep(self.frame_delay)
        finally:
            self.run_button.disabled = False
        silent = sum(result.zero_variance for result in results)
        self._log(
            f"run {total} steps ({first} → {len(self.run.history)}) · P({self.names[self.best]}) {before:.3f} → "
            f"{self.run.probs[self.best]:.3f} · KL {results[-1].kl:.3f} · no-signal groups {silent}/{total}"
        )
        self._render()
        return results

    def sharpen(self, action: str | int | None = None, prob: float | None = None) -> np.ndarray:
        """*Sharpen π*: π(onto) ← ``prob``, the rest shared equally; π_ref is kept.

        ``action`` is a name ("C"), an index, or None for the widget's choice
        ("top" = argmax π); ``prob`` defaults to the slider, and both are set
        on the widgets (so their ranges apply).
        """
        if action is not None:
            choices = dict(zip(self.names, range(len(self.names)), strict=True))
            if choices.get(action, action) not in (TOP_ACTION, *choices.values()) or isinstance(action, bool):
                raise ValueError(
                    f"action must be one of {', '.join(self.names)}, an index or {TOP_ACTION}; got {action!r}"
                )
            self.sharpen_action.value = choices.get(action, action)
        if prob is not None:
            self.sharpen_prob.value = prob
        target = self.sharpen_action.value
        target = int(np.argmax(self.run.probs)) if target == TOP_ACTION else target
        share = (1.0 - self.sharpen_prob.value) / (len(self.names) - 1)
        probs = np.full(len(self.names), share)
        probs[target] = self.sharpen_prob.value
        self.run.set_policy(probs)
        self._group = None
        self._record_policy()
        self._log(f"sharpen π onto {self.names[target]}: π = {self._probs_text(self.run.probs)} · π_ref kept")
        self._render()
        return self.run.probs

    def reset(self) -> None:
        """*Reset*: π back to the start, π_ref ← π, the RNG reseeded with the seed box, curves cleared."""
        self.run.reset(self.seed.value)
        self._group = None
        self.progress.value = 0
        self.progress_label.value = ""
        self._clear_curves()
        self._log(f"reset · seed {self.run.seed} · π = π_ref = {self._probs_text(self.run.probs)}")
        self._render()

    def _configure(self, name: str, value) -> None:
        if name == "eps_low":
            self.run.configure(eps_low=value, eps_high=None)
        else:
            self.run.configure(**{name: value})
        if name == "group_size" and self.run.pending is not None:
            self.run.pending = None  # a group of the old size would not match the slider
            self._group = None
        elif name == "advantage" and self._group is not None and self._group.ratios is None:
            self._group = GroupView(
                self._group.actions, self._group.rewards, self.run.config.advantages(self._group.rewards)
            )
        shown = ADVANTAGE_LABELS[value] if name == "advantage" else value
        self._log(f"set {KNOB_NAMES[name]} = {shown}")
        self._render()

    def _step(self) -> StepResult:
        result = self.run.step()
        self._group = GroupView.of_step(result, self.run.config.eps_low)
        step = len(self.run.history)
        self._curves["mean_reward"][0].append(step)
        self._curves["mean_reward"][1].append(result.reward_mean)
        self._record_policy()
        return result

    # -- curves and ledger ---------------------------------------------------

    def _clear_curves(self) -> None:
        self._curves: dict[str, tuple[list, list]] = {
            key: ([], []) for key in ("mean_reward", "value", "p_best", "kl", "entropy")
        }
        self._record_policy()

    def _record_policy(self) -> None:
        """Append the current policy's V^π, P(best), KL and H at the current step (a sharpen adds a jump)."""
        probs, ref = self.run.probs, self.run.ref_probs
        step = len(self.run.history)
        for key, value in (
            ("value", float(probs @ self.run.reward_table)),
            ("p_best", float(probs[self.best])),
            ("kl", float(categorical_kl(probs, ref))),
            ("entropy", float(entropy(probs))),
        ):
            self._curves[key][0].append(step)
            self._curves[key][1].append(value)

    @property
    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The learning curves, each a pair of arrays (steps, values).

        Keys ``mean_reward`` (of each group), ``value`` (V^π), ``p_best``, ``kl`` and ``entropy``.
        """
        return {key: (np.array(xs, dtype=float), np.array(ys)) for key, (xs, ys) in self._curves.items()}

    @property
    def ledger(self) -> list[str]:
        """The ledger's texts, most recent first."""
        return [text for _, text in reversed(self._ledger)]

    def _log(self, text: str) -> None:
        self._entries += 1
        self._ledger.append((self._entries, text))

    def _actions_text(self, actions) -> str:
        return "".join(self.names[a] for a in actions)

    def _probs_text(self, probs) -> str:
        return "[" + " ".join(f"{p:.3f}" for p in probs) + "]"

    # -- the one place that draws --------------------------------------------

    def _stat_texts(self) -> dict[str, str]:
        """The cards' texts; the policy numbers are the latest points of the curves (recorded after every change)."""
        group = self._group
        stepped = group is not None and group.ratios is not None
        latest = {key: values[-1] for key, (_, values) in self._curves.items() if values}
        return {
            "mean": "—" if group is None else _fmt(group.rewards.mean()),
            "std": "—" if group is None else _fmt(group.rewards.std()),
            "clip": _fmt(float(group.clipped.mean()), 2) if stepped else "—",
            "kl": _fmt(latest["kl"]),
            "entropy": _fmt(latest["entropy"]),
            "pB": _fmt(latest["p_best"]),
            "step": str(len(self.run.history)),
        }

    def _render(self) -> None:
        """Redraw every view from the engine's state; widgets are reused, only their values change."""
        run = self.run
        for key, text in self._stat_texts().items():
            self.stat_views[key].value = card_html(self._stat_labels[key], text)
        self.policy_view.value = policy_svg(run.probs, run.ref_probs, self.names, run.reward_table)
        self.group_view.value = group_html(self._group, self.names, run.config.eps_low)
        self.warning_view.value = warning_html(self._group, run.config.beta)
        self.curves_view.value = curves_svg(
            self.curves, self.names[self.best], (run.reward_table.min(), run.reward_table.max()), len(self.names)
        )
        self.ledger_view.value = ledger_html(self._ledger)

    # -- reading and showing ---------------------------------------------------

    def readout(self) -> str:
        """What the views show, as plain text (the numbers of the cards, π, π_ref, the group, the warning)."""
        config = self.run.config
        stats = self._stat_texts()
        lines = [
            f"step {stats['step']} · G={config.group_size} ε={config.eps_low:.2f} β={config.beta:.3f} "
            f"lr={config.lr:.2f} epochs={config.inner_epochs} advantage={ADVANTAGE_LABELS[config.advantage]}",
            "π      " + "  ".join(f"{n} {p:.3f}" for n, p in zip(self.names, self.run.probs, strict=True)),
            "π_ref  " + "  ".join(f"{n} {p:.3f}" for n, p in zip(self.names, self.run.ref_probs, strict=True)),
        ]
        group = self._group
        if group is not None:
            lines.append(f"group  {' '.join(self._actions_text(group.actions))}")
            lines.append("R      " + " ".join(f"{r:g}" for r in group.rewards))
            lines.append("Â      " + " ".join(_signed(a) for a in group.advantages))
            if group.ratios is not None:
                lines.append("ratio  " + " ".join(f"{r:.2f}" for r in group.ratios))
        lines.append("  ".join(f"{self._stat_labels[key]} {text}" for key, text in stats.items() if key != "step"))
        if group is not None and group.zero_variance:
            lines.append("⚠ no signal from this group: std(R) = 0, every Â = 0 (Property 4.1)")
        return "\n".join(lines)

    def plot(self):
        """A static matplotlib snapshot of the run (for a page read without a kernel): π beside π_ref,
        the raw reward, and P(best), KL, H over the steps. Returns the figure."""
        import matplotlib.pyplot as plt

        curves = self.curves
        fig, (ax_pi, ax_r, ax_p) = plt.subplots(1, 3, figsize=(11, 3.1), width_ratios=(1, 1.3, 1.3))
        x = np.arange(len(self.names))
        ax_pi.bar(x - 0.18, self.run.probs, 0.36, label=r"$\pi_\theta$", color=_BLUE)
        ax_pi.bar(x + 0.18, self.run.ref_probs, 0.36, label=r"$\pi_{\mathrm{ref}}$", color="#e6eaef", edgecolor=_GREY)
        ax_pi.set_xticks(x, [f"{n}\nr={r:g}" for n, r in zip(self.names, self.run.reward_table, strict=True)])
        ax_pi.set(ylim=(0, 1), ylabel="probability", title=f"policy after {len(self.run.history)} steps")
        ax_pi.legend(loc="upper left")
        ax_r.plot(*curves["mean_reward"], "o", ms=3, color=_GREY, label="group mean R (raw)")
        ax_r.plot(*curves["value"], color=_BLUE, label=r"$V^\pi = \sum_a \pi(a)\,r(a)$")
        ax_r.set(xlabel="GRPO step", ylabel="reward", title="reward", ylim=(0, 1))
        ax_r.legend(loc="lower right")
        ax_p.plot(*curves["p_best"], color=_GREEN, label=f"P({self.names[self.best]})")
        ax_p.plot(*curves["kl"], color="#8250df", label=r"KL($\pi\,\|\,\pi_{\mathrm{ref}}$) [nats]")
        ax_p.plot(*curves["entropy"], color="#bc4c00", label=r"$H(\pi)$ [nats]")
        ax_p.set(xlabel="GRPO step", title="policy statistics")
        ax_p.axhline(np.log(len(self.names)), color=_GREY, lw=0.8, ls="--")
        ax_p.legend(loc="center left", fontsize=8)
        fig.tight_layout()
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
