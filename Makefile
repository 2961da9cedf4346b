# GRPO Companion. Two commands on a fresh machine:
#   make book   builds the static site into _build/html
#   make test   runs every check (lint, unit + property tests, nbval, book, browser, homework)
# Each creates .venv from the pinned requirements.txt on first use.
#   make check  the one-minute tier: lint + tests/unit (no book, browser, homework, notebooks)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINTED := src tests bench notebooks homework book/_ext

.PHONY: venv book test check lint lab bench notebooks clean test-diversity test-arm64 test-lab-sweep test-sweeps

venv: $(STAMP)

# Python keeps the bytecode it compiles (in the venv's and the project's gitignored __pycache__ folders) whatever
# the environment says: with PYTHONDONTWRITEBYTECODE set, as on the machines these targets were measured on, every
# process of `make test` (two test workers, thirty kernels, otter, Sphinx) compiled each module it imported.
unexport PYTHONDONTWRITEBYTECODE

# pip installs the pinned torch and uv; uv installs everything else (and keeps that torch: the pin is met). A
# module is compiled to bytecode when it is first imported, not up front: compiling all of site-packages took
# 30 CPU-s, mostly for modules nothing imports (bench/bench_install.py).
# torch: on Linux x86-64 its CPU build, torch==2.13.0+cpu (a 184 MB wheel, 724 MB installed, no NVIDIA libraries), which
# PyTorch's CPU wheel index serves and PyPI does not (PyPI's Linux x86-64 torch is the CUDA build, with several GB of
# NVIDIA libraries); on macOS and on arm64 the ordinary wheel of requirements.txt. pip also looks where its own
# configuration says (a machine's wheel folder, its find-links); an index it cannot reach costs it one try of
# at most 10 s (--timeout 10 --retries 0), after which it takes the wheel from there (bench/bench_install.py).
TORCH := $(shell grep -E '^torch==' requirements.txt)
ifeq ($(shell uname -sm),Linux x86_64)
TORCH := $(TORCH)+cpu --index-url https://download.pytorch.org/whl/cpu --timeout 10 --retries 0
endif
UV := $(BIN)/uv pip install --quiet --python $(BIN)/python
$(STAMP): requirements.txt requirements-practice.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-deps --no-compile $(TORCH)
	$(BIN)/python -m pip install --quiet --no-deps --no-compile $$(grep -E '^uv==' requirements.txt)
	$(UV) -r requirements.txt -r requirements-practice.txt
	$(UV) --no-deps --no-build-isolation -e .
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --path-output . --warningiserror --nitpick --keep-going \
		|| { rm -rf _build/.doctrees; exit 1; }  # a failed build is forgotten: the next one re-reads every page and warns again

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# A test's tier is its folder (README, "Tests"): tests/unit, tests/site (the built book in Chromium), tests/browser
# (Chromium and JupyterLab), tests/homework (otter, bubblewrap), tests/notebooks with notebooks/ (nbval). Two
# pytest-xdist workers take whole files (--dist loadfile: a notebook's cells share its kernel, a file's module
# fixtures are built once) in the order of TESTS (--no-loadscope-reorder): the longest first, the book's tests
# once the book is built, the short unit files last, to even out the two workers' ends.
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
XDIST := -n 2 --dist loadfile --no-loadscope-reorder
TESTS := tests/homework tests/browser tests/site notebooks tests/notebooks tests/unit

# The unit tier runs no notebook, so without nbval: its import (nbformat -> jsonschema -> rfc3987_syntax, which
# builds ~35 Lark parsers at import) cost every pytest process 3-4 s before its first test.
check: lint
	$(BIN)/pytest $(XDIST) -p no:nbval tests/unit

# One pytest run on both cores while the book builds beside it; a test of the built site waits for the build's
# exit status in $BOOK_STATUS. Each exhaustive sweep runs its fixed cases and a fresh random sample of the rest,
# whose seed pytest prints first and last (GRPO_TEST_SEED=N replays it; make test-sweeps runs every case). Coverage is
# measured in the two workers (pyproject.toml, [tool.coverage.run]). nbval runs the notebooks on an emulated
# x86-64-v2 CPU (--cpu-env baseline: tests/conftest.py, baseline_cpu_env) against the outputs `make notebooks`
# stored on this machine's own CPU: every notebook must give the same outputs on both (README, "What nbval checks").
test: lint
	rm -f .coverage .coverage.* _build/book.status
	mkdir -p _build; \
	{ $(MAKE) -o $(STAMP) book > _build/book.log 2>&1; echo $$? > _build/book.status.tmp; \
	  mv _build/book.status.tmp _build/book.status; } & book=$$!; \
	BOOK_STATUS=_build/book.status $(BIN)/pytest $(XDIST) --measure-coverage $(NBVAL) --cpu-env baseline $(TESTS); \
	tests=$$?; \
	wait $$book; [ "$$(cat _build/book.status)" = 0 ] || { cat _build/book.log; exit 1; }; exit $$tests
	$(BIN)/coverage combine -q
	$(BIN)/coverage report --fail-under=95

# Every notebook under every CPU setting of tests/conftest.py (CPU_SETTINGS: native, the emulated x86-64-v2 CPU,
# MKL_CBWR=COMPATIBLE, MKL held to AVX2, one and two threads) against the same stored outputs; about 20 minutes of
# both cores, so not part of `make test` (README, "What nbval checks"). One notebook: make test-diversity NBS=...
NBS ?=
test-diversity: $(STAMP)
	$(BIN)/python bench/bench_diversity.py $(NBS)

# The lab's page engine against grpo_core over 1 000 random sessions (make test plays 40 of a fixed seed and 8 of a
# fresh one: tests/browser/test_lab_parity.py); about 6 minutes.
test-lab-sweep: $(STAMP)
	GRPO_LAB_PARITY_SESSIONS=1000 $(BIN)/pytest -n 0 -p no:cacheprovider tests/browser/test_lab_parity.py

# Every case of the sweeps that make test samples (tests/sweeps.py; README, "Tests"): every page of the site visited
# at every width and audited, every source listing audited, every notebook page printed, every key term searched
# (tests/site/test_site.py); Run All in every notebook in JupyterLab (tests/browser/test_jupyterlab_reader.py); every
# non-answer in all ten assignments (tests/homework/test_homework_non_answers.py). Builds the book first; about
# 10 minutes of one core and 3 of the other (the site's file is one work unit).
SWEPT := tests/site/test_site.py tests/browser/test_jupyterlab_reader.py tests/homework/test_homework_non_answers.py
test-sweeps: book
	GRPO_TEST_SWEEP=1 $(BIN)/pytest $(XDIST) $(SWEPT)

# The NumPy-only notebooks on arm64 code paths: their kernels run Debian's arm64 Python under qemu-user, with
# NumPy's aarch64 wheel (NEON/ASIMD, SVE), against the outputs stored here (README, "arm64"). Needs root once,
# for apt-get install qemu-user debootstrap; the arm64 root (about 570 MB) is kept in ARM64_ROOT.
ARM64_ROOT ?= _build/arm64-root
test-arm64: $(STAMP)
	tests/arm64/make_root.sh $(ARM64_ROOT)
	$(BIN)/python bench/bench_arm64.py $(ARM64_ROOT) $(NBS)

# Re-create each notebooks/*.ipynb from its .md and execute it, keeping outputs
# and widget state for nbval and the book: make notebooks [NB=notebooks/04-*.md]
NB ?= notebooks/*.md
notebooks: $(STAMP)
	for md in $(NB); do $(BIN)/jupytext --to ipynb --execute $$md || exit 1; done

# JupyterLab on the project with its settings (jupyterlab/): the file browser opens on notebooks/ and lists each
# notebook once, as its MyST .md, which opens as a notebook; saving writes the .md only; no news pop-up
# (book/setup.md).
lab: $(STAMP)
	$(BIN)/jupyter lab --config=jupyterlab/jupyter_lab_config.py

# every benchmark but those that take the cores for many minutes (run each by itself, on an idle machine):
# bench_ci.py times .ci/run on a fresh clone; bench_diversity.py is `make test-diversity`, bench_arm64.py
# `make test-arm64`
SLOW_BENCH := bench/bench_ci.py bench/bench_diversity.py bench/bench_arm64.py
bench: $(STAMP)
	for script in $(filter-out $(SLOW_BENCH),$(wildcard bench/*.py)); do $(BIN)/python $$script || exit 1; done

# Homework (otter-grader; see book/instructors.md).
# make homework: student notebook + requirements.txt, reference notebook and self-contained
#   autograder zip per assignment in homework/dist/NAME/
# make grade SUBMISSIONS=dir [TIMEOUT=600] [CELL_TIMEOUT=60] [CALL_TIMEOUT=60] [JOBS=2] [ROSTER=roster.csv] [DEADLINE=2027-01-15T23:59+00:00]: every
#   file under dir (or one student's folder or file of a class folder graded before) gets one row; each notebook or
#   exported zip runs in its own bubblewrap jail (apt-get install bubblewrap; no root needed)
#   -> homework/dist/grades/NAME.csv (merged by file), unmatched.csv, feedback/, manual-NAME.md, reports/
.PHONY: homework grade class-judge
TIMEOUT ?= 600
CELL_TIMEOUT ?= 60
CALL_TIMEOUT ?= 60
JOBS ?= 2
homework: $(STAMP)
	$(BIN)/python homework/build.py

grade: $(STAMP)
	$(BIN)/python homework/grade.py $(SUBMISSIONS) --timeout $(TIMEOUT) --cell-timeout $(CELL_TIMEOUT) \
		--call-timeout $(CALL_TIMEOUT) --jobs $(JOBS) $(if $(ROSTER),--roster $(ROSTER)) $(if $(DEADLINE),--deadline $(DEADLINE))

# make class-judge [SEED=2026]: a synthetic class (11 students, ~75 files, hw3-hw10) graded by grade.py and by an
#   independent judge (tests/class_judge.py); builds the homework first; prints the rows agreeing / total, fails on
#   any disagreement (about 12 minutes on 2 cores, most of it the hangs' 30 s limits)
SEED ?= 2026
class-judge: homework
	$(BIN)/python tests/class_judge.py --seed $(SEED)

clean:
	rm -rf _build .pytest_cache .coverage .coverage.*
