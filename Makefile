# Two commands: `make charts` (the main job) and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup charts check-tables test test-fast test-lab bench lint notebooks lab explore clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,libraries]'
	touch $(STAMP)

setup: $(STAMP)

charts: $(STAMP)  ## regenerate every chart and table under data/ (embedded fakeredis, virtual clock)
	$(PY) -m simulator charts --full

check-tables: $(STAMP)  ## regenerate every table into a temporary folder and compare with data/, value for value
	@tmp=$$(mktemp -d) && cp data/memory_*.csv "$$tmp"/ && $(PY) -m simulator charts --full --out-dir "$$tmp" >/dev/null && \
	$(PY) tools/compare_tables.py data "$$tmp"; status=$$?; rm -rf "$$tmp"; exit $$status

test: $(STAMP)  ## the whole test suite: property, clock, CLI, real-server, browser and notebook tests (what .ci/run runs); the long files first, an idle worker takes tests from the other (worksteal)
	$(PY) -m pytest -n 2 --dist worksteal

# The markers are declared in pyproject.toml; a test marked none of them is in the fast run.
FAST := not slow and not server and not browser and not notebook

test-fast: $(STAMP)  ## everything not marked slow, server, browser or notebook (1,414 tests, about a minute at idle; CONTRIBUTING.md, Tests)
	$(PY) -m pytest -n 2 --dist worksteal -m "$(FAST)"

test-lab: $(STAMP)  ## every notebook Run All in JupyterLab at 1280x800, read top to bottom in Chromium (about 20 min)
	LAB_DRIVE=1 $(PY) -m pytest -p no:cacheprovider tests/notebooks/test_lab_run_all.py tests/notebooks/test_lab_lessons.py

bench: $(STAMP)
	$(PY) -m simulator bench

lint: $(STAMP)
	$(PY) -m ruff check simulator tests
	$(PY) -m ruff format --check simulator tests
	$(PY) -m mypy

notebooks: $(STAMP)  ## rebuild each notebooks/*.ipynb from its paired # %% source in notebooks/src/ (no outputs)
	for source in notebooks/src/*.py; do \
		$(PY) -m jupytext --to ipynb --update -o "notebooks/$$(basename "$$source" .py).ipynb" "$$source" || exit 1; \
	done

# Root may run JupyterLab only when it says so: --allow-root is added when make runs as uid 0.
ALLOW_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
LAB_PORT ?= 8888
EXPLORE_PORT ?= 8866

# JupyterLab 4 reads its user settings from JUPYTERLAB_SETTINGS_DIR: the project's lab-settings/
# turns the news toast and the update check off (a setting changed in Lab is saved there too).
lab: $(STAMP)  ## JupyterLab on 127.0.0.1 in notebooks/ (no news or update toasts); prints the URL to open (with its token)
	JUPYTERLAB_SETTINGS_DIR="$(CURDIR)/lab-settings" $(PY) -m jupyter lab --ip 127.0.0.1 --port $(LAB_PORT) --no-browser --notebook-dir notebooks $(ALLOW_ROOT) \
		--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate

explore: $(STAMP)  ## the explorer alone as a web page (Voila: no code shown) on 127.0.0.1; a closed page's kernel ends after 2 min
	$(PY) -m simulator.explore.serve --port=$(EXPLORE_PORT)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
