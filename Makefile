# The two set-up commands of the README. Both need nothing but Python 3.11 and the package registry.
PYTHON ?= python3.11
VENV ?= .venv
BIN = $(VENV)/bin
HOST ?= 127.0.0.1:8000

.PHONY: demo test lint install browsers serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# The stamp makes `make test` skip the install when pyproject.toml has not changed.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# The web server and a Celery worker beside it on the embedded broker (no Redis needed); Ctrl-C stops both.
demo: install
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py run_demo $(HOST)

# In parallel: one pytest-xdist worker per core (at most TEST_WORKERS), each with its own test database, Redis database
# and data folder (tests/parallel.py); a module's tests stay in one worker, which builds a shared project once.
# Bytecode on: pytest caches its rewritten test modules there (collection 6 s instead of 19 s). The run ends with its
# 20 slowest tests (the README's list).
TEST_WORKERS ?= 4
test: install
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -p tests.parallel -n auto --maxprocesses $(TEST_WORKERS) \
		--dist loadfile --durations 20 $(PYTEST_ARGS)

# The code's style (ruff) and its layers (import-linter: imports point down, no cycles); contracts in pyproject.toml.
lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# Debian's Chromium for the browser tests (Playwright's own browser download does not work offline).
browsers:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

clean:
	rm -rf $(VENV) var .pytest_cache
