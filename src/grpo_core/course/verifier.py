r"""A rule-based verifier with binary rewards: the RLVR case of chapter §3, eq. (2).

In RL with verifiable rewards the scorer :math:`r(q, o)` of eq. (2) is not a
learned reward model but a checker: pull the final answer out of completion
``o`` and compare it with the reference answer of prompt ``q``,

.. math:: R_i = r(q, o_i) = \mathbb 1[\,\mathrm{answer}(o_i) \equiv \mathrm{reference}(q)\,] \in \{0, 1\}.

The rules here are deliberately small and explicit (a teaching verifier, not
a full math grader such as ``math_verify``):

* **Extraction** (:func:`extract_final_answer`): the content of the last
  ``\boxed{...}``; else the text after the last ``####`` (GSM8K style); else the
  first token after the last "answer is" / "answer:"; else no answer.
* **Normalization** (:func:`normalize_answer`): surrounding whitespace, ``$``
  signs and a trailing ``.`` are dropped, inner whitespace is collapsed, case is
  folded. An answer that reads as a number (``42``, ``-3.50``, ``1,000``,
  ``3/4``, ``\frac{3}{4}``) is compared as an exact rational, so
  ``42`` ≡ ``42.0`` ≡ ``\frac{84}{2}`` and ``0.75`` ≡ ``3/4``. Scientific
  notation and words ("forty-two") are compared as plain strings.
* A completion with no extractable answer scores 0, as does any mismatch.
"""

from __future__ import annotations

import math
import numbers
import re
from collections import deque
from fractions import Fraction

import numpy as np

BOXED = "\\boxed{"
GSM8K_MARKER = "####"
ANSWER_PHRASE = re.compile(r"answer\s*(?:is\s*:?|:)\s*", re.IGNORECASE)
LATEX_FRACTION = re.compile(r"^([+-]?)\\[dt]?frac\{([0-9]+)\}\{([0-9]+)\}$")
THOUSANDS = re.compile(r"^[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?$")
NUMBER = re.compile(r"^[+-]?(?:[0-9]+/[0-9]+|[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")
TRAILING_PUNCTUATION = ".,;:!"
MAX_EXACT_DIGITS = 4000  # Python refuses int <-> str conversions beyond 4300 digits
EXACT_LIMIT = 10**MAX_EXACT_DIGITS  # the smallest integer of more than MAX_EXACT_DIGITS digits


def _text(value, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}``, braces balanced; None if unclosed."""
    start = text.rfind(BOXED) + len(BOXED)
    depth = 1
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[start:end]
    return None


def extract_final_answer(text: str) -> str | None:
    r"""The final answer written in a completion, or ``None`` if there is none.

    Tried in order: the last ``\boxed{...}`` (nested braces allowed), the rest
    of the line after the last ``####``, then the first whitespace-delimited
    token after the last "answer is" / "answer:" (case-insensitive), with
    trailing punctuation and ``$`` removed. Answers longer than one token need
    ``\boxed{}``.

    >>> extract_final_answer("so the answer is 42.")
    '42'
    >>> extract_final_answer(r"Hence $\boxed{\frac{1}{2}}$")
    '\\frac{1}{2}'
    """
    text = _text(text, "text")
    if BOXED in text:
        return _last_boxed(text)
    if GSM8K_MARKER in text:
        answer = text.rsplit(GSM8K_MARKER, 1)[1].strip().split("\n", 1)[0].strip()
        return answer or None
    last = deque(ANSWER_PHRASE.finditer(text), maxlen=1)  # only the last match is kept: linear in the text
    if not last:
        return None
    tokens = text[last[0].end() :].replace("$", " ").split()
    answer = tokens[0].strip("*").rstrip(TRAILING_PUNCTUATION) if tokens else ""
    return answer or None


def _as_number(answer: str) -> str | None:
    """The canonical form of ``answer`` (already normalized) if it reads as a number, else None.

    Up to ``MAX_EXACT_DIGITS`` significant digits the number is an exact
    rational (``"0.750"`` → ``"3/4"``). Beyond, it is compared as written, with
    its redundant zeros removed (leading zeros, trailing zeros after the point,
    ``-0``); such a ``p/q`` is not reduced.
    """
    fraction = LATEX_FRACTION.match(answer)
    if fraction:
        answer = f"{fraction[1]}{fraction[2]}/{fraction[3]}"
    elif THOUSANDS.match(answer):
        answer = answer.replace(",", "")
    if not NUMBER.match(answer):
        return None
    sign, body = (answer[0], answer[1:]) if answer[0] in "+-" else ("", answer)
    if "/" in body:
        numerator, denominator = (part.lstrip("0") for part in body.split("/"))
        if not denominator:
            return None  # division by zero: not a number
        if max(len(numerator), len(denominator)) <= MAX_EXACT_DIGITS:
            return str(Fraction(f"{sign}{numerator or 0}/{denominator}"))
        return f"{'-' if sign == '-' and numerator else ''}{numerator or 0}/{denominator}"
    whole, _, decimals = body.partition(".")
    whole, decimals = whole.lstrip("0"), decimals.rstrip("0")
    if len(whole) + len(decimals) <= MAX_EXACT_DIGITS:
        return str(Fraction(f"{sign}{whole or 0}.{decimals or 0}"))
    return f"{'-' if sign == '-' else ''}{whole or 0}{'.' + decimals if decimals else ''}"


def _strip_outer(answer: str) -> str:
    """Drop whitespace and ``$`` at both ends and ``.`` at the end, in one linear pass from each side."""
    start, end = 0, len(answer)
    while start < end and (answer[start].isspace() or answer[start] == "$"):
        start += 1
    while end > start and (answer[end - 1].isspace() or answer[end - 1] in "$."):
        end -= 1
    return answer[start:end]


def normalize_answer(answer: str) -> str:
    """Canonical form of an answer: outer whitespace, ``$`` and final ``.`` removed, spaces collapsed, case folded.

    Numbers are written back in a canonical form (``"42.0"`` → ``"42"``,
    ``"0.750"`` and ``"3/4"`` → ``"3/4"``), so that two answers match exactly
    when their normalized strings are equal.
    """
    answer = " ".join(_strip_outer(_text(answer, "answer")).split()).casefold()
    number = _as_number(answer)
    return answer if number is None else number


def _references(reference) -> frozenset[str]:
    """The normalized forms an answer may take to match ``reference``.

    A string is normalized; a number is normalized as Python writes it
    (``str``), and a float also as the exact rational of that decimal, so
    ``1e-07`` matches both "1e-07" and "0.0000001".
    """
    if isinstance(reference, bool) or not isinstance(reference, (str, numbers.Real)):
        raise TypeError(f"reference must be a string or a real number, got {type(reference).__name__}")
    if isinstance(reference, str):
        normalized = normalize_answer(reference)
        if not normalized:
            raise ValueError("reference must not be empty")
        return frozenset({normalized})
    if isinstance(reference, numbers.Integral):
        if abs(int(reference)) >= EXACT_LIMIT:
            raise ValueError(f"reference: integers of more than {MAX_EXACT_DIGITS} digits must be given as strings")
        return frozenset({normalize_answer(str(int(reference)))})
    if not math.isfinite(reference):
        raise ValueError(f"reference must be finite, got {reference}")
    return frozenset({normalize_answer(str(reference)), str(Fraction(str(reference)))})


def exact_match_reward(completions, reference) -> np.ndarray:
    """Eq. (2) with a rule-based verifier: 1.0 where a completion's final answer matches ``reference``, else 0.0.

    Parameters
    ----------
    completions : list or tuple of str
        The group ``o_1, …, o_G`` of sampled completions for one prompt (eq. 1).
    reference : str or real number
        The prompt's ground-truth final answer (not extracted, only normalized).

    Returns
    -------
    rewards : float array of shape ``(G,)`` with entries in {0.0, 1.0}, ready
        for :func:`grpo_core.advantages.group_advantages`.
    """
    if not isinstance(completions, (list, tuple)):
        raise TypeError(f"completions must be a list or tuple of strings, got {type(completions).__name__}")
    if not completions:
        raise ValueError("completions must hold at least one completion")
    for i, completion in enumerate(completions):
        _text(completion, f"completions[{i}]")
    targets = _references(reference)
    answers = [extract_final_answer(completion) for completion in completions]
    return np.array([float(answer is not None and normalize_answer(answer) in targets) for answer in answers])
