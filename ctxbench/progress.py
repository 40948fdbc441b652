"""When to draw progress bars: on a terminal, or when asked; never with ``TQDM_DISABLE``."""

from __future__ import annotations

import os
import sys
from typing import Any


def show_progress(setting: Any, stream: Any = None) -> bool:
    """Progress bars: ``true``/``false`` as configured, ``auto`` only on a terminal; never when
    ``TQDM_DISABLE`` is set to a true value (tqdm's own switch)."""
    if os.environ.get("TQDM_DISABLE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    if isinstance(setting, bool):
        return setting
    if str(setting).lower() in ("true", "1", "yes", "on"):
        return True
    if str(setting).lower() in ("false", "0", "no", "off"):
        return False
    stream = stream if stream is not None else sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())
