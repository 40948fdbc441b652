"""pytest plugin (registered through the ``pytest11`` entry point): the ``ctxbench check``
regression gate inside a user's own test suite.

    pytest --ctxbench-baseline ci/baseline.json --ctxbench-results results/ci

    def test_no_compaction_regression(ctxbench_check):
        ctxbench_check()                       # uses the options above
        ctxbench_check("results/other", tolerances=["retention=0.05"])

The fixture fails the test with the table of what moved, and skips when no baseline is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxbench", "ctxbench regression gate")
    group.addoption("--ctxbench-baseline", default=None, help="baseline JSON from `ctxbench baseline`")
    group.addoption("--ctxbench-results", action="append", default=[], help="result folder to check (repeatable)")
    group.addoption(
        "--ctxbench-tolerance", action="append", default=[], metavar="METRIC=VALUE", help="as `ctxbench check`"
    )


@pytest.fixture
def ctxbench_check(request: pytest.FixtureRequest) -> Callable[..., pd.DataFrame]:
    """Compare results with a baseline; fail the test on a regression; return the check table."""
    from ctxbench.errors import CtxbenchError
    from ctxbench.report.gate import compare, current_entries, failed, format_check, load_baseline, parse_tolerances

    config = request.config

    def check(
        results: str | Path | Sequence[str | Path] | None = None,
        baseline: str | Path | None = None,
        tolerances: Sequence[str] = (),
        allow_missing: bool = False,
    ) -> pd.DataFrame:
        baseline = baseline or config.getoption("--ctxbench-baseline")
        if not baseline:
            pytest.skip("no ctxbench baseline given (--ctxbench-baseline FILE)")
        if results is None:
            paths = config.getoption("--ctxbench-results") or ["results"]
        else:
            paths = [results] if isinstance(results, str | Path) else list(results)
        tol = parse_tolerances([*config.getoption("--ctxbench-tolerance"), *tolerances])
        try:
            entries, _ = current_entries(paths)
            expected = load_baseline(baseline)["entries"]
        except CtxbenchError as exc:  # a bad baseline or results folder: one line, not a traceback
            pytest.fail(f"ctxbench check: {exc}", pytrace=False)
        table = compare(expected, entries, tol, allow_missing)
        if failed(table):
            pytest.fail(f"ctxbench regression against {baseline}:\n{format_check(table)}", pytrace=False)
        return table

    return check
