"""Every notebook figure says what it draws, in words its cell computed, and draws every glyph it names.

A figure's alt text is written by its cell from the numbers it plots (``grpo_core.plotting.describe``, an f-string
over the data), so it cannot drift from the figure: it is the first line of the figure's plain text, which nbval
compares whenever the notebook runs again, and the ``<title>`` of its SVG, which the book makes the image's ``alt``
(``book/_ext/companion_book/figure_alt.py``). Checked here on the stored notebooks (``make notebooks``): every figure
has it, no cell carries alt text typed into its metadata, every ``describe`` call formats values into its text, and
no figure writes a private-use code point (mathtext's ``\\mathbb{E}``: an empty box in every browser).
"""

import ast
import json
import re
import sys
from pathlib import Path

import pytest

from grpo_core.plotting import titled_svg

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TITLE = re.compile(r"<svg\b[^>]*>\s*<title>([^<]*)</title>")
PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


def figures(path: Path):
    """(cell number, cell, svg, plain text) of every SVG output of a stored notebook."""
    cells = json.loads(path.read_text(encoding="utf8"))["cells"]
    for number, cell in enumerate(cells, 1):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/svg+xml" in data:
                yield number, cell, "".join(data["image/svg+xml"]), "".join(data.get("text/plain", []))


def formats_values(call: ast.Call) -> bool:
    """Whether a ``describe(figure, alt)`` call's alt text formats a value into itself (an f-string's ``{...}``)."""
    alt = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "alt"), None)
    return alt is not None and any(isinstance(node, ast.FormattedValue) for node in ast.walk(alt))


def describe_calls(cell_source: str) -> list[ast.Call]:
    """The ``describe(...)`` calls of a code cell (IPython magics and shell lines left out)."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in cell_source.splitlines())
    return [
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "describe"
    ]


def alt_text_problems(path: Path) -> list[str]:
    problems = []
    for number, cell, svg, text in figures(path):
        where = f"{path.name}, cell {number}"
        if "alt" in cell.get("metadata", {}).get("mystnb", {}).get("image", {}):
            problems.append(f"{where}: alt text typed into the cell's metadata")
        title = TITLE.search(svg)
        if title is None:
            problems.append(f"{where}: a figure without alt text (no describe(figure, alt) before it is shown)")
            continue
        if not text.startswith("alt "):
            problems.append(f"{where}: the figure's plain text does not start with its alt text")
        calls = describe_calls("".join(cell["source"]))
        if not calls or not all(formats_values(call) for call in calls):
            problems.append(f"{where}: alt text not formatted from the cell's data (describe with an f-string)")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_figure_has_alt_text_formatted_from_its_data(path):
    assert alt_text_problems(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_figure_writes_a_private_use_code_point(path):
    found = {
        f"cell {number}": sorted({f"U+{ord(char):04X}" for char in PRIVATE_USE.findall(svg)})
        for number, _, svg, _ in figures(path)
        if PRIVATE_USE.search(svg)
    }
    assert found == {}, "glyphs no font has (write 𝔼 as \\mathrm{𝔼}, not \\mathbb{E})"


def test_the_private_use_check_finds_what_mathtext_writes_for_mathbb():
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from grpo_core.plotting import STYLE

    def svg(label: str) -> str:
        with plt.rc_context(STYLE):
            fig, ax = plt.subplots()
            ax.set_ylabel(label)
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg")
            plt.close(fig)
        return buffer.getvalue()

    assert PRIVATE_USE.search(svg(r"$\mathbb{E}[R]$"))
    assert PRIVATE_USE.search(svg(r"$\mathcal{L}$"))
    written = svg(r"$\mathrm{𝔼}[R]$")
    assert not PRIVATE_USE.search(written) and "𝔼" in written


def test_the_alt_text_check_rejects_what_it_should(tmp_path):
    svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg">\n <g/>\n</svg>\n'

    def notebook(source: str, svg: str, text: str, metadata=None) -> Path:
        cell = {
            "cell_type": "code",
            "metadata": metadata or {},
            "source": source,
            "outputs": [{"output_type": "display_data", "data": {"image/svg+xml": svg, "text/plain": text}}],
        }
        path = tmp_path / f"nb{len(list(tmp_path.iterdir()))}.ipynb"
        path.write_text(json.dumps({"cells": [cell]}), encoding="utf8")
        return path

    titled = titled_svg(svg, "Bar chart: 3 bars")
    good = notebook('describe(fig, f"Bar chart: {n} bars")\nplt.show()', titled, "alt 'Bar chart: 3 bars'\nFigure")
    assert alt_text_problems(good) == []
    bad = [
        notebook("plt.show()", svg, "Figure"),  # no alt text
        notebook('describe(fig, "Bar chart: 3 bars")', titled, "alt 'Bar chart: 3 bars'"),  # typed, not formatted
        notebook('describe(fig, f"{n} bars")', titled, "Figure"),  # plain text without it
        notebook(
            'describe(fig, f"{n} bars")', titled, "alt '3 bars'", {"mystnb": {"image": {"alt": "Bar chart: 3 bars"}}}
        ),
    ]
    assert [len(alt_text_problems(path)) for path in bad] == [1, 1, 1, 1]


def test_the_book_reads_back_the_title_a_figure_was_given():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from companion_book.figure_alt import svg_title

    svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg">\n <g/>\n</svg>\n'
    alt = "π(B) < 0.5 & rising: 'B' at rows 1 and 2"
    assert svg_title(titled_svg(svg, alt)) == alt
    assert svg_title(svg) is None
    assert (
        svg_title(svg.replace("<g/>", "<g><title>a group</title></g>")) is None
    )  # a title deeper in: not the figure's
