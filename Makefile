# The two commands a newcomer needs: `make run` (the service on the embedded default) and
# `make test` (the whole suite). Both create .venv and install pinned dependencies first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: run test install migrate stop clean-data bench

$(STAMP): requirements.txt pyproject.toml clients/python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first and pinned exactly: this version is the CPU wheel; a looser pin pulls CUDA.
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -r requirements.txt
	# This checkout, editable and without dependencies: puts the MCP stdio server on the PATH
	# as .venv/bin/memory-mcp (pyproject.toml's [project.scripts]).
	$(PIP) install --quiet --no-deps -e .
	# Our Python client (import memory_client; its LangGraph store), editable: clients/python.
	$(PIP) install --quiet --no-deps -e clients/python
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) manage.py runservice

migrate: install
	$(PY) manage.py migrate

# The browser tests need Chromium; scripts/ensure_chromium.sh installs Debian's if it is missing.
test: install
	bash scripts/ensure_chromium.sh
	$(PY) -m memoryapp.embedded exec -- $(PY) -m pytest $(PYTEST_ARGS)

stop:
	$(PY) -m memoryapp.embedded stop

clean-data: stop
	rm -rf var
