"""The book's sources agree with the package, the notebooks and each other.

These checks need no build: they read _config.yml, _toc.yml, the pages under
book/ and the package, and catch what the build itself would not (a notebook
missing from the table of contents, a function of the chapter table missing
from the equation page, a vendored file that changed).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml

import grpo_core

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))

from companion_book import api, downloads, execution, repository  # noqa: E402 (importable once book/_ext is on sys.path)

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf8"))


def _toc_files() -> list[str]:
    return [TOC["root"]] + [chapter["file"] for part in TOC["parts"] for chapter in part["chapters"]]


def _notebooks_on_disk() -> list[str]:
    """Every notebook pair notebooks/NAME.md + notebooks/NAME.ipynb, as a docname."""
    return sorted(
        f"notebooks/{md.stem}" for md in (ROOT / "notebooks").glob("*.md") if md.with_suffix(".ipynb").exists()
    )


def test_every_file_of_the_table_of_contents_exists():
    for name in _toc_files():
        assert (ROOT / f"{name}.md").is_file(), f"_toc.yml lists {name}, but {name}.md does not exist"


def test_every_notebook_is_in_the_table_of_contents_in_chapter_order():
    listed = [name for name in _toc_files() if name.startswith("notebooks/")]
    assert set(_notebooks_on_disk()) <= set(listed), "add each notebook to _toc.yml: `- file: notebooks/NAME`"
    assert listed == sorted(listed), "notebooks appear in chapter order"


def test_the_md_of_each_notebook_is_the_source_and_its_ipynb_is_excluded():
    assert "notebooks/*.ipynb" in CONFIG["exclude_patterns"]
    assert CONFIG["only_build_toc_files"] is True


def test_execution_fails_the_build_on_any_cell_error():
    execute = CONFIG["execute"]
    assert execute["execute_notebooks"] == "cache"
    assert execute["raise_on_error"] is True
    assert execute["allow_errors"] is False


@pytest.mark.parametrize("docname", _notebooks_on_disk())
def test_the_book_shows_the_stored_outputs_without_executing(docname, tmp_path):
    """Each .ipynb twin, cached as the build caches it, is what myst-nb finds for its .md: nothing is executed.

    An edited code cell is not found (the build would execute that notebook), so the match is not vacuous.
    """
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    source = ROOT / f"{docname}.md"
    cache = get_cache(tmp_path / "cache")
    execution.cache_twin(cache, source)
    notebook = read_myst_markdown_notebook(source.read_text(encoding="utf8"))
    record = cache.match_cache_notebook(notebook)
    assert record.data["execution_seconds"] > 0
    _, merged = cache.merge_match_into_notebook(notebook)
    stored = [
        cell.outputs for cell in nbformat.read(source.with_suffix(".ipynb"), as_version=4).cells if "outputs" in cell
    ]
    assert [cell.outputs for cell in merged.cells if "outputs" in cell] == stored
    edited = next(cell for cell in notebook.cells if cell.cell_type == "code")
    edited.source += "\nx = 1"
    with pytest.raises(KeyError):
        cache.match_cache_notebook(notebook)


def test_the_widget_manager_and_its_loader_come_from_the_site():
    scripts = CONFIG["sphinx"]["config"]["nb_ipywidgets_js"]
    assert list(scripts) == ["widgets/require.js", "widgets-paths.js", "widgets/embed-amd.js"]
    for name in scripts:
        assert "://" not in name
        folder = "_vendor" if name.startswith("widgets/") else "_assets"
        assert (BOOK / folder / name).is_file()
    assert "://" not in scripts["widgets/embed-amd.js"]["data-jupyter-widgets-cdn"]


def test_vendored_files_match_the_checksums_of_their_readme():
    readme = (BOOK / "_vendor" / "README.md").read_text(encoding="utf8")
    recorded = dict(re.findall(r"^\| `(widgets/[^`]+)` \|.*\| `([0-9a-f]{64})` \|$", readme, re.M))
    vendored = {p.relative_to(BOOK / "_vendor").as_posix() for p in (BOOK / "_vendor" / "widgets").iterdir()}
    assert set(recorded) == vendored - {"widgets/embed-amd.js.LICENSE.txt"}
    for name, digest in recorded.items():
        assert hashlib.sha256((BOOK / "_vendor" / name).read_bytes()).hexdigest() == digest, name


def test_the_rendered_equation_table_has_every_equation():
    """book/equations.md renders the table of grpo_core's docstring (api.equation_rows): eqs. (1)-(9) all appear."""
    rows = api.equation_rows()
    numbers = {int(number) for _, chapter, _, _ in rows for number in re.findall(r"eq\. \((\d)\)", chapter)}
    assert numbers == set(range(1, 10))
    for section, _, _, names in rows:
        assert re.fullmatch(r"§\d+(, §\d+)*", section) and names, section
        for number in re.findall(r"\d+", section):
            assert len(list((ROOT / "notebooks").glob(f"{int(number):02d}-*.md"))) == 1, section


def test_every_public_module_has_an_api_page():
    documented = {
        name
        for page in (BOOK / "api").glob("*.md")
        for name in re.findall(r"^\.\. automodule:: (grpo_core\.[\w.]+)$", page.read_text(encoding="utf8"), re.M)
    }
    package = ROOT / "src" / "grpo_core"
    public = {
        ".".join(("grpo_core", *path.relative_to(package).with_suffix("").parts)).removesuffix(".__init__")
        for path in package.rglob("*.py")
        if not path.name.startswith("_") or path.name == "__init__.py"
    } - {"grpo_core"}
    assert documented == public


def test_the_extension_list_is_jupyter_books_without_thebe_and_intersphinx():
    """_config.yml repeats Jupyter Book's extension list to leave two out: fail loudly when that list changes."""
    from jupyter_book.config import get_default_sphinx_config

    ours = CONFIG["sphinx"]["config"]["extensions"]
    defaults = [
        name
        for name in get_default_sphinx_config()["extensions"]
        if name not in ("sphinx_thebe", "sphinx.ext.intersphinx")
    ]
    assert ours[: len(defaults)] == defaults


def test_every_top_level_name_has_a_home_module():
    """The API page links each name of grpo_core.__all__ to the submodule that defines it."""
    for name in grpo_core.__all__:
        home = api.defined_in(name)
        assert home is not None and home.startswith("grpo_core."), name
        assert getattr(sys.modules[home], name) is getattr(grpo_core, name)


NOTATION = {
    "q": r"$q$",
    "o_i": r"$o_i$",
    "o_{i,t}": r"$o_{i,t}$",
    "|o_i|": r"$\lvert o_i \rvert$",
    "G": r"$G$",
    "R_i": r"$R_i$",
    "r(q,o)": r"$r(q, o)$",
    "hat A_i": r"$\hat A_i$",
    "r_{i,t}(theta)": r"$r_{i,t}(\theta)$",
    "epsilon (both)": r"$\varepsilon$ (eq. 3)",
    "epsilon (clip)": r"$\varepsilon$ (eq. 7)",
    "beta": r"$\beta$",
    "pi_theta": r"$\pi_\theta$",
    "pi_theta_old": r"$\pi_{\theta_\mathrm{old}}$",
    "pi_ref": r"$\pi_\mathrm{ref}$",
    "V^pi(q)": r"$V^\pi(q)$",
    "V_phi": r"$V_\phi$",
    "J_clip": r"$\mathcal J_\mathrm{clip}(\theta)$",
    "J_GRPO": r"$\mathcal J_\mathrm{GRPO}(\theta)$",
    "D_KL hat": r"$\widehat D_\mathrm{KL}[\pi_\theta \Vert \pi_\mathrm{ref}]$",
    "k1": "k1",
    "k2": "k2",
    "k3": "k3",
    "eps_low, eps_high": r"$\varepsilon_\mathrm{low}, \varepsilon_\mathrm{high}$",
}


@pytest.mark.parametrize("symbol", NOTATION)
def test_the_notation_page_has_a_row_for_every_symbol(symbol):
    lines = (BOOK / "notation.md").read_text(encoding="utf8").splitlines()
    first_cells = [line.split(" | ")[0].removeprefix("| ") for line in lines if line.startswith("| ")]
    assert any(NOTATION[symbol] in cell for cell in first_cells), symbol


def test_every_reference_is_cited_and_every_citation_is_a_reference():
    bib = (BOOK / "references.bib").read_text(encoding="utf8")
    keys = set(re.findall(r"^@\w+\{([^,]+),", bib, re.M))
    pages = [*BOOK.glob("*.md"), *(ROOT / "notebooks").glob("*.md")]
    cited = {
        key.strip()
        for page in pages
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", page.read_text(encoding="utf8"))
        for key in group.split(",")
    }
    assert keys - cited == set(), "entries nobody cites do not appear in the bibliography"
    assert cited - keys == set()


@pytest.mark.parametrize(
    "url, expected",
    [("", {}), (repository.PLACEHOLDER, {}), ("https://github.com/org/grpo-companion", "kept")],
)
def test_launch_buttons_appear_only_with_a_repository_url(url, expected):
    buttons = {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}
    config = SimpleNamespace(html_theme_options={"repository_url": url, "launch_buttons": dict(buttons)})
    downloads.hide_launch_buttons_without_repository(None, config)
    assert config.html_theme_options["launch_buttons"] == (buttons if expected == "kept" else {})


@pytest.mark.parametrize("url", ["", repository.PLACEHOLDER, repository.PLACEHOLDER + "/"])
def test_a_page_that_names_the_placeholder_address_says_so(url):
    config = SimpleNamespace(html_theme_options={"repository_url": url}, myst_substitutions={})
    repository.offer_repository_url(None, config)
    note = config.myst_substitutions["repository_note"]
    assert note.startswith(":::{warning}") and "placeholder" in note and "repository.url" in note


def test_a_page_that_names_a_real_address_says_nothing_more():
    config = SimpleNamespace(
        html_theme_options={"repository_url": "https://github.com/org/grpo"}, myst_substitutions={}
    )
    repository.offer_repository_url(None, config)
    assert config.myst_substitutions == {"repository_url": "https://github.com/org/grpo", "repository_note": ""}


def test_every_page_that_names_the_address_carries_its_note():
    pages = [*BOOK.glob("*.md"), *(ROOT / "notebooks").glob("*.md"), ROOT / "README.md"]
    naming = {page.name for page in pages if "{{ repository_url }}" in page.read_text(encoding="utf8")}
    noted = {page.name for page in pages if "{{ repository_note }}" in page.read_text(encoding="utf8")}
    assert naming and naming == noted
