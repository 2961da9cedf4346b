r"""One figure style for every notebook, and the two plots they share.

Every notebook starts with ``use_style()``: it applies :data:`STYLE` (10-pt
text, so that even a mathtext sub- or superscript, at 0.7 of that, stays above
9 CSS px in a figure of at most :data:`MAX_WIDTH` inches, which the book's
text column shows at its natural size) and, inside IPython,
makes inline figures SVG with selectable text, no time stamp and fixed ids, and
gives every figure a text form, :func:`figure_summary`: its alt text (:func:`describe`), what it shows (titles,
labels, limits, ticks, the data of every line, band, bar, point and image),
each number rounded to a thousandth of its axis's range or finer. nbval
compares that text, not the SVG (``tests/nbval_sanitize.cfg``): a figure's
check then means the same on every CPU, where the SVG's coordinates differ in
their last digits, and still fails when a curve moves by 1 % of its axis.

* :func:`describe` — a figure's alt text, which its cell writes from the numbers it plots (an f-string over
  the data, never prose typed beside it): the SVG's ``<title>``, which the book makes the image's ``alt``, and
  the first line of :func:`figure_summary`, which nbval compares whenever the notebook runs again;
* :func:`listing` — items as a sentence lists them ("rows 1, 2 and 5"), for alt text;
* :func:`figure_summary` — a figure's data as text, at the precision it is drawn;
* :func:`figure_table` — the numbers behind a key figure, as a table a screen reader
  can read: a collapsed "The numbers behind this figure" under the figure, in
  the notebook and on the site;
* :func:`band` — the mean over seeds as a line and a quantile range across
  seeds as a shaded band (the learning curves of §7, §8 and §10);
* :func:`plot_runs` — one panel per quantity of :class:`grpo_core.bandit.runs.RunHistory`
  (the exact :math:`V^\pi` of eq. (4), :math:`\pi(\text{best})`, the exact
  :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` that eq. (8) estimates), one
  band per method.

In a figure's math, write the expectation sign as ``\mathrm{𝔼}``, never ``\mathbb{E}``: mathtext draws
``\mathbb`` and ``\mathcal`` letters from private-use code points of its STIXNonUnicode font, which the SVG keeps as
text and no reader's font has (an empty box); DejaVu Sans has 𝔼 (U+1D53C). ``tests/unit/test_figure_alt.py`` rejects a
stored figure that uses a private-use code point.

Matplotlib is imported when a function here is called, never by
``import grpo_core``.
"""

from __future__ import annotations

import html
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

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


#: How many powers of ten below an axis's range :func:`figure_summary` rounds its numbers: to 1/1000 of the range
#: or up to ten times finer.
DIGITS = 3


#: The alt text :func:`describe` gave each figure still open (a figure that is closed and freed drops out).
_ALT_TEXT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def describe(figure, alt: str) -> None:
    """Give ``figure`` its alt text: what a reader who cannot see it must know, written by the cell from the
    numbers it plots (an f-string over the data), so that it changes when they do.

    Inline (after :func:`use_style`) the text is the SVG's ``<title>``, which the book's extension makes the
    image's ``alt`` (``book/_ext/companion_book/figure_alt.py``), and the first line of the figure's
    :func:`figure_summary`, which nbval compares. Math is written as text (π, β, 𝔼), not ``$...$``.
    """
    from matplotlib.figure import Figure

    if not isinstance(figure, Figure):
        raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}")
    if not isinstance(alt, str):
        raise TypeError(f"alt must be a str, got {type(alt).__name__}")
    alt = " ".join(alt.split())
    if not alt or "$" in alt:
        raise ValueError(f"alt must be text without $...$ math, got {alt!r}")
    _ALT_TEXT[figure] = alt


def alt_text(figure) -> str | None:
    """The alt text :func:`describe` gave ``figure``, or None."""
    return _ALT_TEXT.get(figure)


def titled_svg(svg: str, alt: str | None) -> str:
    """``svg`` (a document from matplotlib) with ``alt`` as the ``<title>`` its root element starts with."""
    if alt is None:
        return svg
    root = re.search(r"<svg\b[^>]*>", svg)
    if root is None:
        raise ValueError("svg must hold an <svg> element")
    return f"{svg[: root.end()]}\n <title>{html.escape(alt, quote=False)}</title>{svg[root.end() :]}"


def listing(items, noun: str = "") -> str:
    """Items as a sentence lists them, for alt text: ``"1"``, ``"1 and 2"``, ``"1, 2 and 5"`` (``"none"`` if there
    are none), after ``noun`` in the singular or plural (``listing([1, 5], "row")`` is ``"rows 1 and 5"``)."""
    words = [str(item) for item in items]
    if not words:
        return f"no {noun}s" if noun else "none"
    text = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
    return f"{noun}{'s' * (len(words) > 1)} {text}" if noun else text


def use_style() -> None:
    """Apply :data:`STYLE`; inside IPython, also draw inline figures as reproducible SVG titled by their alt text
    (:func:`describe`), with :func:`figure_summary` as their plain text."""
    import matplotlib.pyplot as plt

    plt.style.use(STYLE)
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        from matplotlib.figure import Figure
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("svg", metadata={"Date": None})
        formatters = shell.display_formatter.formatters
        svg = formatters["image/svg+xml"].lookup_by_type(Figure)
        formatters["image/svg+xml"].for_type(Figure, lambda figure: titled_svg(svg(figure), alt_text(figure)))
        formatters["text/plain"].for_type(Figure, lambda figure, printer, cycle: printer.text(figure_summary(figure)))


def figure_summary(figure) -> str:
    """What ``figure`` shows, as text: its alt text (:func:`describe`), its size and titles; per axes its labels,
    limits, scales and tick labels; the data of every line, band or other collection, bar or patch and image, in
    data coordinates; every text.

    A number on a linear axis is rounded to a power of ten between 1/10 000 and 1/1 000 of the axis's range
    (:data:`DIGITS`; 4 significant digits on a log axis; an image's values against its colour range): finer
    than a pixel, so that a curve that moves by 1 % of its axis changes the text, while differences in the last
    bits of a computation, as between CPUs, do not. Colours and line styles are left out.
    """
    from matplotlib.figure import Figure

    if not isinstance(figure, Figure):
        raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}")
    width, height = figure.get_size_inches()
    lines = [f"alt {alt_text(figure)!r}"] if alt_text(figure) is not None else []
    lines.append(f"Figure {width:g}x{height:g} in, {len(figure.axes)} axes")
    lines += [f"  text {text.get_text()!r}" for text in figure.texts if text.get_text()]  # suptitle included
    for number, ax in enumerate(figure.axes, 1):
        lines += _axes_summary(ax, number)
    return "\n".join(lines)


def _axes_summary(ax, number: int) -> list[str]:
    from matplotlib.collections import PathCollection, QuadMesh

    round_x, round_y = _rounder(ax.xaxis), _rounder(ax.yaxis)

    def points(artist, vertices) -> str:
        xy = (artist.get_transform() - ax.transData).transform(np.asarray(vertices, dtype=float).reshape(-1, 2))
        return f"x {round_x(xy[:, 0])} y {round_y(xy[:, 1])}"

    title = " | ".join(ax.get_title(loc) for loc in ("left", "center", "right") if ax.get_title(loc))
    lines = [f"axes {number}: {title!r}" + (" (colorbar)" if ax.get_label() == "<colorbar>" else "")]
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        low, high = sorted(axis.get_view_interval())
        shown = [tick for tick in axis.get_majorticklocs() if low <= tick <= high]
        ticks = [tick for tick in axis.get_major_formatter().format_ticks(shown) if tick]
        lines.append(
            f"  {name} {axis.get_label_text()!r} {axis.get_scale()} {_rounder(axis)(axis.get_view_interval())}"
            f" ticks {ticks}"
        )
    if ax.get_label() == "<colorbar>":  # its colour strip: the image's range, which its axis gives
        return lines
    for line in ax.lines:
        lines.append(f"  line{_label(line)}: {points(line, line.get_xydata())}")
    for collection in ax.collections:
        label = f"  {type(collection).__name__}{_label(collection)}"
        if isinstance(collection, PathCollection):  # scatter: markers at offsets
            xy = (collection.get_offset_transform() - ax.transData).transform(collection.get_offsets())
            lines.append(f"{label}: x {round_x(xy[:, 0])} y {round_y(xy[:, 1])}")
        elif isinstance(collection, QuadMesh):  # pcolormesh: its grid, not one path per cell
            lines.append(f"{label}: {points(collection, collection.get_coordinates())}")
        else:
            lines += [f"{label}: {points(collection, path.vertices)}" for path in collection.get_paths()]
        if collection.get_array() is not None:
            lines.append(f"{label} values: {_image_rounder(collection)(collection.get_array())}")
    for patch in ax.patches:
        lines.append(f"  {type(patch).__name__}{_label(patch)}: {points(patch, patch.get_path().vertices)}")
    for image in ax.images:
        lines.append(f"  image {image.get_array().shape}: {_image_rounder(image)(image.get_array())}")
    for text in ax.texts:
        x, y = (text.get_transform() - ax.transData).transform(text.get_position())
        lines.append(f"  text {text.get_text()!r} at x {round_x([x])} y {round_y([y])}")
    legend = ax.get_legend()
    if legend is not None:
        lines.append(f"  legend {[text.get_text() for text in legend.get_texts()]}")
    return lines


# matplotlib's inline math $...$, which the page typesets as \( ... \)
_MATHTEXT, _INLINE_MATH = re.compile(r"\$([^$]+)\$"), r"\\(\1\\)"
#: The most rows :func:`figure_table` writes: a table longer than this is not read, it is skipped.
MAX_ROWS = 30


@dataclass(frozen=True)
class FigureTable:
    """The numbers behind a figure, from :func:`figure_table`: a ``title``, a ``header`` and ``rows`` of text.

    A notebook shows it as a collapsed "The numbers behind this figure" holding an HTML table (a header cell per
    column, a row header per row, which a screen reader announces with each number; matplotlib's ``$...$`` math
    typeset by the page); its plain text is the same table in aligned columns.
    """

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def _repr_html_(self) -> str:
        def cell(tag: str, text: str, scope: str = "") -> str:
            scope = f' scope="{scope}"' if scope else ""
            return f"<{tag}{scope}>{_MATHTEXT.sub(_INLINE_MATH, html.escape(text))}</{tag}>"

        head = "".join(cell("th", name, "col") for name in self.header)
        body = "".join(
            f"<tr>{cell('th', row[0], 'row')}{''.join(cell('td', value) for value in row[1:])}</tr>"
            for row in self.rows
        )
        caption = cell("caption", self.title) if self.title else ""
        return (
            '<details class="grpo-figure-table mathjax_process"><summary>The numbers behind this figure</summary>'
            f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>"
        )

    def __repr__(self) -> str:
        table = [self.header, *self.rows]
        widths = [max(len(row[k]) for row in table) for k in range(len(self.header))]
        lines = ["  ".join(text.rjust(width) for text, width in zip(row, widths, strict=True)) for row in table]
        return "\n".join([f"The numbers behind this figure: {self.title}".rstrip(": "), *lines])


def figure_table(axes, at=None) -> FigureTable:
    """The numbers behind a figure, as a table a screen reader can read: one column per line of ``axes`` (one
    Axes, or several panels that share their x), one row per x value, each number rounded as
    :func:`figure_summary` rounds it (to a thousandth of its axis's range or finer).

    With ``at``, each line is read at those x values (linearly between its points: the lines' x must increase and
    cover ``at``); without, the rows are the lines' own points, which they must share. A column is named by its
    line's label, or by its panel's y label for an unlabelled line (a labelled line of several panels: the panel's
    title or y label, then its label). The table's title is the figure's titles. The last expression of the cell
    that draws the figure, the table is written once, beside that code, from what the figure draws.
    """
    from matplotlib.axes import Axes

    panels = [axes] if isinstance(axes, Axes) else list(np.ravel(np.asarray(axes, dtype=object)))
    if not panels or not all(isinstance(ax, Axes) for ax in panels):
        raise TypeError(f"axes must be a matplotlib Axes or a sequence of them, got {axes!r}")
    columns: dict[str, list[str]] = {}
    grid = None if at is None else np.sort(finite_array(at, "at", ndim=(1,)).astype(float))
    for ax in panels:
        for line in ax.lines:
            xy = (line.get_transform() - ax.transData).transform(np.asarray(line.get_xydata(), dtype=float))
            name = _column_name(line, ax, several=len(panels) > 1)
            if name in columns:
                raise ValueError(f"axes hold two lines named {name!r}: label them apart")
            if grid is None:
                grid = xy[:, 0]
            if at is None and not np.array_equal(xy[:, 0], grid):
                raise ValueError(f"line {name!r} has x values of its own: pass at, the x values to read every line at")
            if at is not None and not (np.all(np.diff(xy[:, 0]) > 0) and xy[0, 0] <= grid[0] and grid[-1] <= xy[-1, 0]):
                raise ValueError(f"line {name!r} cannot be read at {at!r}: its x must increase and cover at")
            columns[name] = _cells(_rounder(ax.yaxis), np.interp(grid, xy[:, 0], xy[:, 1]))
    if not columns:
        raise ValueError("axes hold no lines")
    if len(grid) > MAX_ROWS:
        raise ValueError(f"a table of {len(grid)} rows is not read: pass at, at most {MAX_ROWS} x values")
    first = panels[0]
    xs = [text.rstrip("0").rstrip(".") if "." in text else text for text in _cells(_rounder(first.xaxis), grid)]
    figure = first.figure
    titles = [text.get_text() for text in figure.texts if text.get_text()]
    titles += [ax.get_title(loc) for ax in panels for loc in ("left", "center", "right") if ax.get_title(loc)]
    header = (next((ax.xaxis.get_label_text() for ax in panels if ax.xaxis.get_label_text()), "x"), *columns)
    rows = tuple((x, *(values[k] for values in columns.values())) for k, x in enumerate(xs))
    return FigureTable(" | ".join(titles), header, rows)


def _cells(rounder, values) -> list[str]:
    """``values`` formatted by a :func:`_rounder`, one text each ("2", not "2.", on a log axis)."""
    return [text.removesuffix(".") for text in rounder(values)[1:-1].split()]


def _column_name(line, ax, *, several: bool) -> str:
    """A line's label; an unlabelled line's, its panel's y label; of several panels, the panel's title (or y label)
    before a line's label."""
    label, ylabel = line.get_label(), ax.yaxis.get_label_text()
    if not label or label.startswith("_"):
        return ylabel or "y"
    panel = ax.get_title() or ylabel
    return f"{panel}: {label}" if several and panel else label


def _label(artist) -> str:
    """An artist's label, unless matplotlib made it up (``_child3``, ``_nolegend_``)."""
    label = artist.get_label()
    return f" {label!r}" if label and not label.startswith("_") else ""


def _rounder(axis):
    """Formats numbers on ``axis`` at the precision of :func:`figure_summary`."""
    if axis.get_scale() == "log":
        return lambda values: _format(values, lambda v: np.format_float_positional(v, 4, fractional=False))
    low, high = axis.get_view_interval()
    return _quantized(abs(high - low))


def _image_rounder(mappable):
    """Formats the values of an image (or a coloured collection) against its colour range."""
    mappable.autoscale_None()  # the range that drawing it sets, if it is not set yet
    return _quantized(abs(mappable.norm.vmax - mappable.norm.vmin))


def _quantized(span: float):
    """Formats numbers rounded to a power of ten between 1/10 000 and 1/1 000 of ``span`` (of 1 if it is 0)."""
    span = span if np.isfinite(span) and span > 0 else 1.0
    decimals = DIGITS - int(np.floor(np.log10(span)))
    quantum = 10.0**-decimals
    return lambda values: _format(values, lambda v: f"{np.rint(v / quantum) * quantum + 0.0:.{max(decimals, 0)}f}")


def _format(values, number) -> str:
    """``[v1 v2 ...]``, each value formatted by ``number``, masked ones and NaN as ``nan``."""
    values = np.ma.filled(np.ma.asarray(values, dtype=float), np.nan).ravel()
    return "[" + " ".join("nan" if np.isnan(v) else number(v) for v in values) + "]"


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
