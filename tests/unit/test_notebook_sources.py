"""The reader-facing conventions of the section notebooks, checked on their MyST sources.

Each notebook names and links the chapter section it accompanies, draws its
figures with the one shared style (grpo_core.plotting), writes its notation in
math (not as raw ``π_ref`` or ``r_{i,t}``), and folds every "Try it" answer in a
form that both Jupyter Book and jupyterlab-myst render folded: an
``{admonition}`` with ``:class: dropdown``.
"""

import posixpath
import re
from pathlib import Path

import pytest
import yaml

from grpo_core.plotting import MAX_WIDTH

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
REPOSITORY = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
BOOK_PAGE = "../book/"  # a link to a page of the book, as a notebook writes it (book/_ext/companion_book/links.py)
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
SECTIONS = {
    "02-critic-cost": "§2",
    "03-problem-setup": "§3",
    "04-group-relative-advantage": "§4",
    "05-group-mean-value-estimate": "§5",
    "06-clipped-surrogate-and-kl": "§6",
    "07-algorithm": "§7",
    "08-ppo-rloo-dpo": "§8",
    "09-failure-modes": "§9",
    "10-token-level-grpo": "§10",
    "11-bandit-lab": "§11",
    "12-worked-example": "§12",
}
# spans where raw notation is fine: inline code, math, roles, link targets
PROTECTED = re.compile(r"(``[^`]*``|`[^`\n]*`|\$\$.*?\$\$|\$[^$]+\$|\]\([^)]*\))", re.S)
RAW_NOTATION = re.compile(
    r"[πθφσÂ]_|[A-Za-z]_[πθφ]"  # π_ref, θ_old, V_φ written with an underscore
    r"|[A-Za-zπθ]_\{"  # r_{i,t}
    r"|\b[A-Za-z]\^[{A-Za-zπθ]"  # V^π, p^G
    r"|[₀-₉ₐ-ₜ]"  # Unicode subscripts: Â₁
    r"|\b[RroaAw]_[ijt0-9]\b"  # R_i, o_i, r_1
)


def prose(text: str) -> str:
    """The Markdown of a MyST notebook without its front matter and code cells."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    return re.sub(r"^```\{code-cell\}.*?^```$", "", text, flags=re.S | re.M)


def source(name: str) -> str:
    return (NOTEBOOKS / f"{name}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", SECTIONS)
def test_names_and_links_its_chapter_section(name):
    first_lines = source(name).split("# ", 1)[1].splitlines()[:4]
    header = " ".join(first_lines)
    assert f"Accompanies Chapter 09, **{SECTIONS[name]} " in header
    assert f"]({BOOK_PAGE}intro.md)" in header


@pytest.mark.parametrize("name", sorted(path.stem for path in NOTEBOOKS.glob("*.md")))
def test_links_work_where_the_notebook_is_read(name):
    """A relative link leads to a file of the project, which the book makes a link to its page and JupyterLab
    (``make lab``, whose root is the project) opens; none leads out of the project. A link into the repository by its
    address would open the repository's copy (or nothing, offline) instead of the reader's."""
    for target in LINK_TARGET.findall(prose(source(name))):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            assert not target.startswith(REPOSITORY["url"]), f"{name}: {target} is the repository's copy of a file"
            continue
        path = posixpath.normpath(posixpath.join("notebooks", target.split("#", 1)[0]))
        assert not path.startswith(".."), f"{name}: {target} leaves the project, JupyterLab's root"
        assert (ROOT / path).is_file(), f"{name}: {target} is no file of the project"


@pytest.mark.parametrize("name", SECTIONS)
def test_uses_the_shared_figure_style(name):
    text = source(name)
    assert "use_style()" in text
    assert "rcParams" not in text
    assert "tight_layout" not in text  # the style uses constrained layout
    widths = [float(w) for w in re.findall(r"figsize=\(([0-9.]+)", text)]
    assert all(width <= MAX_WIDTH for width in widths), widths


@pytest.mark.parametrize("name", SECTIONS)
def test_notation_in_prose_is_typeset(name):
    text = PROTECTED.sub("", prose(source(name)))
    hits = [text[max(0, m.start() - 20) : m.end() + 20] for m in RAW_NOTATION.finditer(text)]
    assert hits == []


@pytest.mark.parametrize("name", SECTIONS)
def test_every_answer_folds(name):
    text = source(name)
    answers = re.findall(r"```\{admonition\} Answer\n(\s*)(.*)\n", text)
    assert answers, "every section notebook ends with 'Try it' answers"
    assert all(option == ":class: dropdown" for _, option in answers)
    assert "{dropdown}" not in text  # one form everywhere


def test_raw_notation_pattern_catches_what_it_should():
    for raw in ("π_ref", "θ_old", "V_φ", "r_{i,t}", "V^π", "p^G", "Â₁", "R_i", "o_i"):
        assert RAW_NOTATION.search(f"the {raw} here"), raw
    for fine in ("$\\pi_\\mathrm{ref}$", "`dr_grpo`", "group_size", "π(B)", "KL"):
        assert not RAW_NOTATION.search(PROTECTED.sub("", f"the {fine} here")), fine
