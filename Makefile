# Three entry points: `make serve`, `make check` and `make test`. Each creates
# .venv on first use. `check` is the fast tier to run while working: lint, mypy
# and the unit tests (those that start no process and no server, as
# tests/conftest.py marks them `unit`). `test` is everything: lint, mypy and
# every test.
# `make e2e` drives the real Claude Code CLI (pinned and newest) and Codex CLI
# (pinned), from the npm registry and cached in .cache/, offline against local
# fake APIs; CI runs it after `test`.
# `serve` installs memoryd with its runtime dependencies only; `test` (and lint,
# typecheck, bench) add the dev tools. Each install is redone when pyproject.toml
# changes (the stamp names carry its checksum) and prints one line saying so.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cksum < pyproject.toml | cut -d' ' -f1)
RUNTIME := $(VENV)/.runtime-$(SUM)
DEV := $(VENV)/.dev-$(SUM)

.PHONY: serve check test e2e lint typecheck pytest bench wheel-tour clean

# tools/venv.sh does the set-up under one lock, so both may start at once.
$(RUNTIME): pyproject.toml
	@PYTHON=$(PYTHON) sh tools/venv.sh runtime $@ $(VENV)

$(DEV): pyproject.toml
	@PYTHON=$(PYTHON) sh tools/venv.sh dev $@ $(VENV)

serve: $(RUNTIME)
	@echo "memoryd: starting the daemon on the default roots and examples/memory (Ctrl-C stops it)"
	@$(BIN)/memoryd serve --default-roots --root examples/memory

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy cannot follow setuptools' package-dir mapping (memoryd.daemon lives in
# daemon/): tools/typecheck.py hands it every file with its module name.
typecheck: $(DEV)
	$(BIN)/python tools/typecheck.py

# Three workers (the tests mostly wait on daemons and sockets), then the
# tests that take a machine-wide resource (tests/serial/), alone.
pytest: $(DEV)
	$(BIN)/pytest -q -n 3 --ignore=tests/serial
	$(BIN)/pytest -q tests/serial

test: lint typecheck pytest

# mypy's cache (.mypy_cache/mapped) makes a repeat run take seconds. The unit
# tests wait on nothing, and each worker imports every test module: one
# worker per core is faster here than three.
check: lint typecheck
	$(BIN)/pytest -q -n 2 -m unit

e2e: $(DEV)
	@echo "memoryd: end-to-end tests with the real Claude Code and Codex CLIs (installed into .cache/ on first use)"
	@MEMORYD_E2E=1 $(BIN)/pytest -q tests/e2e

# Installing without cloning: build the wheel, install it with its [mcp] extra
# into a clean virtualenv outside the repository, and run the README tour with
# it (tests/test_wheel_install.py; minutes, so not part of `make test`).
wheel-tour: $(DEV)
	$(BIN)/pytest -q -m wheel tests/test_wheel_install.py

bench: $(DEV)
	$(BIN)/python bench/index_bench.py

clean:
	rm -rf $(VENV) $(VENV).lock build *.egg-info .cache
