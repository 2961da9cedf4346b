"""The one definition of the §11 lab's controls and views, as data both labs read.

:data:`KNOBS` (the sliders and the advantage toggle: name, label, range, step, default), :data:`ACTIONS` (the
buttons), the lab's title (:data:`TITLE`, :func:`subtitle`), the other controls' labels and the note
(:data:`WORDS`), :data:`CARDS` and :data:`PANELS` (the numbers and learning curves the views draw) and
:data:`LIMITS` are written here once.
:class:`grpo_core.lab.BanditLab` builds its ipywidgets from them and hands :func:`spec` to the view widget; the static
site reads the same dictionary from ``_static/lab-spec.js``, which :func:`setup` (a Sphinx extension listed in
``_config.yml``) writes at every build. The one controller (``static/lab-controller.js``) reads its rules and
ledger phrases from it in either lab, ``static/lab-site.js`` builds the site's controls from it and
``static/lab-view.js`` draws the cards and curves it lists. :data:`GUARDS` carries the numeric
guards of :mod:`grpo_core.bandit.grpo` that the page's engine (``static/lab-engine.js``) must apply as Python does.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from decimal import Decimal
from pathlib import Path

from grpo_core.bandit import GRPOConfig
from grpo_core.bandit.env import ACTION_NAMES, CHAPTER_REWARDS
from grpo_core.bandit.grpo import LOG_RATIO_BOUND  # the bound its step applies (grpo_core.clipping)

#: The knobs' starting values.
DEFAULTS = GRPOConfig()


@dataclass(frozen=True)
class Knob:
    """One control that sets a field ``name`` of :class:`~grpo_core.bandit.GRPOConfig`.

    A slider has ``minimum``, ``maximum`` and ``step`` (its values are ``minimum + k * step``, shown with
    ``digits`` decimals); a toggle has ``options``, pairs (label, value). ``short`` names the knob in the ledger
    ("set G = 4"); ``section`` is the heading the control sits under.
    """

    name: str
    label: str
    short: str
    section: str
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    options: tuple[tuple[str, str], ...] | None = None

    @property
    def default(self):
        """The control's starting value, the default of :class:`~grpo_core.bandit.GRPOConfig`."""
        return getattr(DEFAULTS, self.name)

    @property
    def digits(self) -> int:
        """Decimals of the slider's step (0 for an integer slider), hence of every value it can take."""
        return max(0, -Decimal(str(self.step)).as_tuple().exponent) if self.step is not None else 0

    @property
    def integer(self) -> bool:
        return isinstance(self.default, int)

    def value(self, raw):
        """The value the slider shows: ``raw`` (a widget's ``min + k * step``, e.g. 1.0499999999999998) rounded
        to the slider's decimals; a toggle's value unchanged."""
        if self.options is not None:
            return raw
        return round(raw) if self.integer else round(float(raw), self.digits)

    def to_json(self) -> dict:
        return {**asdict(self), "default": self.default, "digits": self.digits, "integer": self.integer}


#: The controls of the knobs, in the order the lab shows them.
KNOBS = (
    Knob("group_size", "G (group size)", "G", "Group &amp; clip", 2, 64, 1),
    Knob("eps_low", "ε clip", "ε", "Group &amp; clip", 0.0, 0.5, 0.01),
    Knob("beta", "β KL", "β", "KL to reference", 0.0, 1.0, 0.005),
    Knob("lr", "learning rate", "learning rate", "Optimiser", 0.05, 4.0, 0.05),
    Knob("inner_epochs", "inner epochs", "inner epochs", "Optimiser", 1, 16, 1),
    Knob(
        "advantage",
        "advantage",
        "advantage",
        "Advantage Â (eq. 3, §8)",
        options=(("GRPO", "grpo"), ("RLOO", "rloo"), ("Dr. GRPO", "dr_grpo")),
    ),
)
#: The knobs by name.
KNOB = {knob.name: knob for knob in KNOBS}

#: The lab's heading.
TITLE = "GRPO bandit lab"


def subtitle(names, rewards) -> str:
    """The line under the lab's heading, for a bandit whose answers ``names`` have the rewards ``rewards``."""
    table = ", ".join(f"{name} {reward:g}" for name, reward in zip(names, rewards, strict=True))
    return (
        f"One prompt, {len(names)} answers with rewards {table} (chapter §11) · "
        "sample a group → standardise its rewards (eq. 3) → clipped, KL-penalised step (eq. 9)"
    )


@dataclass(frozen=True)
class Action:
    """A button of the lab: it calls the lab's action ``name`` (its CSS class is ``grpo-lab-<name>``); ``tooltip``
    says what it does; ``style`` and ``icon`` are the ipywidgets Button's ``button_style`` and ``icon`` (the site
    styles a button by its class)."""

    name: str
    label: str
    tooltip: str
    style: str
    icon: str


#: The buttons, the four of the section "Actions" and then *Sharpen π*, the last control of "Push π toward greedy".
ACTIONS = (
    Action("sample", "Sample group", "draw G actions from π (eq. 1)", "info", "random"),
    Action("step", "GRPO step", "one GRPO iteration (§7)", "primary", "play"),
    Action("run", "Run N steps", "N steps, each on a fresh group", "success", "forward"),
    Action("reset", "Reset", "π back to the start; π_ref ← π", "", "refresh"),
    Action("sharpen", "Sharpen π", "π(onto) as set; π_ref kept", "warning", "bullseye"),
)

#: The words of the other controls, the two sections after the knobs' (``sections``), the labels of the N box,
#: the seed box, the *Sharpen π* target and its probability slider (the target "top" is whichever answer π
#: prefers), and the note below the controls.
WORDS = {
    "sections": ["Actions", "Push π toward greedy"],
    "steps": "N steps",
    "seed": "seed (at Reset)",
    "sharpen_action": "onto",
    "top_action": "top (argmax π)",
    "sharpen_prob": "π(onto)",
    "note": "Small G and a sharp π reproduce the zero-variance failure (§9): most groups then hold one answer only.",
}

#: The number cards, each (the card's CSS class ``grpo-lab-…``, its key in the ``stats`` of
#: the state of ``static/lab-controller.js``, label, decimals); "best" in a label is the best action's name.
CARDS = (
    ("mean", "mean", "mean(R)", 3),
    ("std", "std", "std(R)", 3),
    ("clip", "clip", "clip fraction", 2),
    ("kl", "kl", "KL(π‖π_ref)", 3),
    ("entropy", "entropy", "entropy H(π)", 3),
    ("pB", "p_best", "P(best)", 3),
    ("step", "steps", "steps", 0),
)

#: The lab's own colours, each a pair (light, dark), the dark one under the book's ``data-theme="dark"`` and
#: JupyterLab's dark themes. ``static/lab-view.js`` writes them once per page as the CSS custom properties
#: ``--grpo-<name>`` that
#: ``static/lab.css`` and the views use (the series and bars, the signs of Â, the banner, the fills of the site's
#: buttons); :meth:`BanditLab.plot
#: <grpo_core.lab.BanditLab.plot>` draws with the light ones. Every other colour is the theme's (lab.css), "muted"
#: among them. A colour that writes text keeps 4.5:1 on the lab's light and dark backgrounds (tests/unit/test_lab.py).
PALETTE = {
    "blue": ("#2f6db5", "#6ea8f0"),
    "grey": ("#8c959f", "#8b949e"),
    "green": ("#1a7f37", "#4ac26b"),
    "red": ("#cf222e", "#ff7b72"),
    "purple": ("#8250df", "#a371f7"),
    "orange": ("#bc4c00", "#f0883e"),
    "ref": ("#e6eaef", "#3d444d"),
    "pos-bg": ("#dafbe1", "#0f3d1f"),
    "neg-bg": ("#ffebe9", "#4c1518"),
    "zero-bg": ("#eaeef2", "#30363d"),
    "zero": ("#57606a", "#c9d1d9"),
    "warn-bg": ("#fff8c5", "#3b2e00"),
    "warn-border": ("#d4a72c", "#9a6700"),
    "warn-ink": ("#3b2300", "#f8e3a1"),
}
# The fills of the site's action buttons and of the pressed toggle, white text on them in both schemes (so a pair of
# equal colours): the buttons of *Sample group* and *Sharpen π*, and the light blue and green of the palette for
# *GRPO step* (and the pressed toggle) and *Run N steps*.
PALETTE |= {
    "sample-fill": ("#0550ae", "#0550ae"),
    "step-fill": (PALETTE["blue"][0],) * 2,
    "run-fill": (PALETTE["green"][0],) * 2,
    "sharpen-fill": ("#8a5a00", "#8a5a00"),
}

#: The learning-curve panels, each with a title (pieces of text, each with its colour, a name of
#: :data:`~grpo_core.lab.spec.PALETTE` or "muted", or None; "best" is the best action's name), the curves drawn (key,
#: colour, stroke width; the last one's latest value is printed) and the y range (two numbers, or "rewards" for the
#: reward table's, "entropy" for 0 to log K, "kl" for 0 to a round number above the largest KL).
PANELS = (
    {
        "title": [["reward: ", None], ["group mean R", "muted"], [" · ", None], ["V^π", "blue"]],
        "series": [["mean_reward", "grey", 1.0], ["value", "blue", 1.8]],
        "y": "rewards",
    },
    {"title": [["P(best)", None]], "series": [["p_best", "green", 1.8]], "y": [0, 1]},
    {"title": [["KL(π‖π_ref)", None]], "series": [["kl", "purple", 1.8]], "y": "kl"},
    {"title": [["entropy H(π) [nats]", None]], "series": [["entropy", "orange", 1.8]], "y": "entropy"},
    {"title": [["clip fraction (of the group)", None]], "series": [["clip_fraction", "red", 1.4]], "y": [0, 1]},
)
#: Every curve the panels draw, in order.
CURVE_KEYS = tuple(series[0] for panel in PANELS for series in panel["series"])
#: The curves of the policy itself, recorded after every change of π (the others once per GRPO step).
POLICY_CURVES = ("value", "p_best", "kl", "entropy")

#: The bounds of the other controls, the seed (any integer from 0 to 2**64 - 1, as NumPy's ``default_rng``
#: takes it, sent as a decimal string since a JavaScript number holds integers exactly only up to 2**53), N of
#: *Run N steps*, the π(onto) slider of *Sharpen π* (whose minimum, 1/K rounded up, depends on the number K of
#: answers: :func:`sharpen_minimum`) and the ledger.
LIMITS = {
    "max_seed": str(2**64 - 1),
    "max_steps_per_run": 500,
    "steps": 30,
    "sharpen_prob": {"maximum": 0.99, "step": 0.01, "default": 0.94},
    "ledger_length": 12,
}


#: The *Sharpen π* target meaning "whichever answer π already prefers" (the others are answers' indices).
TOP_ACTION = -1


def sharpen_start(answers: int) -> int:
    """The *Sharpen π* target the lab starts on, for ``answers`` answers: C (index 2), which the chapter's rewards
    rank third, or :data:`TOP_ACTION` if there are fewer answers."""
    return 2 if answers > 2 else TOP_ACTION


def sharpen_minimum(answers: int) -> float:
    """The smallest π(onto) of the *Sharpen π* slider for ``answers`` answers: 1/K rounded up to the slider's
    step, a hundredth."""
    return math.ceil(100 / answers) / 100


#: The ledger's phrases. An entry is a list of parts ``[key, values]`` (numbers travel as numbers), shown as the
#: phrases of :data:`LEDGER` joined by " · ": ``{name}`` writes a value as it is (a string, an integer),
#: ``{name:.3f}`` a number or a list of numbers (``[a b c]``), ``{name:.{digits}f}`` with the decimals ``digits`` of
#: the values. The one controller (``static/lab-controller.js``) writes them, and every other number either lab
#: shows, with its one formatter ``fixed``: an exact tie to even, as Python's format (tested on every tie k/G).
LEDGER = {
    "start": "start · seed {seed} · π = π_ref = {probs:.3f}",
    "reset": "reset · seed {seed} · π = π_ref = {probs:.3f}",
    "refused": 'seed must be an integer from 0 to {maximum}, got "{text}": nothing reset',
    "set": "set {knob} = {value:.{digits}f}",
    "set_option": "set {knob} = {label}",
    "sample": "sample G={G} · {drawn} · mean(R) {mean:.3f} · std(R) {std:.3f}",
    "sample_silent": "sample G={G} · {drawn} · mean(R) {mean:.3f} · no signal (all rewards equal)",
    "step": "step {step} · mean(R) {mean:.3f} std(R) {std:.3f} · clip {clip:.2f} · P({best}) {before:.3f} → "
    "{after:.3f} · KL {kl:.3f}",
    # what a step on a group with no signal did to π (KL_OUTCOMES), measured
    "still": "no signal: π did not move",
    "toward": "no signal: the KL term moved π back toward π_ref (KL {before:.3f} → {after:.3f})",
    "away": "no signal: the KL term overshot, π moved away from π_ref (KL {before:.3f} → {after:.3f})",
    "stays": "no signal: KL stays at {after:.3f}",
    "k3": "k3 weight π_ref/π = {weight:.1f} on {answer}",
    "k3_huge": "k3 weight π_ref/π above 10^6 on {answer}",
    "run": "run {total} steps ({first} → {last}) · P({best}) {before:.3f} → {after:.3f} · KL {kl:.3f} · "
    "no-signal groups {silent}/{done}",
    "run_stopped": "run stopped after {done} of {total} steps ({first} → {last}) · P({best}) {before:.3f} → "
    "{after:.3f} · KL {kl:.3f} · no-signal groups {silent}/{done}",
    "sharpen": "sharpen π onto {answer}: π = {probs:.3f} · π_ref kept",
    "diverged": "{message}",
}

#: A change of the KL to the reference policy smaller than this (what three decimals cannot show) is "KL stays"
#: (the controller's ``klOutcome``: what a step on a group with no signal did to π).
KL_STILL = 5e-4
#: A k3 weight (the reference probability over π(a)) of a sampled answer at least this large is said, in the ledger
#: and the banner: the KL term's pull on that answer grows without bound as π(a) → 0, and a step can overshoot the
#: reference policy.
K3_WEIGHT_LARGE = 10.0
#: From this k3 weight on, the lab says "above 10^6" instead of the number.
K3_WEIGHT_SHOWN = 1e6


#: The numeric guards of the bandit's GRPO step that the page's engine applies as Python does, the bound
#: ``LOG_RATIO_BOUND`` of the clipping module on every log-ratio, beyond which the surrogate and the k3 term
#: contribute nothing and the ratio is capped.
GUARDS = {"log_ratio_bound": LOG_RATIO_BOUND}


def spec() -> dict:
    """Everything above as one JSON-able dictionary (what ``GRPOLab.spec`` holds in the page)."""
    return {
        "title": TITLE,
        "subtitle": subtitle(ACTION_NAMES, CHAPTER_REWARDS),
        "knobs": [knob.to_json() for knob in KNOBS],
        "actions": [asdict(action) for action in ACTIONS],
        "words": WORDS,
        "cards": [list(card) for card in CARDS],
        "panels": list(PANELS),
        "palette": PALETTE,
        "curve_keys": list(CURVE_KEYS),
        "policy_curves": list(POLICY_CURVES),
        "limits": {
            **LIMITS,
            "top_action": TOP_ACTION,
            "sharpen_action": sharpen_start(len(ACTION_NAMES)),
            "sharpen_prob": {**LIMITS["sharpen_prob"], "minimum": sharpen_minimum(len(ACTION_NAMES))},
        },
        "guards": GUARDS,
        "ledger": LEDGER,
        "kl_still": KL_STILL,
        "k3_weight_large": K3_WEIGHT_LARGE,
        "k3_weight_shown": K3_WEIGHT_SHOWN,
        "defaults": asdict(DEFAULTS),
        "names": list(ACTION_NAMES),
        "rewards": list(CHAPTER_REWARDS),
    }


def script() -> str:
    """``lab-spec.js``: a classic script that sets ``globalThis.GRPOLab.spec`` to :func:`spec`."""
    return (
        "/* Generated from grpo_core.lab.spec at every build of the book: edit that module, not this file. */\n"
        f"(globalThis.GRPOLab = globalThis.GRPOLab || {{}}).spec = {json.dumps(spec(), ensure_ascii=False)};\n"
    )


def write_script(app, exception) -> None:
    """Write ``_static/lab-spec.js`` into a finished HTML build."""
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        (static / "lab-spec.js").write_text(script(), encoding="utf8")


def setup(app) -> dict:
    """The Sphinx extension (``_config.yml``): the book's ``_static/lab-spec.js`` is written from :func:`spec`."""
    app.connect("build-finished", write_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
