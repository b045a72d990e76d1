# `make run` and `make test` set everything up on a fresh Debian 12 machine:
# system packages, the virtual environment and the package with its dev extras.
# Every step is guarded by a stamp file, so a second run only does what changed.

# Debian's python3 when there is one: an optimised build with libpython linked in. A default pyenv build of
# the same 3.11 runs the server about a fifth slower (README, "What limits the session load").
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
VENV := .venv
BIN := $(VENV)/bin
STAMPS := $(VENV)/.stamps

.PHONY: run test image-test lint setup system-deps clean FORCE

run: setup
	$(BIN)/zmtplab serve

# pytest on three pytest-xdist workers for two cores (TEST_WORKERS): a module's tests on one worker, the Spark
# modules together, the longest first (tests/conftest.py). The suite is CPU-bound on two cores (README, "Tests and
# benchmarks"): a third worker fills the gaps of real-time tests, a fourth gains nothing.
# Bytecode is cached even where the environment says not to: the suite starts
# hundreds of Python processes (servers, their dissection workers, the CLI, Spark's Python workers), and each
# would compile the package again (a tenth of the CPU of the modules that start the most).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n * 3 / 2 > 1 ? n * 3 / 2 : 1 )))
test: setup $(STAMPS)/npm $(STAMPS)/spark-classes
	$(BIN)/ruff check backend tests benchmarks captures docs
	node --test tests/frontend/ tests/lessons/
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# The container image, built with docker or podman (podman and, where no registry serves Debian's base image,
# debootstrap are installed from Debian when needed) and checked as users run it: scripts/image-test.sh.
image-test: setup
	PYTHON=$(BIN)/python bash scripts/image-test.sh

lint: setup
	$(BIN)/ruff check backend tests benchmarks captures docs

setup: $(STAMPS)/system $(STAMPS)/python

system-deps: $(STAMPS)/system

$(STAMPS)/system: scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/python: pyproject.toml $(VENV)/.python
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@rm -rf backend/zmtplab.egg-info  # (left by the setuptools build before hatchling's: a second, stale metadata)
	@mkdir -p $(STAMPS) && touch $@

# Test-only tools from the npm registry (axe-core for the browser tests' accessibility checks), as locked.
$(STAMPS)/npm: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	@mkdir -p $(STAMPS) && touch $@

# The class archive every Spark JVM of the tests maps instead of loading Spark's classes again (tests/spark_cds.py):
# made anew when the environment changes, since it holds the jars' sizes and times.
$(STAMPS)/spark-classes: $(STAMPS)/system $(STAMPS)/python tests/spark_cds.py
	PYTHONDONTWRITEBYTECODE= $(BIN)/python tests/spark_cds.py
	@touch $@

# Which interpreter the environment was made with: another one (PYTHON changed) makes it again.
$(VENV)/.python: FORCE
	@if [ "$$(cat $@ 2>/dev/null)" != "$(PYTHON)" ]; then rm -rf $(VENV) && mkdir -p $(VENV) && echo "$(PYTHON)" > $@; fi

FORCE:

clean:
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache
