"""Forty honest hw1 submissions, written the ways students write a right answer, and the oracle that says so.

Each answer cell of hw1 (q1's ``group_advantages``, q2's ``zero_std_mask`` and ``safe_group_advantages``, q3's
four numbers) has rewrites that a student could hand in: other NumPy calls, the formula spelt out, a loop over the
groups, a Python list or float returned instead of an array. A submission takes one rewrite per cell (a seeded
draw, no two alike); ``tests/homework/test_grading.py`` grades the forty in its one run of ``grade.py`` and each
must earn full marks. That it deserves them is decided here, not by the grader's key: :func:`disagreements` runs each
rewrite beside the reference answer on inputs of its own (seeded groups of 1 to 9 rewards, batches, ties, equal
rewards, eps from 0 to 0.1) and requires the same answers to 1e-12.
"""

from __future__ import annotations

import itertools

import numpy as np

FORTY = 40
# Per answer cell: how the reference's source starts, then the rewrites.
REWRITES = {
    "def group_advantages": [
        """def group_advantages(rewards, eps=1e-8):
    rewards = np.asarray(rewards, dtype=float)
    mu = np.mean(rewards, axis=-1, keepdims=True)
    return (rewards - mu) / (np.std(rewards, axis=-1, keepdims=True) + eps)""",
        """def group_advantages(rewards, eps=1e-8):
    r = np.array(rewards, dtype=np.float64)
    mean = r.mean(axis=-1)[..., None]
    std = np.sqrt(((r - mean) ** 2).mean(axis=-1))[..., None]
    return np.divide(r - mean, std + eps)""",
        """def group_advantages(rewards, eps=1e-8):
    r = np.asarray(rewards, dtype=float)
    if r.ndim == 1:
        return ((r - r.mean()) / (r.std() + eps)).tolist()
    return [group_advantages(row, eps) for row in r]""",
        """def group_advantages(rewards, eps=1e-8):
    standardise = lambda g: (g - g.mean()) / (g.std() + eps)
    return np.apply_along_axis(standardise, -1, np.asarray(rewards, dtype=float))""",
    ],
    "def zero_std_mask": [
        """def zero_std_mask(rewards):
    rewards = np.asarray(rewards, dtype=float)
    return np.all(rewards == rewards[..., :1], axis=-1)


def safe_group_advantages(rewards, eps=1e-8):
    rewards = np.asarray(rewards, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        advantages = np.asarray(group_advantages(rewards, eps), dtype=float)
    advantages[zero_std_mask(rewards)] = 0.0
    return advantages""",
        """def zero_std_mask(rewards):
    return np.ptp(np.asarray(rewards, dtype=float), axis=-1) == 0


def safe_group_advantages(rewards, eps=1e-8):
    rewards = np.asarray(rewards, dtype=float)
    mask = zero_std_mask(rewards)
    with np.errstate(divide="ignore", invalid="ignore"):
        advantages = np.asarray(group_advantages(rewards, eps), dtype=float)
    return np.where(mask[..., None], 0.0, advantages)""",
        """def zero_std_mask(rewards):
    rewards = np.asarray(rewards, dtype=float)
    return np.max(rewards, axis=-1) - np.min(rewards, axis=-1) == 0


def safe_group_advantages(rewards, eps=1e-8):
    rewards = np.asarray(rewards, dtype=float)
    if rewards.ndim == 1:
        if zero_std_mask(rewards):
            return np.zeros_like(rewards)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(group_advantages(rewards, eps), dtype=float)
    return np.stack([safe_group_advantages(row, eps) for row in rewards])""",
    ],
    "mean_R = ": [
        """mean_R = float(np.mean(R))
std_R = float(np.sqrt(np.mean((R - mean_R) ** 2)))
A_hat = (R - mean_R) / (std_R + 1e-8)
A_hat_sample_std = (R - mean_R) / (np.std(R, ddof=1) + 1e-8)""",
        """mean_R = sum(R) / len(R)
std_R = np.std(R)
A_hat = group_advantages(R)
A_hat_sample_std = (R - mean_R) / (np.sqrt(np.sum((R - mean_R) ** 2) / (len(R) - 1)) + 1e-8)""",
        """mean_R, std_R = R.mean(), R.std(ddof=0)
A_hat = list(group_advantages(R))
A_hat_sample_std = list((R - mean_R) / (R.std(ddof=1) + 1e-8))""",
    ],
}
# What each answer cell defines: functions (checked on the oracle's inputs) or values.
DEFINES = {
    "def group_advantages": ("group_advantages",),
    "def zero_std_mask": ("zero_std_mask", "safe_group_advantages"),
    "mean_R = ": ("mean_R", "std_R", "A_hat", "A_hat_sample_std"),
}
EPSILONS = (1e-8, 0.0, 1e-3, 0.1)


def answer_cells(solved) -> dict[str, int]:
    """The index of each answer cell of REWRITES in a solved hw1 notebook."""
    cells = {}
    for start in REWRITES:
        (index,) = [i for i, cell in enumerate(solved.cells) if cell.source.lstrip().startswith(start)]
        cells[start] = index
    return cells


def submissions(solved) -> list[tuple[str, object]]:
    """FORTY (name, notebook): the solved notebook with each answer cell the reference or one of its rewrites, a
    seeded draw of FORTY different choices (the reference's own choice left out)."""
    cells = answer_cells(solved)
    choices = [range(len(REWRITES[start]) + 1) for start in REWRITES]  # 0: the reference's cell
    every = [combination for combination in itertools.product(*choices) if any(combination)]
    picked = np.random.default_rng(40).choice(len(every), size=FORTY, replace=False)
    out = []
    for number in sorted(picked):
        combination = every[number]
        notebook = solved.copy()
        notebook.cells = [cell.copy() for cell in solved.cells]
        for start, choice in zip(REWRITES, combination, strict=True):
            if choice:
                notebook.cells[cells[start]].source = REWRITES[start][choice - 1]
        out.append(("honest-" + "".join(map(str, combination)) + ".ipynb", notebook))
    return out


def _groups(rng: np.random.Generator) -> list[np.ndarray]:
    """The oracle's inputs: groups of 1 to 9 rewards (ties, near ties, equal rewards, 0/1 rewards) and batches."""
    groups = [rng.normal(size=size) for size in range(2, 10)] + [rng.integers(0, 2, size=6).astype(float)]
    groups += [np.full(size, value) for size, value in ((1, 0.3), (4, 0.1), (5, 1.0), (3, 0.0))]
    groups += [np.round(rng.uniform(size=7), 1), np.array([0.2, 0.9, 0.4, 0.1])]
    groups += [np.array([0.3, 0.3, 0.3 + 1e-15]), np.array([1.0, np.nextafter(1.0, 2.0)])]  # near ties: not equal
    batches = [np.stack([rng.normal(size=5), np.full(5, 0.7), rng.integers(0, 2, size=5)]), rng.normal(size=(4, 3))]
    return groups + batches


def _run(source: str, namespace: dict) -> dict:
    namespace = dict(namespace)
    exec(compile(source, "<answer>", "exec"), namespace)
    return namespace


def _same(a, b) -> bool:
    """The same answer: equal shapes, values equal to 1e-12 (relative beyond 1), NaN where the other has NaN."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True))


def disagreements(solved) -> list[str]:
    """Where a rewrite of REWRITES answers otherwise than the reference answer (empty: every one is right). A
    function is called on the oracle's inputs (:func:`_groups`, each eps of EPSILONS); q3's values are compared
    for the notebook's own ``R``. Each runs after the reference's answers to the questions before it."""
    cells, found = answer_cells(solved), []
    (data,) = [cell.source for cell in solved.cells if cell.source.startswith("R = ")]
    before = _run(data, {"np": np})
    inputs = [(group, eps) for group in _groups(np.random.default_rng(7)) for eps in EPSILONS]
    for start, rewrites in REWRITES.items():
        reference = solved.cells[cells[start]].source
        want = _run(reference, before)
        for number, rewrite in enumerate(rewrites, 1):
            got = _run(rewrite, before)
            for name in DEFINES[start]:
                if not callable(want[name]):
                    found += [] if _same(want[name], got[name]) else [f"{name} (rewrite {number})"]
                    continue
                for group, eps in inputs:
                    args = (group,) if name == "zero_std_mask" else (group, eps)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        if not _same(want[name](*args), got[name](*args)):
                            found.append(f"{name} (rewrite {number}) on {args}")
        before = want
    return found
