# The two ways in: `make demo` and `make test`. Both create ./.venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(BIN)/kb-mcp index --kb examples/kb
	$(BIN)/python examples/demo.py

test: $(DEV_STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/pytest

format: $(DEV_STAMP)
	$(BIN)/ruff check --fix src tests benchmarks examples
	$(BIN)/ruff format src tests benchmarks examples

clean:
	rm -rf $(VENV) examples/kb/.kb-mcp build dist src/*.egg-info
