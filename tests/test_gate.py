"""The regression gate's rules (direction, absolute and relative tolerances, missing entries),
its CLI errors, and the pytest fixture inside a user's suite."""

from __future__ import annotations

import json

import pytest

from ctxbench.errors import ConfigError, InputError
from ctxbench.report.gate import (
    BASELINE_SCHEMA,
    baseline_cli,
    check_cli,
    compare,
    failed,
    format_check,
    load_baseline,
    parse_tolerances,
)
from tests.test_report import sweep_root  # noqa: F401  (module fixture: real cells)

pytest_plugins = ["pytester"]


def entry(**metrics: float) -> dict:
    return {"strategy": "s", "model": "m", "variant": "", "metrics": metrics}


@pytest.mark.parametrize(
    ("before", "after", "status"),
    [
        ({"retention": 0.80}, {"retention": 0.79}, "ok"),  # within the default 0.02 drop
        ({"retention": 0.80}, {"retention": 0.77}, "FAIL"),
        ({"savings": 0.50}, {"savings": 0.60}, "better"),
        ({"retries": 3}, {"retries": 4}, "FAIL"),  # counts may not rise by default
        ({"retries": 3}, {"retries": 0}, "better"),
        ({"overflow_errors": 0}, {"overflow_errors": 0}, "ok"),
    ],
)
def test_direction_and_default_tolerances(before, after, status) -> None:
    table = compare([entry(**before)], [entry(**after)], parse_tolerances([]))
    assert list(table["status"]) == [status]


def test_relative_and_custom_tolerances() -> None:
    tol = parse_tolerances(["retries=+50%", "retention=off", "peak=10%"])
    assert "retention" not in tol
    base, now = entry(retries=4, peak=1000, retention=0.9), entry(retries=6, peak=1101, retention=0.1)
    table = compare([base], [now], tol).set_index("metric")
    assert table.loc["retries", "status"] == "ok" and table.loc["peak", "status"] == "FAIL"
    with pytest.raises(ConfigError, match="unknown metric"):
        parse_tolerances(["speed=1"])
    with pytest.raises(ConfigError, match="not a number"):
        parse_tolerances(["retries=lots"])


def test_missing_absent_and_new_entries() -> None:
    other = {**entry(savings=0.5), "strategy": "t"}
    table = compare([entry(savings=0.5, retention=0.9)], [other], parse_tolerances([]))
    assert failed(table) and "FAIL: missing" in set(table["status"]) and "new (not in baseline)" in set(table["status"])
    assert not failed(compare([entry(savings=0.5)], [other], parse_tolerances([]), allow_missing=True))
    gone = compare([entry(retention=0.9)], [entry()], parse_tolerances([]))
    assert list(gone["status"]) == ["FAIL: absent now"]
    assert "retention" in format_check(gone)


def test_bad_baseline_file_names_the_file(tmp_path) -> None:
    path = tmp_path / "b.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match=r"b\.json:line 1"):
        load_baseline(path)
    path.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(InputError, match="not a ctxbench baseline"):
        load_baseline(path)


def test_cli_round_trip_on_real_cells(sweep_root, tmp_path, capsys) -> None:  # noqa: F811
    baseline = tmp_path / "base.json"
    assert baseline_cli([str(sweep_root), "--out", str(baseline)]) == 0
    data = json.loads(baseline.read_text())
    assert data["schema"] == BASELINE_SCHEMA and len(data["entries"]) == 4
    assert check_cli(["--baseline", str(baseline), str(sweep_root)]) == 0
    # Pretend the baseline saved more: the same results now regress on savings (the baseline's
    # per-transcript numbers say the same, so the paired interval excludes zero).
    for e in data["entries"]:
        e["metrics"]["savings"] += 0.05
        for numbers in e["per_transcript"].values():
            numbers["tokens_sent_total"] -= 0.05 * numbers["tokens_uncompacted_total"]
    baseline.write_text(json.dumps(data))
    capsys.readouterr()
    assert check_cli(["--baseline", str(baseline), str(sweep_root)]) == 1
    out = capsys.readouterr().out
    assert out.count("FAIL") == 4 and "savings" in out and "-5.00%" in out


def test_pytest_fixture_in_a_user_suite(pytester, sweep_root, tmp_path) -> None:  # noqa: F811
    baseline = tmp_path / "base.json"
    baseline_cli([str(sweep_root), "--out", str(baseline)])
    pytester.makepyfile("def test_gate(ctxbench_check):\n    ctxbench_check()\n")
    args = ["--ctxbench-results", str(sweep_root)]  # the plugin loads through its pytest11 entry point
    pytester.runpytest(*args).assert_outcomes(skipped=1)  # no baseline given: skipped, not failed
    pytester.runpytest(*args, "--ctxbench-baseline", str(baseline)).assert_outcomes(passed=1)
    data = json.loads(baseline.read_text())
    # A baseline that sent 1 token per transcript: every current run sends more (a baseline with
    # impossible figures, e.g. -1 retries, is refused as such: tests/test_robust_results.py).
    data["entries"][0]["metrics"]["tokens_sent"] = 1
    for numbers in data["entries"][0]["per_transcript"].values():
        for key in [k for k in numbers if k.startswith("tokens_sent")]:
            numbers[key] = 1
    baseline.write_text(json.dumps(data))
    result = pytester.runpytest(*args, "--ctxbench-baseline", str(baseline), "--ctxbench-tolerance", "tokens_sent=0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ctxbench regression*", "*tokens_sent*FAIL*"])


def test_a_tolerance_is_said_in_the_units_of_its_delta():
    """Issue 27: "-31.34% (tolerance -0.02)" mixed a percent delta with a fraction tolerance."""
    from ctxbench.report.gate import Tolerance

    assert Tolerance.parse("0.02").said_for("retention") == "2.00%"
    assert Tolerance.parse("5%").said_for("retention") == "5% of the baseline"
    assert Tolerance.parse("0").said_for("overflow_errors") == "0"
