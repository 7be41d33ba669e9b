# The two set-up commands of the README: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

INSPECTOR_VERSION := 2.12.0
INSPECTOR := .cache/npm/node_modules/.bin/mcp-inspector

.PHONY: demo test lint bench clean inspector

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,ray]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/toolshift demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

# The official MCP Inspector CLI, for tests/world/test_inspector.py (skipped where npm is absent).
inspector: $(INSPECTOR)
$(INSPECTOR):
	@if command -v npm >/dev/null 2>&1; then \
	  mkdir -p .cache/npm && cd .cache/npm && echo '{"private": true}' > package.json && \
	  npm install --no-audit --no-fund --loglevel=error @modelcontextprotocol/inspector@$(INSPECTOR_VERSION); \
	else echo "npm not found: the MCP Inspector tests will be skipped"; fi

test: lint $(INSPECTOR)
	$(VENV)/bin/pytest -q

bench: $(STAMP)
	for b in bench/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache .cache
