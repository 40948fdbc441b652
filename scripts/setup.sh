#!/usr/bin/env bash
# Create .venv (if missing) and install ctxbench with everything it needs, at the exact versions of
# constraints.txt (pyproject.toml states ranges; the constraints make installs reproducible). Idempotent.
#   bash scripts/setup.sh          install (editable, with the dev and tokenizers extras)
#   bash scripts/setup.sh --lock   re-resolve the ranges in a scratch venv and rewrite constraints.txt
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
EXTRAS="dev,tokenizers"
if [ "${1:-}" = "--lock" ]; then
  scratch=$(mktemp -d)
  "$PYTHON" -m venv "$scratch/venv"
  "$scratch/venv/bin/python" -m pip install --quiet --upgrade pip
  "$scratch/venv/bin/python" -m pip install --quiet ".[$EXTRAS]"
  { echo "# Exact versions for reproducible installs (bash scripts/setup.sh --lock regenerates; $(date -u +%F))."
    "$scratch/venv/bin/python" -m pip freeze --exclude ctxbench; } > constraints.txt
  rm -rf "$scratch"
  echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[$EXTRAS]"
# Upstream implementations for the differential tests and strategy=upstream_dbgpt (docs/strategies.md).
# DB-GPT's context package is four self-contained modules inside the dbgpt wheel, whose declared
# dependencies (aiohttp==3.8.4, ...) conflict with litellm's: installed without them, loaded by file.
.venv/bin/python -m pip install --quiet --no-deps dbgpt==0.8.2
# inspect_ai's compaction (strategy=inspect_compaction): the wheel and the packages inspect_ai.model
# imports, without the rest of its tree (s3fs/aiobotocore would downgrade fsspec and boto3 pinned above).
# The list is what `import inspect_ai.model` needs in a fresh venv (starlette: its log viewer's server,
# imported by inspect_ai._eval); tests/test_upstream_inspect.py fails, not skips, when one is missing.
.venv/bin/python -m pip install --quiet --no-deps inspect-ai==0.3.285 docstring-parser==0.18.0 ijson==3.6.0 \
  jsonlines==4.0.0 jsonpatch==1.48 jsonpointer==3.12 mmh3==5.3.1 nest-asyncio2==1.7.4 platformdirs==4.14.9 \
  psutil==7.2.2 semver==3.1.2 shortuuid==1.0.13 starlette==1.10.0 tenacity==9.2.1 textual==8.2.8 zipfile-zstd==0.0.4 \
  zstandard==0.25.0
# LangChain's context middleware (strategy=langchain_middleware, the `langchain` extra): installs with
# its own dependencies, none of which changes a package pinned above; its tree is pinned here.
.venv/bin/python -m pip install --quiet -c constraints.txt langchain==1.5.0 langchain-core==1.8.3 \
  langchain-protocol==0.0.20 langgraph==1.2.24 langgraph-checkpoint==4.3.2 langgraph-prebuilt==1.1.3 \
  langgraph-sdk==0.4.14 langsmith==0.15.1 distro==1.9.0 ormsgpack==1.13.1 requests-toolbelt==1.0.0 \
  uuid-utils==0.19.0 websockets==17.4
