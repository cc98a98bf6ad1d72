# Two entry points: `make serve` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: serve test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/memoryd serve --default-roots --root examples/memory

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy -p memoryd
	$(BIN)/mypy tests bench

pytest: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python bench/index_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
