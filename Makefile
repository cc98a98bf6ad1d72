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

# mypy cannot follow setuptools' package-dir mapping (memoryd.daemon lives in
# daemon/): tools/typecheck.py hands it every file with its module name.
typecheck: $(STAMP)
	$(BIN)/python tools/typecheck.py

pytest: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python bench/index_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
