# The two set-up commands of the README. Both need nothing but Python 3.11 and the package registry.
PYTHON ?= python3.11
VENV ?= .venv
BIN = $(VENV)/bin
HOST ?= 127.0.0.1:8000

.PHONY: demo test install browsers serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# The stamp makes `make test` skip the install when pyproject.toml has not changed.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[dev]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py runserver $(HOST)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Debian's Chromium for the browser tests (Playwright's own browser download does not work offline).
browsers:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

clean:
	rm -rf $(VENV) var .pytest_cache
