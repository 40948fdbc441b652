"""A user's own ``./configs`` folder layered on top of the configs shipped in the package.

``ctxbench run`` composes from ``ctxbench/configs`` inside the installed package. When the
directory it runs in has a ``configs/`` folder, that folder is searched first: a new
``configs/strategy/mine.yaml`` becomes ``strategy=mine``, and a file with a packaged name
(``configs/model/gpt-4o.yaml``) replaces the packaged one. ``CTXBENCH_CONFIGS`` names another
folder instead. Only ``ctxbench run`` is affected (the plugin checks the app's config path).
"""

from __future__ import annotations

import os
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

PACKAGED = "ctxbench/configs"


class CtxbenchSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        if not any(PACKAGED in (e.path or "") for e in search_path.get_path()):
            return  # another Hydra app
        # After Hydra's plugin scan, which made its config sources' classes anew: parse each config
        # file once per process (ctxbench/config_cache.py).
        from ctxbench import config_cache

        config_cache.install()
        folder = Path(os.environ.get("CTXBENCH_CONFIGS") or "configs").resolve()
        if folder.is_dir() and not any(str(folder) == e.path for e in search_path.get_path()):
            search_path.prepend("ctxbench-user", f"file://{folder}")
