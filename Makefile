# Two commands do everything on a fresh machine:
#   make run   - create .venv, install the app, start it on http://localhost:8501 (embedded model, offline)
#                (ui.launch = `streamlit run app.py` that loads the default model while the server boots)
#   make test  - the same venv plus test tools and Debian Chromium, then ruff, and the test tiers in order:
#                unit (tiny models, < 1 min), integration (embedded model, subprocesses, training), AppTest, browser
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
CHROMIUM ?= /usr/bin/chromium

.PHONY: run test lint test-unit test-integration test-app test-e2e bench setup chromium clean

$(VENV)/.app-installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	@echo "Checking the embedded model offline and caching the opening heatmaps (python -m vizcore prepare)..."
	$(PY) -m vizcore prepare >/dev/null
	touch $@

$(VENV)/.test-installed: requirements-test.txt $(VENV)/.app-installed
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-test.txt
	touch $@

setup: $(VENV)/.app-installed

run: $(VENV)/.app-installed
	$(PY) -m ui.launch --server.port $(PORT) --server.address localhost

# Playwright drives the Debian browser; its own browser download is never used (it cannot work offline).
chromium:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian chromium for the browser tests..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; \
	else \
		echo "Chromium is missing: run 'sudo apt-get install chromium' (or set CHROMIUM=/path/to/chrome), then 'make test' again."; exit 1; \
	fi

test: $(VENV)/.test-installed chromium
	$(PY) -m ruff check .
	$(PY) -m pytest tests/unit
	$(PY) -m pytest tests/integration
	$(PY) -m pytest tests/app
	$(PY) -m pytest tests/e2e

lint: $(VENV)/.test-installed
	$(PY) -m ruff check .

test-unit: $(VENV)/.test-installed
	$(PY) -m pytest tests/unit

test-integration: $(VENV)/.test-installed
	$(PY) -m pytest tests/integration

test-app: $(VENV)/.test-installed
	$(PY) -m pytest tests/app

test-e2e: $(VENV)/.test-installed chromium
	$(PY) -m pytest tests/e2e

bench: $(VENV)/.test-installed chromium
	for script in attention startup attention_page renderer_screenshots fill_mask finetune bench_embed corpus; do $(PY) -m bench.$$script || exit 1; done

clean:
	rm -rf $(VENV) artifacts .pytest_cache
