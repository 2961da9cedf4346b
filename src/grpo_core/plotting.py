r"""One figure style for every notebook, and the two plots they share.

Every notebook starts with ``use_style()``: it applies :data:`STYLE` (10-pt
text, so that even a mathtext sub- or superscript, at 0.7 of that, stays above
9 CSS px in a figure of at most :data:`MAX_WIDTH` inches, which the book's
text column shows at its natural size) and, inside IPython,
makes inline figures SVG with selectable text, no time stamp and fixed ids, so
that re-executing a notebook reproduces its stored outputs byte for byte.

* :func:`band` — the mean over seeds as a line and a quantile range across
  seeds as a shaded band (the learning curves of §7, §8 and §10);
* :func:`plot_runs` — one panel per quantity of :class:`grpo_core.bandit.runs.RunHistory`
  (the exact :math:`V^\pi` of eq. (4), :math:`\pi(\text{best})`, the exact
  :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` that eq. (8) estimates), one
  band per method.

Matplotlib is imported when a function here is called, never by
``import grpo_core``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from grpo_core._validate import finite_array
from grpo_core.bandit.runs import RunHistory

#: The widest figure in inches (672 CSS px), which the book's column at 1400 px shows unscaled.
MAX_WIDTH = 7.0

STYLE = {
    "figure.figsize": (6.4, 3.2),
    "figure.dpi": 100,
    "figure.constrained_layout.use": True,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial", "sans-serif"],
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "figure.titlesize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "legend.framealpha": 0.85,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "svg.fonttype": "none",
    "svg.hashsalt": "grpo-companion",
}
"""The rcParams every notebook figure uses (``plt.style.use(STYLE)`` applies it by hand).

:meta hide-value:
"""

FIELD_LABELS = {
    "expected_reward": r"$V^{\pi}$ (eq. 4)",
    "p_best": r"$\pi(\text{best answer})$",
    "kl": r"$\mathrm{KL}(\pi_\theta \| \pi_\mathrm{ref})$ [nats]",
}
"""Axis labels (matplotlib mathtext) of the :class:`~grpo_core.bandit.runs.RunHistory` curves :func:`plot_runs` draws.

:meta hide-value:
"""


def use_style() -> None:
    """Apply :data:`STYLE`; inside IPython, also draw inline figures as reproducible SVG."""
    import matplotlib.pyplot as plt

    plt.style.use(STYLE)
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is not None:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("svg", metadata={"Date": None})


def band(ax, values, *, x=None, label=None, color=None, quantiles=(0.1, 0.9), alpha=0.2):
    """Draw the mean of ``values`` over its first axis as a line, and a quantile band.

    ``values`` has shape ``(seeds, points)``: one curve per seed. The band spans
    the ``quantiles`` (default 10 % and 90 %) across seeds at every point. ``x``
    defaults to ``0, 1, …, points - 1``. Returns the line.
    """
    values = finite_array(values, "values", ndim=(2,))
    points = values.shape[1]
    x = np.arange(points) if x is None else finite_array(x, "x", ndim=(1,))
    if x.shape[0] != points:
        raise ValueError(f"x must have one entry per column of values ({points}), got {x.shape[0]}")
    low_q, high_q = _quantile_pair(quantiles)
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    (line,) = ax.plot(x, values.mean(axis=0), label=label, color=color)
    low, high = np.quantile(values, [low_q, high_q], axis=0)
    ax.fill_between(x, low, high, color=line.get_color(), alpha=alpha, linewidth=0)
    return line


def plot_runs(runs, fields=("expected_reward", "p_best", "kl"), *, axes=None, targets=None, target_label=None):
    """Compare methods: one panel per ``RunHistory`` field, one :func:`band` per run.

    ``runs`` maps a label to a :class:`~grpo_core.bandit.runs.RunHistory` of several
    seeds (from :func:`grpo_core.bandit.runs.run_seeds`); the x-axis is the update
    count. ``targets`` optionally maps a field to a value drawn as a dashed
    line (labelled ``target_label``). Creates a one-row figure unless ``axes``
    (one per field) are given. Returns the figure and the axes.
    """
    if not isinstance(runs, Mapping) or not runs:
        raise TypeError("runs must be a non-empty mapping label -> RunHistory")
    for name, run in runs.items():
        if not isinstance(run, RunHistory):
            raise TypeError(f"runs[{name!r}] must be a RunHistory, got {type(run).__name__}")
        if run.expected_reward.ndim != 2:
            raise ValueError(f"runs[{name!r}] must hold several seeds (from run_seeds), got one run")
    fields = tuple(fields)
    unknown = [field for field in fields if field not in FIELD_LABELS]
    if unknown or not fields:
        raise ValueError(f"fields must be among {sorted(FIELD_LABELS)}, got {list(fields)}")
    targets = dict(targets or {})
    if set(targets) - set(fields):
        raise ValueError(f"targets must name plotted fields, got {sorted(targets)}")
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, len(fields), figsize=(MAX_WIDTH, 2.8), sharex=True)
    axes = np.atleast_1d(axes)
    if axes.size != len(fields):
        raise ValueError(f"axes must hold one Axes per field ({len(fields)}), got {axes.size}")
    for ax, field in zip(axes.flat, fields, strict=True):
        for name, run in runs.items():
            band(ax, getattr(run, field), label=name, alpha=0.15)
        if field in targets:
            ax.axhline(targets[field], color="black", linestyle="--", linewidth=1, label=target_label)
        ax.set(xlabel="update", ylabel=FIELD_LABELS[field])
    return axes.flat[0].figure, axes


def _quantile_pair(quantiles) -> tuple[float, float]:
    try:
        low, high = (float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise TypeError(f"quantiles must be two numbers, got {quantiles!r}") from None
    if not 0 <= low < high <= 1:
        raise ValueError(f"quantiles must satisfy 0 <= low < high <= 1, got {quantiles!r}")
    return low, high
