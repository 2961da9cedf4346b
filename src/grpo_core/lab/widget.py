r"""The bandit laboratory of chapter §11 in a notebook: ipywidgets controls beside one view widget.

:class:`BanditLab` is the kernel's adapter of the lab's one controller (``static/lab-controller.js``, the site lab's
own, run in embedded V8 by :mod:`grpo_core.lab.host`): a control or a method becomes an action of the controller,
whose engine commands run on the lab's :class:`grpo_core.bandit.BanditGRPO` (``lab.trainer``); the state it answers
with is assigned to the view (:mod:`grpo_core.lab.view`, an anywidget): one message per click, every view redrawn
from it in the browser in the same frame (``bench/bench_lab_jupyterlab.py``). It computes no formula and writes no
number: the controller's formatter does.

Each knob of :data:`grpo_core.lab.spec.KNOBS` is a trait of the lab (``lab.group_size = 8``), linked to its control
(:mod:`grpo_core.lab.controls`, built from the spec the site's lab reads too): setting either is the controller's
*configure* action, which refuses a value no control can reach.
``import grpo_core.lab`` does not import ipywidgets, anywidget or V8: they are imported when a lab is built.
"""

from __future__ import annotations

import time

import numpy as np

from grpo_core._validate import nonnegative, positive_int, seed_value
from grpo_core.bandit import BanditGRPO, StepResult
from grpo_core.bandit.env import ACTION_NAMES
from grpo_core.lab import controls
from grpo_core.lab.controls import Knobs
from grpo_core.lab.host import Controller, Group
from grpo_core.lab.spec import LIMITS
from grpo_core.lab.view import view_class


class BanditLab(Knobs):
    r"""The §11 laboratory: GRPO on the 4-armed bandit, every quantity on screen.

    Controls: G, ε, β (the chapter's), learning rate, inner epochs, seed,
    advantage variant (GRPO / RLOO / Dr. GRPO), *Sample group*, *GRPO step*,
    *Run N steps* (animated, with a progress bar), *Sharpen π* (put π on one
    action, :math:`\pi_\mathrm{ref}` kept) and *Reset* (π back to the start, :math:`\pi_\mathrm{ref}` captured again).
    Views: π beside :math:`\pi_\mathrm{ref}`, the group (:math:`R_i`, :math:`\hat A_i`, ratios, clip), mean(R), std(R),
    clip fraction, :math:`\mathrm{KL}(\pi\|\pi_\mathrm{ref})`, H(π), P(best), a zero-variance warning, a
    ledger and learning curves.

    Every knob is a trait (:class:`~grpo_core.lab.controls.Knobs`: ``lab.beta = 0.1``) and everything a button does
    is a method (:meth:`sample`, :meth:`step`, :meth:`run_steps`, :meth:`sharpen`, :meth:`reset`), synchronous, so
    a notebook or a test can drive the lab and read what it shows; ``trainer`` is the kernel's run.
    ``frame_delay`` seconds are slept between the animated steps of *Run N steps* (0 for none).
    """

    def __init__(
        self,
        trainer: BanditGRPO | None = None,
        *,
        seed: int = 0,
        ledger_length: int = LIMITS["ledger_length"],
        frame_delay: float = 0.01,
    ):
        import ipywidgets as widgets

        super().__init__()
        self.trainer = BanditGRPO(seed=seed) if trainer is None else trainer
        self.frame_delay = nonnegative(frame_delay, "frame_delay")
        self.controller = Controller(self.trainer, positive_int(ledger_length, "ledger_length"))
        self.names = ACTION_NAMES
        self.best = int(np.argmax(self.trainer.reward_table))
        self.view = view_class()()
        self.view.add_class("grpo-lab-views")
        built = controls.build(
            widgets,
            self.view,
            seed=self.trainer.seed,
            names=self.names,
            rewards=self.trainer.reward_table,
            press=lambda name: self.run_steps() if name == "run" else getattr(self, name)(),
        )
        self.knobs, self.buttons, self.widget = built.knobs, built.buttons, built.widget
        self.seed, self.steps = built.seed, built.steps
        self.sharpen_action, self.sharpen_prob = built.sharpen_action, built.sharpen_prob
        self._render()
        self.link_knobs(self.knobs)

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
        self._act({"do": "sharpen", "onto": onto, "prob": chance})
        self.sharpen_action.value = self.names.index(onto) if isinstance(onto, str) else int(onto)
        self.sharpen_prob.value = float(chance)
        return self.trainer.probs

    def reset(self, seed: int | None = None) -> None:
        r"""*Reset*: π back to the start, :math:`\pi_\mathrm{ref} \leftarrow \pi`, the RNG reseeded with the seed
        box (set to ``seed`` first, if given), curves cleared, a new session.

        The box takes any integer from 0 to 2**64 - 1, in full; any other text is refused in the ledger and
        nothing is reset.
        """
        if seed is not None:
            self.seed.value = str(seed_value(seed))
        self._act({"do": "reset", "seed": self.seed.value})

    def configure(self, name: str, value):
        """A knob's trait set (from code or its control): the controller's *configure* action; the value it took."""
        self._act({"do": "configure", "name": name, "value": value})
        return self.controller.state["config"][name]

    @property
    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The learning curves in full by key, each (steps, values) (:meth:`~grpo_core.lab.host.Controller.curves`)."""
        return self.controller.curves()

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
        self.show_config(self.controller.state["config"])

    # -- reading and showing ---------------------------------------------------

    def readout(self) -> str:
        r"""What the views show, as plain text (the numbers of the cards, π, :math:`\pi_\mathrm{ref}`, the group, the
        warning), written by the controller's formatter."""
        return self.controller.readout()

    def plot(self):
        r"""A static matplotlib snapshot of the run (for a page read without a kernel): π beside
        :math:`\pi_\mathrm{ref}`, the raw reward, and P(best), KL, H over the steps. Returns the figure."""
        from grpo_core.lab.plot import plot

        return plot(self)

    def show(self) -> None:
        """Display the lab in the notebook."""
        from IPython.display import display

        display(self)

    def close(self) -> None:
        """Close every widget of the lab (their models leave the kernel and the saved widget state) and its
        controller."""
        self.controller.close()
        controls.close(self.widget)

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        config = self.trainer.config
        return (
            f"BanditLab(steps={len(self.trainer.history)}, G={config.group_size}, eps={config.eps_low:.2f}, "
            f"beta={config.beta:.3f}, P({self.names[self.best]})={self.trainer.probs[self.best]:.3f})"
        )
