"""The shared figure style and plots of the notebooks (grpo_core.plotting)."""

import html
import re
import subprocess
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from grpo_core import BanditGRPO, GRPOConfig
from grpo_core.bandit.runs import run_seeds, track
from grpo_core.plotting import (
    FIELD_LABELS,
    MAX_ROWS,
    MAX_WIDTH,
    STYLE,
    alt_text,
    band,
    describe,
    figure_summary,
    figure_table,
    listing,
    plot_runs,
    titled_svg,
    use_style,
)


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_import_grpo_core_does_not_import_matplotlib():
    code = "import sys, grpo_core, grpo_core.plotting; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_use_style_applies_the_shared_style():
    with plt.rc_context():
        use_style()
        assert plt.rcParams["font.size"] == STYLE["font.size"]
        assert plt.rcParams["svg.fonttype"] == "none"
        assert plt.rcParams["svg.hashsalt"] == "grpo-companion"


def test_smallest_font_stays_legible_at_the_widest_figure():
    # a MAX_WIDTH-inch figure fits a 700-px column unscaled; a mathtext script (0.7 of
    # the smallest text) must stay >= 9 CSS px (1 pt = 96/72 px)
    assert MAX_WIDTH * 96 <= 700
    smallest = min(STYLE[key] for key in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize", "font.size"))
    assert 0.7 * smallest * 96 / 72 >= 9


def test_band_draws_the_mean_and_the_quantile_range(ax):
    values = np.array([[0.0, 1.0, 2.0], [1.0, 3.0, 2.0], [2.0, 5.0, 2.0]])
    line = band(ax, values, x=[10, 20, 30], quantiles=(0.0, 1.0), label="runs")
    np.testing.assert_array_equal(line.get_xdata(), [10, 20, 30])
    np.testing.assert_allclose(line.get_ydata(), [1.0, 3.0, 2.0])
    (patch,) = ax.collections
    ys = patch.get_paths()[0].vertices[:, 1]
    assert ys.min() == 0.0 and ys.max() == 5.0
    assert line.get_label() == "runs"


def test_band_default_x_counts_from_zero(ax):
    line = band(ax, np.ones((4, 5)))
    np.testing.assert_array_equal(line.get_xdata(), np.arange(5))


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"values": np.ones(5)}, ValueError, "values"),
        ({"values": np.full((2, 3), np.nan)}, ValueError, "values"),
        ({"values": np.ones((2, 3)), "x": [1, 2]}, ValueError, "x"),
        ({"values": np.ones((2, 3)), "quantiles": (0.9, 0.1)}, ValueError, "quantiles"),
        ({"values": np.ones((2, 3)), "quantiles": 0.5}, TypeError, "quantiles"),
        ({"values": np.ones((2, 3)), "alpha": 2.0}, ValueError, "alpha"),
    ],
)
def test_band_rejects_bad_input(ax, kwargs, error, name):
    with pytest.raises(error, match=name):
        band(ax, **kwargs)


@pytest.fixture(scope="module")
def runs():
    config = GRPOConfig(group_size=4)
    return {
        "GRPO": run_seeds(lambda seed: BanditGRPO(config=config, seed=seed), 5, range(3)),
        "GRPO lr 0.1": run_seeds(lambda seed: BanditGRPO(config=GRPOConfig(lr=0.1), seed=seed), 5, range(3)),
    }


def test_plot_runs_draws_one_band_per_run_and_field(runs):
    fig, axes = plot_runs(runs, targets={"p_best": 0.9}, target_label="goal")
    assert len(axes) == 3
    for ax, field in zip(axes, ("expected_reward", "p_best", "kl"), strict=True):
        assert ax.get_ylabel() == FIELD_LABELS[field]
        assert len(ax.collections) == 2
        np.testing.assert_allclose(ax.lines[0].get_ydata(), getattr(runs["GRPO"], field).mean(axis=0))
    assert axes[1].lines[-1].get_ydata()[0] == 0.9
    assert fig.get_size_inches()[0] <= MAX_WIDTH
    plt.close(fig)


def test_plot_runs_uses_given_axes(runs):
    fig, axes = plt.subplots(1, 1)
    returned, used = plot_runs(runs, fields=["kl"], axes=axes)
    assert returned is fig and used[0] is axes
    plt.close(fig)


def test_plot_runs_rejects_bad_input(runs):
    one_seed = track(BanditGRPO(seed=0), 3)
    with pytest.raises(TypeError, match="runs"):
        plot_runs({})
    with pytest.raises(TypeError, match="runs"):
        plot_runs({"x": np.ones((2, 3))})
    with pytest.raises(ValueError, match="several seeds"):
        plot_runs({"one": one_seed})
    with pytest.raises(ValueError, match="fields"):
        plot_runs(runs, fields=["entropy"])
    with pytest.raises(ValueError, match="targets"):
        plot_runs(runs, fields=["kl"], targets={"p_best": 1.0})
    fig, axes = plt.subplots(1, 2)
    with pytest.raises(ValueError, match="axes"):
        plot_runs(runs, axes=axes)
    plt.close(fig)


def figure_with_everything(y):
    """One of each artist the notebooks draw, ``y`` the data of its curve, band and bars."""
    fig, (ax, right) = plt.subplots(1, 2, figsize=(6.4, 3.2))
    x = np.arange(y.size)
    ax.plot(x, y, label="curve")
    ax.fill_between(x, y - 1, y + 1, alpha=0.2)
    ax.bar(x, y, label="bars")
    ax.scatter(x, y)
    ax.axvspan(1, 2)
    ax.text(1, 2, "note")
    ax.set(title="panel", xlabel="step", ylabel="value")
    ax.set_xticks(x, [f"s{i}" for i in x])
    ax.legend()
    fig.colorbar(right.imshow(y.reshape(1, -1), vmin=-5, vmax=5), ax=right)
    right.loglog([1, 10, 100], [1e-3, 1e-2, 0.123456])
    fig.suptitle("the figure")
    return fig


def test_figure_summary_lists_what_the_figure_shows():
    fig = figure_with_everything(np.array([0.5, 1.25, 2.0]))
    summary = figure_summary(fig).splitlines()
    plt.close(fig)
    assert summary[:3] == ["Figure 6.4x3.2 in, 3 axes", "  text 'the figure'", "axes 1: 'panel'"]
    assert "  x 'step' linear [-0.540 2.540] ticks ['s0', 's1', 's2']" in summary
    assert "  line 'curve': x [0.000 1.000 2.000] y [0.500 1.250 2.000]" in summary
    band = "x [0.000 0.000 1.000 2.000 2.000 2.000 1.000 0.000 0.000] y [1.500 -0.500 0.250 1.000 3.000 3.000"
    assert f"  FillBetweenPolyCollection: {band} 2.250 1.500 1.500]" in summary
    assert "  PathCollection: x [0.000 1.000 2.000] y [0.500 1.250 2.000]" in summary
    assert "  Rectangle: x [0.600 1.400 1.400 0.600 0.600] y [0.000 0.000 1.250 1.250 0.000]" in summary
    assert "  text 'note' at x [1.000] y [2.000]" in summary
    assert "  legend ['curve', 'bars']" in summary
    assert "  image (1, 3): [0.50 1.25 2.00]" in summary  # its colour range is -5 .. 5
    assert summary[-3:] == [
        "axes 3: '' (colorbar)",
        "  x '' linear [0.000 1.000] ticks []",
        "  y '' linear [-5.00 5.00] ticks ['−4', '−2', '0', '2', '4']",
    ]
    assert "  line: x [1. 10. 100.] y [0.001 0.01 0.1235]" in summary  # 4 significant digits on a log axis


def summaries(y, *, fixed_limits=False):
    fig = figure_with_everything(y)
    if fixed_limits:
        fig.axes[0].set_ylim(-10, 10)
    text = figure_summary(fig)
    plt.close(fig)
    return text


@pytest.mark.parametrize("fixed_limits", [False, True])
def test_figure_summary_holds_across_last_bit_noise_and_sees_a_one_percent_move(fixed_limits):
    """The data of 5 seeded figures: a change in the last bits (as between CPUs) leaves the summary as it is; a
    move of 1 % of the axis's range changes it, whether the axis follows the data or holds fixed limits."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        y = rng.uniform(-4, 4, size=8)
        summary = summaries(y, fixed_limits=fixed_limits)
        assert summaries(y * (1 + 1e-12), fixed_limits=fixed_limits) == summary
        span = np.ptp(y) + 2 if not fixed_limits else 20.0  # the band spans y - 1 .. y + 1
        assert summaries(y + 0.01 * span, fixed_limits=fixed_limits) != summary
        one_point = y.copy()
        one_point[rng.integers(y.size)] += 0.01 * span
        assert summaries(one_point, fixed_limits=fixed_limits) != summary


def test_figure_summary_rejects_what_is_not_a_figure(ax):
    with pytest.raises(TypeError, match="figure"):
        figure_summary(ax)


def test_use_style_gives_inline_figures_their_summary_as_plain_text():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        with plt.rc_context():
            use_style()
            fig = figure_with_everything(np.array([0.5, 1.25, 2.0]))
            data, _ = shell.display_formatter.format(fig)
            plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
    assert data["text/plain"] == figure_summary(fig)
    assert data["image/svg+xml"].startswith("<?xml")


def test_use_style_titles_an_inline_figure_with_its_alt_text_and_puts_it_first_in_its_plain_text():
    from IPython.core.interactiveshell import InteractiveShell

    def svg_title(svg):
        found = re.search(r"<svg\b[^>]*>\s*<title>([^<]*)</title>", svg)
        return html.unescape(found.group(1)) if found else None

    shell = InteractiveShell.instance()
    alt = "Bar chart of 3 bars: <A> & 'B', 0.25 to 0.91"
    try:
        with plt.rc_context():
            use_style()
            fig = figure_with_everything(np.array([0.5, 1.25, 2.0]))
            plain = shell.display_formatter.format(fig)[0]
            describe(fig, alt)
            data, _ = shell.display_formatter.format(fig)
            plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
    assert svg_title(data["image/svg+xml"]) == alt  # what the book makes the image's alt
    assert svg_title(plain["image/svg+xml"]) is None
    assert data["text/plain"] == f"alt {alt!r}\n{plain['text/plain']}"
    assert data["image/svg+xml"].count("<title>") == 1


def test_describe_keeps_one_alt_text_per_figure_in_one_line(ax):
    describe(ax.figure, "first")
    describe(ax.figure, "  Line chart:\n  π(B) rises  from 0.25 ")
    assert alt_text(ax.figure) == "Line chart: π(B) rises from 0.25"
    other = plt.figure()
    assert alt_text(other) is None
    plt.close(other)


@pytest.mark.parametrize(
    ("figure", "alt", "error"),
    [("fig", 3, TypeError), ("ax", "text", TypeError), ("fig", "  ", ValueError), ("fig", "$\\pi$ rises", ValueError)],
)
def test_describe_rejects_what_is_not_alt_text_of_a_figure(ax, figure, alt, error):
    with pytest.raises(error, match="alt" if figure == "fig" else "figure"):
        describe(ax.figure if figure == "fig" else ax, alt)


def test_titled_svg_puts_the_title_first_in_the_root_and_rejects_what_is_not_svg():
    svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10pt">\n <g/>\n</svg>\n'
    assert titled_svg(svg, None) == svg
    assert titled_svg(svg, "a < b") == svg.replace('width="10pt">', 'width="10pt">\n <title>a &lt; b</title>')
    with pytest.raises(ValueError, match="svg"):
        titled_svg("<html></html>", "text")


@pytest.mark.parametrize(
    ("items", "noun", "text"),
    [
        ([], "", "none"),
        ([], "row", "no rows"),
        ([5], "", "5"),
        ([5], "row", "row 5"),
        ([1, 2], "", "1 and 2"),
        ((n for n in (1, 2, 5, 7)), "row", "rows 1, 2, 5 and 7"),
        (np.array([3, 4]), "seed", "seeds 3 and 4"),
    ],
)
def test_listing_lists_items_as_a_sentence_does(items, noun, text):
    assert listing(items, noun) == text


@pytest.mark.parametrize("seed", range(5))
def test_figure_table_reads_every_line_where_it_is_asked_at_the_precision_drawn(ax, seed):
    """Seeded random curves of 2 to 5 lines, read at random x: each cell is the line's value there (linear between
    its points), to within half of the last digit shown, which is a thousandth of the axis's range or finer."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, 40))
    curves = {f"line {k}": rng.normal(0, 10 ** rng.uniform(-2, 2), 40) for k in range(rng.integers(2, 6))}
    for label, y in curves.items():
        ax.plot(x, y, label=label)
    at = np.sort(rng.uniform(x[0], x[-1], rng.integers(1, MAX_ROWS + 1)))
    table = figure_table(ax, at=at)
    assert table.header == ("x", *curves)
    low, high = ax.get_ylim()
    for k, row in enumerate(table.rows):
        assert abs(float(row[0]) - at[k]) <= 5e-4 * np.ptp(ax.get_xlim())
        for cell, y in zip(row[1:], curves.values(), strict=True):
            assert abs(float(cell) - np.interp(at[k], x, y)) <= 5e-4 * (high - low)


def test_figure_table_of_several_panels_names_each_column_by_its_panel():
    fig, (left, right) = plt.subplots(1, 2)
    left.plot([1, 2, 4], [0.5, 0.25, 0.125], label=r"$\pi^*$ GRPO")
    left.set(title="weight of one token", xlabel="length", ylabel="weight")
    right.plot([1, 2, 4], [1.0, 1.5, 2.0])
    right.set_ylabel(r"$\hat A$ & <b>")
    right.axhline(1.0, label="level")
    right.set_xscale("log")
    table = figure_table([left, right], at=[1, 2, 4])
    plt.close(fig)
    assert table.header == ("length", r"weight of one token: $\pi^*$ GRPO", r"$\hat A$ & <b>", r"$\hat A$ & <b>: level")
    assert table.rows == (
        ("1", "0.5000", "1.000", "1.000"),
        ("2", "0.2500", "1.500", "1.000"),
        ("4", "0.1250", "2.000", "1.000"),
    )
    assert table.title == "weight of one token"
    html = table._repr_html_()
    assert html.startswith('<details class="grpo-figure-table mathjax_process"><summary>The numbers behind this figure')
    assert html.count('<th scope="col">') == 4 and html.count('<th scope="row">') == 3 and html.count("<td>") == 9
    assert r'<th scope="col">\(\hat A\) &amp; &lt;b&gt;</th>' in html  # math for the page, text escaped
    assert "<caption>weight of one token</caption>" in html
    assert repr(table).splitlines()[:2] == [
        "The numbers behind this figure: weight of one token",
        r"length  weight of one token: $\pi^*$ GRPO  $\hat A$ & <b>  $\hat A$ & <b>: level",
    ]


def test_figure_table_on_a_log_axis_keeps_four_significant_digits(ax):
    ax.loglog([2, 16, 1024], [0.5, 0.123456, 0.0001])
    assert figure_table(ax).rows == (("2", "0.5"), ("16", "0.1235"), ("1024", "0.0001"))


def test_figure_table_rejects_what_it_cannot_read(ax):
    with pytest.raises(TypeError, match="axes"):
        figure_table("not an axes")
    with pytest.raises(ValueError, match="no lines"):
        figure_table(ax)
    ax.plot([0, 1, 2], [0, 1, 0], label="a")
    for at in ([np.nan], [-1, 1], [0.5, 3]):
        with pytest.raises(ValueError, match="at"):
            figure_table(ax, at=at)
    with pytest.raises(ValueError, match="rows"):
        figure_table(ax, at=np.linspace(0, 2, MAX_ROWS + 1))
    ax.plot([0, 1], [1, 1], label="b")
    with pytest.raises(ValueError, match="'b' has x values of its own"):
        figure_table(ax)
    ax.plot([0, 2], [1, 1], label="a")
    with pytest.raises(ValueError, match="two lines named 'a'"):
        figure_table(ax, at=[1])
    ax.lines[-1].set_label("c")
    ax.plot([2, 1, 0], [1, 1, 1], label="d")
    with pytest.raises(ValueError, match="'d' cannot be read"):
        figure_table(ax, at=[1])
