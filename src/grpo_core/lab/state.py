r"""The bandit lab's views as markup: numbers in, HTML/SVG strings out (chapter §11).

:class:`grpo_core.lab.BanditLab` assigns these strings to existing widgets
on every click, which is what keeps a click within one frame; nothing here
imports a widget or computes a formula of the chapter.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from grpo_core.bandit import StepResult

CURVE_POINTS = 300  # longer curves are subsampled to this many points

BLUE, GREY, GREEN, MUTED = "#2f6db5", "#9aa4af", "#1a7f37", "#656d76"


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


def fmt(value: float, digits: int = 3) -> str:
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
        f'<rect x="{width - 150}" y="4" width="10" height="10" fill="{BLUE}"/>'
        f'<text x="{width - 136}" y="13" class="grpo-small">π_θ</text>'
        f'<rect x="{width - 98}" y="4" width="10" height="10" fill="#e6eaef" stroke="{GREY}"/>'
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
            f'<rect x="{cx - 17:.1f}" y="{y(p):.1f}" width="22" height="{plot_h * p:.1f}" fill="{BLUE}" rx="2"/>'
            f'<rect x="{cx + 7:.1f}" y="{y(q):.1f}" width="11" height="{plot_h * q:.1f}" fill="#e6eaef" '
            f'stroke="{GREY}" rx="1"/>'
            f'<text x="{cx - 6:.1f}" y="{y(p) - 4:.1f}" text-anchor="middle" class="grpo-value">{fmt(p, 2)}</text>'
            f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="grpo-action'
            f'{" grpo-best" if k == best else ""}">{name}</text>'
            f'<text x="{cx:.1f}" y="{top + plot_h + 31}" text-anchor="middle" class="grpo-small">'
            f"r = {rewards[k]:g}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def signed(value: float) -> str:
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
        f'title="o{i + 1} = {names[o]}, R = {r:g}, Â = {signed(a)}">{names[o]}</span>'
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
            f'<td class="{cls}">{signed(adv)}</td><td>{ratio}</td><td>{clip}</td></tr>'
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
            f'reward (raw): <tspan fill="{MUTED}">group mean R</tspan> · <tspan fill="{BLUE}">V^π</tspan>',
            [("mean_reward", GREY, 1.0), ("value", BLUE, 1.8)],
            r_low,
            r_high,
        ),
        (f"P({best_name})", [("p_best", GREEN, 1.8)], 0.0, 1.0),
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
            f'<text x="{x1}" y="{oy + 13}" text-anchor="end" class="grpo-value">{fmt(current)}</text>'
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


STYLE = """<style>
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
