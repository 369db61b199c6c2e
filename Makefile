# Two commands: `make charts` (the main job) and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup charts check-tables test bench lint notebooks clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

charts: $(STAMP)  ## regenerate every chart and table under data/ (embedded fakeredis, virtual clock)
	$(PY) -m simulator charts --full

check-tables: $(STAMP)  ## regenerate every table into a temporary folder and compare with data/, value for value
	@tmp=$$(mktemp -d) && cp data/memory_*.csv "$$tmp"/ && $(PY) -m simulator charts --full --out-dir "$$tmp" >/dev/null && \
	$(PY) tools/compare_tables.py data "$$tmp"; status=$$?; rm -rf "$$tmp"; exit $$status

test: $(STAMP)  ## the whole test suite: property, clock, CLI, real-server and notebook tests
	$(PY) -m pytest -n 2

bench: $(STAMP)
	$(PY) -m simulator bench

lint: $(STAMP)
	$(PY) -m ruff check simulator tests
	$(PY) -m ruff format --check simulator tests
	$(PY) -m mypy

notebooks: $(STAMP)  ## rebuild each .ipynb from its paired # %% source (no outputs)
	$(PY) -m jupytext --to ipynb --update notebooks/*.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
