# `make run` and `make test` set everything up on a fresh Debian 12 machine:
# system packages, the virtual environment and the package with its dev extras.
# Every step is guarded by a stamp file, so a second run only does what changed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := $(VENV)/.stamps

.PHONY: run test lint setup system-deps clean

run: setup
	$(BIN)/zmtplab serve

test: setup
	$(BIN)/ruff check backend tests benchmarks captures docs
	node --test tests/frontend/
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check backend tests benchmarks captures docs

setup: $(STAMPS)/system $(STAMPS)/python

system-deps: $(STAMPS)/system

$(STAMPS)/system: scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/python: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@mkdir -p $(STAMPS) && touch $@

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
