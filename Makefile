# MMW — the two commands: `make run` and `make test`. Everything else is set-up they call.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export MMW_DATA_DIR ?= $(CURDIR)/var
export MMW_HOST ?= 127.0.0.1
export MMW_PORT ?= 8000

.PHONY: run test test-fast screenshots setup venv lint typecheck pytest fuzz bench bench-full bench-goals bench-scaleout stop clean

$(VENV)/.installed: requirements.txt requirements-dev.txt agent/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e ./agent  # the local agent (its deps are pinned above)
	touch $@

venv: $(VENV)/.installed

$(MMW_DATA_DIR)/secret_key:
	mkdir -p $(MMW_DATA_DIR)
	umask 077 && $(PYTHON) -c "import secrets; print(secrets.token_urlsafe(50))" > $@

setup: venv $(MMW_DATA_DIR)/secret_key
	$(PY) manage.py migrate --noinput
	$(PY) manage.py i18n compile  # locale/*.po -> .mo (git-ignored; pure Python, docs/i18n.md)

run: setup
	$(PY) manage.py serve

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	MMW_SECRET_KEY=typecheck MMW_DATA_DIR=$(CURDIR)/var/test $(VENV)/bin/mypy .

# Two passes: the tests that start no server, process or browser spread over every core (as in
# test-fast, each xdist worker on its own test database and its own Redis database,
# mmw/settings/test.py), then the "slow" ones on at most 4 workers, a test file to a worker (its
# module-scoped Celery worker or server stays with it; servers take free ports, each worker has
# its own browser). Measured 2026-12-06 on 2 cores: the slow pass 6.8-7.8 min on two workers,
# against 11.5 min one at a time on the same quiet machine (27 min in CI the day before). Both
# passes run, and both must pass.
pytest: venv
	bash scripts/ensure_chromium.sh
	bash scripts/ensure_conformance.sh
	bash scripts/ensure_haproxy.sh  # the shipped deploy/haproxy.cfg is tested behind a real haproxy
	$(PY) -c "from mmw import catalogues; catalogues.compile_catalogues()"
	# The peers' libraries (minutes of downloads, little CPU) install while the fast pass runs;
	# their test waits for the install (scripts/ensure_peers.sh takes a lock) and fails with it.
	mkdir -p var/peers && (bash scripts/ensure_peers.sh > var/peers/install.log 2>&1 &)
	status=0; \
	$(VENV)/bin/python -m pytest -m "not slow" -n auto --dist worksteal || status=$$?; \
	$(VENV)/bin/python -m pytest -m slow -n auto --maxprocesses 4 --dist loadfile || status=$$?; \
	exit $$status

test: lint typecheck pytest

# The inner loop: lint and the tests that start no server, process or browser (not "slow";
# tests/conftest.py marks every test using such a fixture), on a kept test database, spread over
# every core (pytest-xdist; each worker has its own test database; "worksteal" hands an idle
# worker the other's queued tests). 3,577 tests in 2.0-2.5 min on 2 cores on a quiet machine
# (2026-12-06); the time grows about with the load average (4-5 min at load 4-5). Bytecode is
# cached even where the shell sets PYTHONDONTWRITEBYTECODE: otherwise pytest re-rewrites the asserts
# of every test module and of every plugin's package (hypothesis, faker, schemathesis) on each run,
# about 4 s of CPU (__pycache__ is git-ignored).
test-fast: venv
	$(VENV)/bin/ruff check .
	$(PY) -c "from mmw import catalogues; catalogues.compile_catalogues()"
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/python -m pytest -m "not slow" -q -x -p no:warnings --reuse-db -n auto --dist worksteal

# Refresh the dashboard screenshots in docs/ (tests otherwise write them under var/).
screenshots: venv
	MMW_SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(VENV)/bin/python -m pytest tests/e2e -q

# Schemathesis against the served OpenAPI schema on a live server, >= 10,000 cases (520 positive
# and 520 negative per operation, fixed seed), then the routes outside the schema (import, OAuth,
# webhook registration: 600 cases each, tests/memories/fuzz_surfaces.py); prints cases, 5xx and
# failures by class.
fuzz: venv
	MMW_FUZZ_EXAMPLES=$${MMW_FUZZ_EXAMPLES:-520} MMW_FUZZ_SURFACE_EXAMPLES=$${MMW_FUZZ_SURFACE_EXAMPLES:-600} $(VENV)/bin/python -m pytest tests/memories/test_schemathesis.py -q -s -p no:cacheprovider

bench: venv
	$(PY) bench/run.py --quick

bench-full: venv
	$(PY) bench/run.py

# Issue #19's goals at 100k records, each beside /healthz measured in the same run (BENCHMARKS.md).
bench-goals: venv
	MMW_DATA_DIR=$(CURDIR)/var/bench $(PY) bench/goals.py

# Two web processes, two Celery workers and beat behind Debian's HAProxy (deploy/haproxy.cfg);
# correctness under load and one web process killed (docs/deploy.md).
bench-scaleout: venv
	bash scripts/ensure_haproxy.sh
	$(PY) bench/scaleout.py

stop:
	$(PY) manage.py pg stop

clean: stop
	rm -rf $(VENV) var
