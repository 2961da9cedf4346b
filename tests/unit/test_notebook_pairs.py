"""Every notebook is a jupytext pair: notebooks/NAME.md (the source people
edit) and notebooks/NAME.ipynb (the stored outputs nbval checks). The pair
must hold the same cells; this test reads both and rewrites neither."""

from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
STEMS = sorted({path.stem for path in NOTEBOOKS.glob("*.md")} | {path.stem for path in NOTEBOOKS.glob("*.ipynb")})


def cells(path: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    notebook = jupytext.read(path)
    return [
        (cell.cell_type, cell.source.strip(), tuple(cell.metadata.get("tags", ())))
        for cell in notebook.cells
        if cell.source.strip()
    ]


def test_there_are_notebooks():
    assert len(STEMS) >= 1


@pytest.mark.parametrize("stem", STEMS)
def test_pair_exists_and_is_in_sync(stem):
    md, ipynb = NOTEBOOKS / f"{stem}.md", NOTEBOOKS / f"{stem}.ipynb"
    assert md.exists(), f"{ipynb.name} has no MyST source {md.name}"
    assert ipynb.exists(), f"{md.name} has no paired {ipynb.name}: run `make notebooks NB={md}`"
    assert cells(md) == cells(ipynb), f"{md.name} and {ipynb.name} differ: run `make notebooks NB={md}`"


@pytest.mark.parametrize("stem", STEMS)
def test_stored_outputs_are_complete(stem):
    notebook = jupytext.read(NOTEBOOKS / f"{stem}.ipynb")
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, f"{stem} has no code"
    assert all(cell.get("execution_count") for cell in code), f"{stem}.ipynb was not executed in full"
    errors = [out for cell in code for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, f"{stem}.ipynb stores an error output"
