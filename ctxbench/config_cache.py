"""Hydra's config files parsed once per process, not once per job (issue 24).

Hydra composes every job's config from its YAML files again (each job of a multirun, in the
launcher's process or a joblib worker, and the sweeper's check before the launch), and keeps what
it loaded only for one composition. A threshold sweep's 20 jobs parsed the same dozen files 20
times: about a third of each composition. Here a file's parse is kept by where it is and the
sha256 of its bytes (so an edited file is parsed again, whatever its size or time stamp), and each
load gets a deep copy (Hydra changes what it loads: it pops the defaults list, merges into it).

``install`` wraps the ``load_config`` of Hydra's file and package config sources (hydra-core 1.3,
pinned in constraints.txt); ``ctxbench.run_app`` installs it at import, so every process that runs
a job of ``ctxbench run`` has it. ``CTXBENCH_CONFIG_CACHE=off`` leaves Hydra as it is.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
from collections.abc import Callable
from typing import Any

CACHE_ENV = "CTXBENCH_CONFIG_CACHE"
_KEPT: dict[tuple[str, str, str], tuple[bytes, Any]] = {}  # (source, its path, config) -> (digest, result)


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "").strip().lower() not in ("off", "0", "false", "no")


def _file_bytes(source: Any, config_path: str) -> bytes:
    """The bytes ``FileConfigSource.load_config`` reads (the same path, found the same way)."""
    name = source._normalize_file_name(config_path)
    with open(os.path.realpath(os.path.join(source.path, name)), "rb") as handle:
        return handle.read()


def _package_bytes(source: Any, config_path: str) -> bytes:
    """The bytes ``ImportlibResourcesConfigSource.load_config`` reads."""
    from importlib import resources

    data = resources.files(source.path).joinpath(source._normalize_file_name(config_path)).read_bytes()
    return bytes(data)


def _cached(load: Callable[[Any, str], Any], read: Callable[[Any, str], bytes]) -> Callable[[Any, str], Any]:
    @functools.wraps(load)
    def load_config(self: Any, config_path: str) -> Any:
        if not enabled():
            return load(self, config_path)
        try:
            digest = hashlib.sha256(read(self, config_path)).digest()
        except Exception:  # noqa: BLE001 - absent or unreadable: Hydra's own load says why
            return load(self, config_path)
        key = (type(self).__name__, str(self.path), config_path)
        kept = _KEPT.get(key)
        if kept is None or kept[0] != digest:
            kept = (digest, copy.deepcopy(load(self, config_path)))  # kept as parsed, never handed out
            _KEPT[key] = kept
        return copy.deepcopy(kept[1])

    load_config.ctxbench_cached = True  # type: ignore[attr-defined]
    return load_config


def install() -> None:
    """Wrap Hydra's file and package config sources' ``load_config`` (once; idempotent)."""
    import hydra._internal.core_plugins.file_config_source as files
    import hydra._internal.core_plugins.importlib_resources_config_source as packages
    from hydra._internal.sources_registry import SourcesRegistry

    # Hydra's plugin scan runs its core plugins' modules again (new classes, registered for use):
    # the classes in the modules now and the registered ones, which may differ, are all wrapped.
    registered = SourcesRegistry.instance().types
    for scheme, cls, read in (
        ("file", files.FileConfigSource, _file_bytes),
        ("pkg", packages.ImportlibResourcesConfigSource, _package_bytes),
    ):
        for found in {cls, registered.get(scheme, cls)}:
            if not getattr(found.load_config, "ctxbench_cached", False):
                found.load_config = _cached(found.load_config, read)  # type: ignore[method-assign,assignment]


def clear() -> None:
    _KEPT.clear()
