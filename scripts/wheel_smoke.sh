#!/usr/bin/env bash
# The wheel runs: build it, install it into an empty venv (exact versions from constraints.txt,
# no extras), and run one short `ctxbench run` from an empty directory. .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" . 2>/dev/null
"$PYTHON" -m venv "$work/venv"
# (grep: this machine's pip config names index folders that are absent; pip warns once per package)
"$work/venv/bin/python" -m pip install --quiet --no-compile -c constraints.txt "$work"/dist/ctxbench-*.whl \
  2> >(grep -v "^WARNING: Location" >&2)
installed=$SECONDS
mkdir "$work/run"
out=$(cd "$work/run" && env -u PYTHONPATH "$work/venv/bin/ctxbench" run strategy=dbgpt dataset.limit=1 2>&1)
echo "$out" | grep -q "^   dbgpt " || { echo "wheel smoke: no comparison table in the output:"; echo "$out"; exit 1; }
echo "$out" | grep -q "^Results: results/default/cells" || { echo "wheel smoke: no results line:"; echo "$out"; exit 1; }
! "$work/venv/bin/python" -c "import pytest" 2>/dev/null || { echo "wheel smoke: pytest came with the wheel"; exit 1; }
echo "wheel smoke: built and installed in $((installed - start)) s, ctxbench run in $((SECONDS - installed)) s: ok"
