"""The rule-based binary verifier (RLVR, chapter §3 eq. 2), grpo_core.course.verifier."""

import math
import string

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from grpo_core.course.verifier import exact_match_reward, extract_final_answer, normalize_answer

EXTRACTION_CASES = [
    ("so the answer is 42.", "42"),
    ("The answer is: 7", "7"),
    ("Answer: -3.5, done", "-3.5"),
    ("the answer is **12**", "12"),
    ("The answer is $\\frac{1}{2}$.", "\\frac{1}{2}"),
    ("First \\boxed{1}, then corrected: \\boxed{2}", "2"),
    ("Hence $\\boxed{\\frac{\\sqrt{2}}{2}}$", "\\frac{\\sqrt{2}}{2}"),
    ("Natalia sold 48 + 24 = 72 clips.\n#### 72", "72"),
    ("the answer is 5 but the final answer is 6", "6"),
    ("3/4 of 56 is 42", None),
    ("\\boxed{42", None),
    ("the answer is", None),
    ("", None),
]

REWARD_CASES = [
    # (completion, reference, reward)
    ("so the answer is 42.", 42, 1.0),
    ("The answer is 42.0", "42", 1.0),
    ("\\boxed{ 42 }", 42, 1.0),
    ("The answer is $\\frac{84}{2}$", 42, 1.0),
    ("#### 1,000", 1000, 1.0),
    ("answer: 0.75", "3/4", 1.0),
    ("answer: 0.1", 0.1, 1.0),
    ("\\boxed{-\\frac{1}{2}}", -0.5, 1.0),
    ("The answer is PARIS.", "Paris", 1.0),
    ("answer is 41", 42, 0.0),
    ("Answer: forty-two", 42, 0.0),  # words are not numbers to this verifier
    ("3/4 * 56 = 42", 42, 0.0),  # correct but no final-answer marker
    ("\\boxed{42", 42, 0.0),  # unclosed box: no answer
    ("answer is 1/0", "1/0", 1.0),  # not a number, compared as a string
    ("answer is 1/0", 0, 0.0),
]


@pytest.mark.parametrize(("text", "expected"), EXTRACTION_CASES)
def test_extract_final_answer_golden(text, expected):
    assert extract_final_answer(text) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("42", "42"),
        ("42.0", "42"),
        ("+42", "42"),
        ("0.750", "3/4"),
        (".5", "1/2"),
        ("6/8", "3/4"),
        ("\\dfrac{6}{8}", "3/4"),
        ("-\\frac{1}{2}", "-1/2"),
        ("12,345.50", "24691/2"),
        (" $X$. ", "x"),
        ("New   York", "new york"),
        ("1e3", "1e3"),
    ],
)
def test_normalize_answer_golden(answer, expected):
    assert normalize_answer(answer) == expected


@pytest.mark.parametrize(("completion", "reference", "reward"), REWARD_CASES)
def test_exact_match_reward_golden(completion, reference, reward):
    assert exact_match_reward([completion], reference).tolist() == [reward]


def test_a_group_of_completions():
    group = ["the answer is 42", "the answer is 24", "\\boxed{42}", "no idea"]
    rewards = exact_match_reward(group, 42)
    assert rewards.dtype == np.float64
    assert rewards.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert exact_match_reward(tuple(group), "42").tolist() == rewards.tolist()


texts = st.text(max_size=60)


@given(st.lists(texts, min_size=1, max_size=8), st.one_of(st.integers(-1000, 1000), st.text(min_size=1, max_size=10)))
def test_reward_is_binary_with_one_entry_per_completion(completions, reference):
    assume(not isinstance(reference, str) or normalize_answer(reference))
    rewards = exact_match_reward(completions, reference)
    assert rewards.shape == (len(completions),)
    assert set(rewards.tolist()) <= {0.0, 1.0}


@given(st.integers(-(10**6), 10**6), st.sampled_from(["the answer is {}", "Answer: {}", "\\boxed{{{}}}", "#### {}"]))
def test_correct_integer_in_any_supported_format_scores_one(value, template):
    assert exact_match_reward([template.format(value)], value).tolist() == [1.0]
    assert exact_match_reward([template.format(value)], value + 1).tolist() == [0.0]


@given(st.integers(-(10**6), 10**6), st.integers(1, 1000))
def test_equal_rationals_match_in_any_written_form(numerator, denominator):
    value = numerator / denominator
    reference = f"{numerator}/{denominator}"
    written = [f"\\boxed{{{numerator * 3}/{denominator * 3}}}"]
    if numerator >= 0:
        written.append(f"the answer is \\frac{{{numerator * 2}}}{{{denominator * 2}}}")
    assert exact_match_reward(written, reference).tolist() == [1.0] * len(written)
    if denominator in (1, 2, 4, 5, 8, 10):  # a finite decimal: the float's repr is exact
        assert exact_match_reward(written, value).tolist() == [1.0] * len(written)


@given(
    st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12),
    st.sampled_from([" ", "\n", "\t  ", ""]),
    st.sampled_from([" ", "\n ", ""]),
)
def test_invariant_to_surrounding_whitespace(answer, before, after):
    completion = f"the answer is {answer}"
    assert exact_match_reward([completion, before + completion + after], answer).tolist() == [1.0, 1.0]
    assert exact_match_reward([completion], f"{before}{answer}{after}").tolist() == [1.0]


ascii_answers = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=12)


@given(ascii_answers, st.sampled_from(["the answer is {}", "ANSWER: {}", "\\boxed{{{}}}"]))
def test_invariant_to_case(answer, template):
    completions = [template.format(answer), template.format(answer.upper()), template.format(answer.swapcase())]
    assert exact_match_reward(completions, answer).tolist() == [1.0, 1.0, 1.0]
    assert exact_match_reward(completions, answer.lower()).tolist() == [1.0, 1.0, 1.0]


def test_completions_must_be_a_list_not_a_string():
    with pytest.raises(TypeError, match="completions"):
        exact_match_reward("the answer is 42", 42)


def test_completions_must_not_be_empty():
    with pytest.raises(ValueError, match="completions"):
        exact_match_reward([], 42)


def test_each_completion_must_be_a_string():
    with pytest.raises(TypeError, match=r"completions\[1\]"):
        exact_match_reward(["the answer is 42", 42], 42)


@pytest.mark.parametrize("bad", [None, True, [42], b"42"])
def test_reference_type(bad):
    with pytest.raises(TypeError, match="reference"):
        exact_match_reward(["42"], bad)


@pytest.mark.parametrize("bad", [math.nan, math.inf, "", "  $ . "])
def test_reference_value(bad):
    with pytest.raises(ValueError, match="reference"):
        exact_match_reward(["42"], bad)


@pytest.mark.parametrize("function", [extract_final_answer, normalize_answer])
def test_text_functions_reject_non_strings(function):
    with pytest.raises(TypeError, match="must be a string"):
        function(42)
