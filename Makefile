# Two entry points: `make serve` and `make test`. Both create .venv on first use.
# `make e2e` drives the real Claude Code CLI (pinned, from the npm registry,
# cached in .cache/) offline against a local fake API; CI runs it after `test`.
# `serve` installs memoryd with its runtime dependencies only; `test` (and lint,
# typecheck, bench) add the dev tools. Each install is redone when pyproject.toml
# changes (the stamp names carry its checksum) and prints one line saying so.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cksum < pyproject.toml | cut -d' ' -f1)
RUNTIME := $(VENV)/.runtime-$(SUM)
DEV := $(VENV)/.dev-$(SUM)
PIP := $(BIN)/pip install --quiet --disable-pip-version-check

.PHONY: serve test e2e lint typecheck pytest bench wheel-tour clean

$(BIN)/python:
	@echo "memoryd: creating the virtualenv $(VENV)"
	@$(PYTHON) -m venv $(VENV)

$(RUNTIME): pyproject.toml | $(BIN)/python
	@echo "memoryd: installing memoryd and its runtime dependencies into $(VENV)"
	@echo "memoryd: (the first time this takes 20-90 s, depending on the network; pip is quiet until it is done)"
	@$(PIP) -e .
	@rm -f $(VENV)/.runtime-*
	@touch $@

$(DEV): pyproject.toml | $(BIN)/python
	@echo "memoryd: installing memoryd with the dev tools (ruff, mypy, pytest, mcp) into $(VENV)"
	@$(PIP) -e '.[dev]'
	@rm -f $(VENV)/.dev-* $(VENV)/.runtime-*
	@touch $@ $(RUNTIME)

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

pytest: $(DEV)
	$(BIN)/pytest -q

test: lint typecheck pytest

e2e: $(DEV)
	@echo "memoryd: end-to-end tests with the real Claude Code CLI (installed into .cache/ on first use)"
	@MEMORYD_E2E=1 $(BIN)/pytest -q tests/e2e

# Installing without cloning: build the wheel, install it with its [mcp] extra
# into a clean virtualenv outside the repository, and run the README tour with
# it (tests/test_wheel_install.py; minutes, so not part of `make test`).
wheel-tour: $(DEV)
	$(BIN)/pytest -q -m wheel tests/test_wheel_install.py

bench: $(DEV)
	$(BIN)/python bench/index_bench.py

clean:
	rm -rf $(VENV) build *.egg-info .cache
