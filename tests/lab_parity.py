"""Seeded GRPO trajectories from grpo_core, the reference the page's JavaScript engine must replay.

``trajectories()`` runs :class:`grpo_core.bandit.BanditGRPO` for each case of
``CASES`` (every advantage variant, a spread of G, ε, β, lr, inner epochs and
seeds, a sharpened start) and records, after every step, the group's actions
and the logits. ``tests/test_lab_site.py`` hands them to the built §11 page,
whose engine (``grpo_core/lab/static/lab-engine.js``) must draw the same
actions and end every step within ``LOGIT_TOLERANCE`` of the same logits.
Run as a script to print the cases' sizes.
"""

from __future__ import annotations

import numpy as np

from grpo_core.bandit import BanditGRPO, GRPOConfig

STEPS = 200
LOGIT_TOLERANCE = 1e-12
CASES = (
    {"seed": 0, "config": {}},
    {"seed": 1, "config": {"advantage": "rloo"}},
    {"seed": 2, "config": {"advantage": "dr_grpo", "lr": 2.5}},
    {"seed": 3, "config": {"group_size": 2, "eps_low": 0.05, "beta": 0.0}},
    {"seed": 4, "config": {"group_size": 64, "eps_low": 0.5, "beta": 1.0, "lr": 0.3, "inner_epochs": 16}},
    {"seed": 5, "config": {"group_size": 5, "eps_low": 0.1, "eps_high": 0.28, "inner_epochs": 1}},
    {"seed": 2**31 - 1, "config": {"group_size": 16, "beta": 0.2, "advantage": "rloo", "inner_epochs": 8}},
    {"seed": 123456, "config": {"group_size": 3, "lr": 4.0, "advantage": "dr_grpo", "beta": 0.005}},
    {"seed": 7, "config": {"group_size": 4, "beta": 0.0}, "policy": [0.02, 0.02, 0.94, 0.02]},
)


def trajectory(case: dict, steps: int = STEPS) -> dict:
    """One case's run: the actions of every group and the logits after every step."""
    run = BanditGRPO(config=GRPOConfig(**case["config"]), seed=case["seed"])
    if "policy" in case:
        run.set_policy(case["policy"])
    actions, logits = [], []
    for _ in range(steps):
        result = run.step()
        actions.append(result.actions.tolist())
        logits.append(run.logits.tolist())
    return {**case, "actions": actions, "logits": logits}


def trajectories(steps: int = STEPS) -> list[dict]:
    """Every case of ``CASES``, run for ``steps`` steps."""
    return [trajectory(case, steps) for case in CASES]


if __name__ == "__main__":
    for case in trajectories():
        print(case["seed"], case["config"], np.asarray(case["logits"][-1]).round(3))
