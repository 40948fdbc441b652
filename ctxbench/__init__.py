"""ctxbench: replay long agent transcripts through context-compaction strategies and
measure token savings, fact retention, overflow retries and cost."""

import os

# litellm downloads its price list at import unless told to use the one it ships.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"
