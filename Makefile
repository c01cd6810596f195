# The series' two commands are `make lab` and `make test`; everything else is a helper.
# The virtual environment is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider \
          --nbval-kernel-startup-timeout=180 --nbval-cell-timeout=600
LAB_ARGS ?=
# Jupyter refuses to start as root (Docker, Codespaces, CI images) unless told; a normal user never needs it.
LAB_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)
# Strict nbval with the notebooks' evidence stores in a fresh temporary EVIDENCE_WORKSPACE (see
# evidence_lib/workspace.py), removed afterwards, so two runs at once never share or wipe each other's files.
# Without -q: pytest names each test file (each notebook) as it starts, so a long run shows what it is doing.
RUN_NBVAL = ws=$$(mktemp -d) && trap 'rm -rf "$$ws"' EXIT && trap 'exit 130' INT TERM && \
            EVIDENCE_WORKSPACE="$$ws" $(BIN)/python -m pytest $(NBVAL) notebooks

.PHONY: bench-eval bench-offload setup venv fonts lab lint test test-browser test-lib test-notebooks check-notebooks execute figures bench article clean help \
        postgres-up postgres-down test-store bench-store site test-site site-font lab-font mcp-clients mcp-conformance bench-mcp

help:
	@echo "make lab            open JupyterLab on notebooks/ (sets everything up first)"
	@echo "make test           run every test: lint, library, environment, notebooks (strict nbval); reports each part"
	@echo "make lint           mypy on the package and ruff on the code (MYPY_PATHS=..., RUFF_PATHS=... for a subset)"
	@echo "make check-notebooks check how the notebooks on disk would be committed (execution counts, outputs): before a commit, CI"
	@echo "make test-browser   JupyterLab in headless Chromium: move a live-explorer slider; Chinese drawn by the project's font without system CJK fonts"
	@echo "make figures        regenerate the article figures into figures/"
	@echo "make execute        re-execute notebooks in place in a fresh kernel (NB=path/to/one.ipynb for one)"
	@echo "make bench          run the benchmarks under bench/ (about 55 min: the store's 1 GB run about 50, the rest 2; JSON in bench/results/)"
	@echo "make article        print the article's result table as JSON"
	@echo "make postgres-up    start a local PostgreSQL for the store tests (then export EVIDENCE_PG_DSN=...)"
	@echo "make test-store     the store's contract tests on memory, SQLite and PostgreSQL (starts/stops the server)"
	@echo "make bench-eval     the reading flows beside Deep Agents on every QA set, both choosers (SETS=\"kernel_en kernel_zh\" for some)"
	@echo "make bench-offload  large tool results: no offload vs Deep Agents vs Strands vs the evidence middleware (notebook 12)"
	@echo "make bench-store    the store's scale benchmark (bench/results/store.json and .png; QUICK=1 for a smoke run)"
	@echo "make mcp-clients    install the Node MCP clients (Inspector CLI, conformance suite) into build/mcp-node/ for their tests"
	@echo "make bench-mcp      our MCP server beside the filesystem and fetch reference servers (notebook 13)"
	@echo "make mcp-conformance run the MCP conformance suite against the HTTP server (bench/results/mcp_conformance.json)"
	@echo "make site           build the static website into build/site/ from the executed notebooks (BASE_URL=/<repo>)"
	@echo "make test-site      build the website, then check it in headless Chromium without system CJK fonts: pages,"
	@echo "                    links, images, Chinese glyphs, clipping at 1280 and 390 px, search (screenshots in build/screenshots/)"
	@echo "make site-font      regenerate the website's Chinese web font (site/_static/fonts/) from the built pages"
	@echo "make lab-font       regenerate JupyterLab's Chinese font (lab/custom/: GB2312 and the site font's characters)"

# scripts/setup_venv.py: the venv, then uv (from PyPI, into the venv) installs the package with its extras, using
# pip's configuration (indexes, find-links, constraints, CA bundle); pip takes over if uv cannot (INSTALLER=pip
# chooses pip). A line at least every 10 s, so the first run never looks stuck.
EXTRAS := notebook,test,lint,browser,bench,agents,course,mcp
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	 || { echo "setup: needs Python >= 3.11 as '$(PYTHON)' (found: $$($(PYTHON) -V 2>&1)); try make PYTHON=python3.12"; exit 1; }
	@$(PYTHON) scripts/setup_venv.py --venv $(VENV) -e '.[$(EXTRAS)]' \
	   --describe "evidence-lib with its $(EXTRAS) extras (JupyterLab, pytest, Playwright, LangChain, MCP)"
	@touch $(STAMP)

# Two runs started at once (two terminals, or `make test` beside `make lab`) take turns to install: flock(1)
# serialises them, and the second finds the stamp fresh and installs nothing.
setup:
	@if command -v flock >/dev/null 2>&1; then flock $(VENV).lock $(MAKE) --no-print-directory venv; \
	 else $(MAKE) --no-print-directory venv; fi
	@echo "setup: ready ($(VENV), $$($(BIN)/python -V); reused until pyproject.toml changes)"

venv: $(STAMP)
	@:

# The Chinese figures use the Noto Sans CJK SC subset shipped in evidence_lib/course/fonts/, never a system
# font: nothing to install. This only says which font is used and checks it covers every label.
fonts: setup
	@$(BIN)/python -c "from evidence_lib.course.figures import cjk_family, cjk_font_path; print('CJK font:', cjk_family(), '(' + str(cjk_font_path()) + ')')"
	@$(BIN)/python scripts/subset_cjk_font.py --check

# Chinese without a system CJK font: JupyterLab loads custom/custom.css from the Jupyter config folder when told
# (--LabApp.custom_css=True); lab/config.py writes one into build/lab-config with the project's own font (lab/custom/:
# GB2312's 6,763 hanzi, CJK punctuation, fullwidth forms and the corpus). The learner's own config folder stays on
# JUPYTER_CONFIG_PATH and keeps their settings and workspaces (`jupyter --config-dir` is asked before the switch).
LAB_CONFIG := build/lab-config
lab: setup
	@$(BIN)/python lab/config.py $(LAB_CONFIG) >/dev/null
	@echo "lab: starting JupyterLab on notebooks/ with the project's Chinese font ($(LAB_CONFIG)/custom; Ctrl-C to stop)"
	@user=$$($(BIN)/jupyter --config-dir) && \
	 JUPYTER_CONFIG_DIR="$(abspath $(LAB_CONFIG))" JUPYTER_CONFIG_PATH="$$user$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
	 JUPYTERLAB_SETTINGS_DIR="$${JUPYTERLAB_SETTINGS_DIR:-$$user/lab/user-settings}" \
	 JUPYTERLAB_WORKSPACES_DIR="$${JUPYTERLAB_WORKSPACES_DIR:-$$user/lab/workspaces}" \
	 $(BIN)/jupyter lab --ServerApp.root_dir=notebooks --LabApp.custom_css=True $(LAB_ROOT) $(LAB_ARGS)

# The type checker and the linter, configured in pyproject.toml ([tool.mypy], [tool.ruff]): both run, and the last
# line reports both. A subset: `make lint MYPY_PATHS=evidence_lib/store RUFF_PATHS=evidence_lib/store`, or the
# commands themselves (`.venv/bin/mypy evidence_lib/store`, `.venv/bin/ruff check evidence_lib/store`).
MYPY_PATHS ?= evidence_lib
RUFF_PATHS ?= evidence_lib tests scripts bench lab
lint: setup
	@echo "lint: mypy $(MYPY_PATHS); ruff check $(RUFF_PATHS)"
	@$(BIN)/mypy $(MYPY_PATHS); mypy=$$?; \
	 $(BIN)/ruff check --output-format concise $(RUFF_PATHS); ruff=$$?; \
	 verdict() { if [ "$$1" = 0 ]; then echo passed; else echo "FAILED (exit $$1: the lines above name each error)"; fi; }; \
	 echo "lint: mypy $$(verdict $$mypy); ruff $$(verdict $$ruff)"; \
	 [ "$$mypy" = 0 ] && [ "$$ruff" = 0 ]

# One line per test file as it runs (collecting the library tests takes about 10 s first); the library run ends with
# a line saying whether PostgreSQL was tested (tests/conftest.py): `make test-store` or EVIDENCE_PG_DSN tests it.
# Lint, the library tests and the notebooks each run whatever the one before gave; the last line reports all three,
# and make test fails if any did. A notebook the learner ran in the lab is tested as saved (nbval); the hygiene
# checks read the committed versions (tests/test_notebooks.py), so re-running a cell never fails them. Ctrl-C stops
# the whole run.
LIB_TESTS := $(BIN)/python -m pytest tests
LINT := $(MAKE) --no-print-directory lint
test: setup
	@echo "test 1/3: lint (mypy and ruff, as make lint)"
	@trap 'exit 130' INT TERM; \
	 $(LINT); lint=$$?; \
	 echo "test 2/3: library tests (pytest tests/: library, CLI, environment, notebook hygiene, exercises; one line per file)"; \
	 $(LIB_TESTS); lib=$$?; \
	 echo "test 3/3: notebooks (strict nbval, one line per notebook, in a temporary EVIDENCE_WORKSPACE)"; \
	 ( $(RUN_NBVAL) ); nb=$$?; \
	 verdict() { if [ "$$1" = 0 ]; then echo passed; else echo "FAILED (pytest exit $$1: its summary above lists them)"; fi; }; \
	 if [ "$$lint" = 0 ]; then linted=passed; else linted="FAILED (its lint: line above says which)"; fi; \
	 echo "test: lint $$linted; library tests $$(verdict $$lib); notebooks $$(verdict $$nb)"; \
	 changed=$$(git status --porcelain -- notebooks 2>/dev/null | sed -n 's/^.. \(.*\.ipynb\)$$/\1/p'); \
	 if [ "$$nb" != 0 ] && [ -n "$$changed" ]; then \
	   echo "test: nbval tests the notebooks as saved, and these differ from the committed copies (your runs in the lab):"; \
	   echo "$$changed" | sed 's/^/        /'; \
	   echo "      \`git checkout -- <path>\` restores one, dropping your changes (\`git stash\` sets them all aside instead)"; \
	 fi; \
	 [ "$$lint" = 0 ] && [ "$$lib" = 0 ] && [ "$$nb" = 0 ]

# How the notebooks are committed (execution counts 1 to n, the kernelspec, no errors or machine paths in outputs),
# checked on the files on disk: before a commit, and in CI (.ci/run). `make test` checks the committed versions
# instead, so a learner's runs in the lab never fail it. Each failure names its fix (make execute NB=..., git checkout).
check-notebooks: setup
	EVIDENCE_NOTEBOOK_CHECKS=worktree $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_notebooks.py

# A real browser: JupyterLab on loopback driven by Playwright in Debian's Chromium (installed if missing): the live
# explorers react to the keyboard, Chinese (the corpus's and a learner's own) is drawn by the project's font as
# `make lab` sets it up, and a cell run twice and saved in the lab does not fail `make test`'s checks.
test-browser: setup
	bash scripts/install_browser.sh $(VENV)
	EVIDENCE_BROWSER_TEST=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/browser

test-lib: setup
	@echo "test: library tests (pytest tests/)"
	$(LIB_TESTS)

test-notebooks: setup
	@echo "test: notebooks (strict nbval, in a temporary EVIDENCE_WORKSPACE)"
	@$(RUN_NBVAL)

execute: setup
	$(BIN)/python scripts/execute_notebooks.py $(NB)

figures: setup
	$(BIN)/python -m evidence_lib figures --out figures

bench: setup
	$(BIN)/python bench/run_all.py
	@$(MAKE) --no-print-directory bench-offload
	@$(MAKE) --no-print-directory bench-store

article: setup
	$(BIN)/python -m evidence_lib article

clean:
	rm -rf $(VENV) $(VENV).lock .pytest_cache .hypothesis build *.egg-info

# The production store (notebook 11). PostgreSQL runs as its own system user on a free loopback port.
postgres-up:
	@bash scripts/postgres.sh up >/dev/null && echo "export EVIDENCE_PG_DSN=$$(bash scripts/postgres.sh dsn)"

postgres-down:
	@bash scripts/postgres.sh down

test-store: setup
	@dsn=$$(bash scripts/postgres.sh up | tail -1) && trap 'bash scripts/postgres.sh down' EXIT && \
	  EVIDENCE_PG_DSN="$$dsn" $(BIN)/python -m pytest -q tests/store

# The reading flows side by side with LangChain Deep Agents (a benchmark-only extra in its own venv). The venv also gets
# the strands extra (Strands Agents' ContextOffloader, the offload benchmark's other peer: bench/offload_peers.py).
BENCH_VENV ?= .venv-bench
bench-eval:
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	@echo "bench-eval: installing the series with its deepagents and strands extras into $(BENCH_VENV)"
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[deepagents,strands]'
	@command -v rg >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "bench-eval: installing Debian's ripgrep (Deep Agents' grep at its strongest)"; \
	  apt-get install -y -qq ripgrep >/dev/null || { apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null; }; \
	  else echo "bench-eval: no ripgrep (rg) on PATH: Deep Agents' grep runs its Python fallback, and the JSON says so"; fi; }
	$(BENCH_VENV)/bin/python bench/eval_compare.py $(SETS)

# Large tool results four ways (no offload, Deep Agents' eviction, Strands' ContextOffloader, EvidenceMiddleware):
# bench/results/offload.json and offload.png, read by notebook 12. About a minute.
bench-offload:
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	@$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[course,deepagents,strands,pydantic-ai,haystack]'
	$(BENCH_VENV)/bin/python bench/bench_offload.py

# PostgreSQL: $$EVIDENCE_PG_DSN if set, else the server scripts/postgres.sh runs (started here and stopped
# afterwards if it was not already up); without one, the scan and SQLite are measured and the JSON says so.
bench-store: setup
	@if [ -n "$$EVIDENCE_PG_DSN" ]; then dsn="$$EVIDENCE_PG_DSN"; \
	elif dsn=$$(bash scripts/postgres.sh dsn 2>/dev/null); then :; \
	elif dsn=$$(bash scripts/postgres.sh up | tail -1); then trap 'bash scripts/postgres.sh down' EXIT; \
	else dsn=; echo "bench-store: no PostgreSQL server (see above): measuring the scan and SQLite only"; fi; \
	EVIDENCE_PG_DSN="$$dsn" $(BIN)/python bench/bench_store.py $(if $(QUICK),--quick) $(BENCH_ARGS)

# The static website (scripts/build_site.py, site/): Sphinx + MyST-NB from site/requirements.txt (exact versions,
# installed into the venv once, again when that file changes), rendering the committed outputs without running
# anything. BASE_URL=/<repo> for a project site sets the canonical URLs; the links are relative.
# EVIDENCE_SITE_REPOSITORY=owner/name turns on the Binder, Colab and GitHub links (none without it: pyproject's
# repository is a placeholder until a build names it; the build fails if a page still names the placeholder).
SITE_STAMP := $(VENV)/.site-installed
$(SITE_STAMP): site/requirements.txt $(STAMP)
	@echo "site: installing the website's build tools (site/requirements.txt) into $(VENV)"
	@$(BIN)/python scripts/setup_venv.py --venv $(VENV) -r site/requirements.txt --label site \
	   --describe "the website's build tools"
	@touch $(SITE_STAMP)

site: $(SITE_STAMP)
	$(BIN)/python scripts/build_site.py

# No system CJK font is installed or used: the site ships its own (site/_static/fonts/), and the test runs Chromium
# with a fontconfig that leaves out every font with Chinese glyphs, to prove it.
test-site: site
	bash scripts/install_browser.sh $(VENV)
	EVIDENCE_SITE_TEST=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/browser/test_site.py tests/browser/test_site_drawers.py \
	  tests/browser/test_site_review.py

# The lab's font (lab/custom/EvidenceCJKSansSCLab-Regular.woff2): GB2312 and the site font's characters, from Debian's
# fonts-noto-cjk (fetched into build/font-source/ if not installed); the same bytes on every run.
lab-font: setup
	$(BIN)/python scripts/subset_lab_font.py

# After a page gains a Chinese character: the subset of every CJK character the built pages show (plus those it
# had, plus headroom), from Debian's fonts-noto-cjk (fetched into build/font-source/ if not installed); then the
# lab's font, which holds the site font's characters too.
site-font: site
	$(BIN)/python scripts/subset_site_font.py
	$(BIN)/python scripts/build_site.py
	$(BIN)/python scripts/subset_lab_font.py

# The MCP server's Node clients (issue 27): without them (no Node/npm) their tests skip and say so.
mcp-clients:
	bash scripts/mcp_clients.sh

mcp-conformance: setup mcp-clients
	$(BIN)/python scripts/mcp_conformance.py

# Our MCP server beside the filesystem and fetch reference servers (bench/results/mcp_servers.json, notebook 13):
# the peers are installed into build/ from the npm registry and PyPI, pinned.
bench-mcp: setup
	npm install --prefix build/mcp-node/peers --no-audit --no-fund --loglevel=error @modelcontextprotocol/server-filesystem@2026.8.31
	@test -x build/mcp-fetch-venv/bin/python || $(PYTHON) -m venv build/mcp-fetch-venv
	build/mcp-fetch-venv/bin/python -m pip install --quiet --disable-pip-version-check mcp-server-fetch==2026.10.24
	$(BIN)/python bench/bench_mcp_servers.py
