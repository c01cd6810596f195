# The series' two commands are `make lab` and `make test`; everything else is a helper.
# The virtual environment is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider \
          --nbval-kernel-startup-timeout=180 --nbval-cell-timeout=600
LAB_ARGS ?=

.PHONY: setup fonts lab test test-browser test-lib test-notebooks execute figures bench article clean help

help:
	@echo "make lab            open JupyterLab on notebooks/ (sets everything up first)"
	@echo "make test           run every test: library, environment, notebooks (strict nbval)"
	@echo "make test-browser   open the live-explorers notebook in headless Chromium and move a slider"
	@echo "make figures        regenerate the article figures into figures/"
	@echo "make execute        re-execute notebooks in place in a fresh kernel (NB=path/to/one.ipynb for one)"
	@echo "make bench          run the benchmarks under bench/ (writes JSON to bench/results/)"
	@echo "make article        print the article's result table as JSON"

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[notebook,test,browser]'
	@touch $(STAMP)

setup: $(STAMP)

# The Chinese figures use the Noto Sans CJK SC subset shipped in evidence_lib/fonts/, never a system
# font: nothing to install. This only says which font is used and checks it covers every label.
fonts: setup
	@$(BIN)/python -c "from evidence_lib.figures import cjk_family, cjk_font_path; print('CJK font:', cjk_family(), '(' + str(cjk_font_path()) + ')')"
	@$(BIN)/python scripts/subset_cjk_font.py --check

lab: setup
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks $(LAB_ARGS)

test: setup
	$(BIN)/python -m pytest -q tests
	$(BIN)/python -m pytest -q $(NBVAL) notebooks

# A real browser: JupyterLab on loopback driven by Playwright in Debian's Chromium (installed if missing).
test-browser: setup
	bash scripts/install_browser.sh $(VENV)
	EVIDENCE_BROWSER_TEST=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/browser

test-lib: setup
	$(BIN)/python -m pytest -q tests

test-notebooks: setup
	$(BIN)/python -m pytest -q $(NBVAL) notebooks

execute: setup
	$(BIN)/python scripts/execute_notebooks.py $(NB)

figures: setup
	$(BIN)/python -m evidence_lib figures --out figures

bench: setup
	$(BIN)/python bench/run_all.py

article: setup
	$(BIN)/python -m evidence_lib article

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
