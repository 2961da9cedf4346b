r"""A static matplotlib snapshot of a :class:`~grpo_core.lab.BanditLab` (for a page read without a kernel), in the
lab's light colours (:data:`grpo_core.lab.spec.PALETTE`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from grpo_core.lab.spec import PALETTE

LIGHT = {name: light for name, (light, _) in PALETTE.items()}  # the lab's colours, as the views draw them


def plot(lab):
    r"""π beside :math:`\pi_\mathrm{ref}`, the raw reward, and P(best), KL, H over the steps of ``lab``. Returns the
    figure."""
    run, names, curves = lab.trainer, lab.names, lab.curves
    fig, (ax_pi, ax_r, ax_p) = plt.subplots(1, 3, figsize=(7.0, 3.0), width_ratios=(1, 1.3, 1.3), layout="constrained")
    x = np.arange(len(names))
    ax_pi.bar(x - 0.18, run.probs, 0.36, label=r"$\pi_\theta$", color=LIGHT["blue"])
    ax_pi.bar(x + 0.18, run.ref_probs, 0.36, label=r"$\pi_{\mathrm{ref}}$", color=LIGHT["ref"], edgecolor=LIGHT["grey"])
    ax_pi.set_xticks(x, [f"{n}\n{r:g}" for n, r in zip(names, run.reward_table, strict=True)])
    ax_pi.set(ylim=(0, 1), ylabel="probability", title=f"policy after {len(run.history)} steps")
    ax_pi.legend(loc="upper right", fontsize=8)
    ax_r.plot(*curves["mean_reward"], "o", ms=3, color=LIGHT["grey"], label="group mean R (raw)")
    ax_r.plot(*curves["value"], color=LIGHT["blue"], label=r"$V^\pi = \sum_a \pi(a)\,r(a)$")
    ax_r.set(xlabel="GRPO step", ylabel="reward", title="reward", ylim=(0, 1))
    ax_r.legend(loc="lower right")
    ax_p.plot(*curves["p_best"], color=LIGHT["green"], label=f"P({names[lab.best]})")
    ax_p.plot(*curves["kl"], color=LIGHT["purple"], label=r"KL($\pi\,\|\,\pi_{\mathrm{ref}}$) [nats]")
    ax_p.plot(*curves["entropy"], color=LIGHT["orange"], label=r"$H(\pi)$ [nats]")
    ax_p.set(xlabel="GRPO step", title="policy statistics")
    ax_p.axhline(np.log(len(names)), color=LIGHT["grey"], lw=0.8, ls="--")
    ax_p.legend(loc="center left", fontsize=8)
    return fig
