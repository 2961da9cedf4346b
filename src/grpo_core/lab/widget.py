r"""The bandit laboratory of chapter §11 in a notebook: ipywidgets controls beside one view widget.

:class:`BanditLab` is the kernel's adapter of the lab's one controller (``static/lab-controller.js``, the site lab's
own, run in embedded V8 by :mod:`grpo_core.lab.host`): a control or a method becomes an action of the controller,
whose engine commands run on the lab's :class:`grpo_core.bandit.BanditGRPO` (``lab.run``); the state it answers
with is assigned to the view (:mod:`grpo_core.lab.view`, an anywidget): one message per click, every view redrawn
from it in the browser in the same frame (``bench/bench_lab_jupyterlab.py``). It computes no formula and writes no
number: the controller's formatter does.

The controls (:mod:`grpo_core.lab.controls`) are built from :mod:`grpo_core.lab.spec`, the definition the site's
lab reads too.
``import grpo_core.lab`` does not import ipywidgets, anywidget or V8: they are imported when a lab is built.
"""

from __future__ import annotations

import time

import numpy as np

from grpo_core._validate import nonnegative, positive_int, seed_value
from grpo_core.bandit import BanditGRPO, GRPOConfig, StepResult
from grpo_core.bandit.env import ACTION_NAMES, CHAPTER_REWARDS
from grpo_core.lab import controls
from grpo_core.lab.host import Controller, Group
from grpo_core.lab.spec import KNOBS, LIMITS, PALETTE, TOP_ACTION
from grpo_core.lab.view import view_class

LIGHT = {name: light for name, (light, _) in PALETTE.items()}  # the lab's colours, as the views draw them


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
        if self.run.reward_table.tolist() != list(CHAPTER_REWARDS):
            raise ValueError(f"run: the lab plays the chapter's bandit, rewards {list(CHAPTER_REWARDS)}")
        self.names = ACTION_NAMES
        self.best = int(np.argmax(self.run.reward_table))
        self.frame_delay = nonnegative(frame_delay, "frame_delay")
        self.controller = Controller(self.run, positive_int(ledger_length, "ledger_length"))
        self.view = view_class()()
        self.view.add_class("grpo-lab-views")
        built = controls.build(
            widgets,
            self.view,
            config=self.run.config,
            seed=self.run.seed,
            names=self.names,
            rewards=self.run.reward_table,
            configure=self._configure,
            press=lambda name: self.run_steps() if name == "run" else getattr(self, name)(),
        )
        self.knobs, self.buttons, self.widget = built.knobs, built.buttons, built.widget
        self.seed, self.steps = built.seed, built.steps
        self.sharpen_action, self.sharpen_prob = built.sharpen_action, built.sharpen_prob
        self.group_size, self.eps, self.beta = self.knobs["group_size"], self.knobs["eps_low"], self.knobs["beta"]
        self.lr, self.inner_epochs, self.advantage = (
            self.knobs["lr"],
            self.knobs["inner_epochs"],
            self.knobs["advantage"],
        )
        self._render()

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

    # -- actions: the controller's ---------------------------------------------

    def _act(self, action: dict) -> list[Group | StepResult | None]:
        results = self.controller.act(action)
        self._render()
        return results

    def sample(self) -> Group:
        r"""*Sample group*: draw G actions from π (eq. 1) and show :math:`R_i` and :math:`\hat A_i` (eq. 3)."""
        return self._act({"do": "sample"})[0]

    def step(self) -> StepResult | None:
        """*GRPO step* on the group on screen (a fresh group is sampled first if there is none).

        A step that raises :class:`~grpo_core.bandit.trainer.Diverged` leaves π as it was, puts the error's message
        in the ledger and returns None.
        """
        return self._act({"do": "step"})[0]

    def run_steps(self, steps: int | None = None) -> list[StepResult]:
        """*Run N steps*: each on a fresh group, the views and the progress bar redrawn after every step; a step
        that diverges ends the run."""
        if steps is not None:
            self.steps.value = positive_int(steps, "steps")
        self._act({"do": "run", "steps": self.steps.value})
        self.buttons["run"].disabled = True
        results = []
        try:
            while self.controller.state["running"]:
                results += self._act({"do": "tick"})
                if self.frame_delay and self.controller.state["running"]:
                    time.sleep(self.frame_delay)
        finally:
            self.buttons["run"].disabled = False
        return [result for result in results if result is not None]

    def sharpen(self, action: str | int | None = None, prob: float | None = None) -> np.ndarray:
        r"""*Sharpen π*: π(onto) ← ``prob``, the rest shared equally; :math:`\pi_\mathrm{ref}` is kept.

        ``action`` is a name ("C"), an index, or None for the widget's choice ("top" = argmax π); ``prob``
        defaults to the slider; both are checked by the controller and then shown on the widgets.
        """
        onto = self.sharpen_action.value if action is None else action
        chance = self.sharpen_prob.value if prob is None else prob
        if isinstance(onto, bool | np.bool_) or not isinstance(onto, str | int | np.integer):
            raise TypeError(f"action must be a name, an index or {TOP_ACTION}, got {type(onto).__name__}")
        if isinstance(chance, bool | np.bool_) or not isinstance(chance, int | float | np.integer | np.floating):
            raise TypeError(f"prob must be a number, got {type(chance).__name__}")
        onto = onto if isinstance(onto, str) else int(onto)
        self._act({"do": "sharpen", "onto": onto, "prob": float(chance)})
        self.sharpen_action.value = self.names.index(onto) if isinstance(onto, str) else onto
        self.sharpen_prob.value = float(chance)
        return self.run.probs

    def reset(self, seed: int | None = None) -> None:
        r"""*Reset*: π back to the start, :math:`\pi_\mathrm{ref} \leftarrow \pi`, the RNG reseeded with the seed
        box (set to ``seed`` first, if given), curves cleared, a new session.

        The box takes any integer from 0 to 2**64 - 1, in full; any other text is refused in the ledger and
        nothing is reset.
        """
        if seed is not None:
            self.seed.value = str(seed_value(seed))
        self._act({"do": "reset", "seed": self.seed.value})

    def _configure(self, name: str, value) -> None:
        self._act({"do": "configure", "name": name, "value": value})

    @property
    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        r"""The learning curves in full, each a pair of arrays (steps, values).

        Keys ``mean_reward`` and ``clip_fraction`` (of each step's group), ``value`` (:math:`V^\pi`),
        ``p_best``, ``kl`` and ``entropy``.
        """
        return {key: (np.array(xs, dtype=float), np.array(ys)) for key, (xs, ys) in self.controller.curves().items()}

    @property
    def ledger(self) -> list[str]:
        """The ledger's texts, most recent first."""
        return self.controller.ledger()

    def state(self) -> dict:
        """The one state every view is drawn from (the controller's)."""
        return self.controller.state

    def _render(self) -> None:
        """Send the state to the view: one message, every view redrawn from it in the browser."""
        self.view.state = self.controller.state

    # -- reading and showing ---------------------------------------------------

    def readout(self) -> str:
        r"""What the views show, as plain text (the numbers of the cards, π, :math:`\pi_\mathrm{ref}`, the group, the
        warning), written by the controller's formatter."""
        return self.controller.readout()

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
        """Close every widget of the lab (their models leave the kernel and the saved widget state) and its
        controller."""
        self.controller.close()
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
