#!/usr/bin/env bash
# Serve the bundled SmolLM2 GGUF over an OpenAI-compatible API with llama.cpp (llama-cpp-python).
#
#   scripts/llama_server.sh [PORT] [extra llama_cpp.server args...]
#
# then use the LLM spec  openai:http://127.0.0.1:PORT/v1#smollm2
# Needs: CMAKE_ARGS="-DGGML_NATIVE=off" pip install 'llama-cpp-python[server]'
# Env: PYTHON (default: python), HOST (default 127.0.0.1), MODEL (default: the bundled GGUF).
set -euo pipefail
PORT="${1:-8000}"
shift || true
PY="${PYTHON:-python}"
HOST="${HOST:-127.0.0.1}"
if ! "$PY" -c "import llama_cpp.server" 2>/dev/null; then
  echo "error: llama-cpp-python[server] is not installed for $PY; install with:" >&2
  echo "  CMAKE_ARGS=\"-DGGML_NATIVE=off\" $PY -m pip install 'llama-cpp-python[server]'" >&2
  exit 2
fi
MODEL="${MODEL:-$("$PY" -c 'from optiforge.platform.llm import bundled_gguf_path; print(bundled_gguf_path())')}"
exec "$PY" -m llama_cpp.server --model "$MODEL" --model_alias smollm2 \
  --host "$HOST" --port "$PORT" --n_ctx 4096 "$@"
