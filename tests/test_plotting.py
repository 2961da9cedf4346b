"""The shared figure style and plots of the notebooks (grpo_core.plotting)."""

import subprocess
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from grpo_core import BanditGRPO, GRPOConfig
from grpo_core.bandit.runs import run_seeds, track
from grpo_core.plotting import FIELD_LABELS, MAX_WIDTH, STYLE, band, plot_runs, use_style


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
