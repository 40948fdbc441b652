"""Facts read from what runs printed (ctxbench/probes/runs.py, outputs.py, shell.py): the
reproduction, test results and errors seen, on short examples shaped like real agents' outputs
(mini-swe-agent's <returncode>, OpenHands' exit-code footer, SWE-agent's lint rejections)."""

import json

from ctxbench.probes.extract import _typed_candidates, extract_candidates, extract_probes
from ctxbench.probes.outputs import errors, failing_tests, read_output, suite_summary
from ctxbench.probes.runs import _value_line, contradicted, verdict_lines
from ctxbench.probes.shell import runs_tests
from ctxbench.transcripts.model import Message, ToolCall, Transcript

TASK = "<pr_description>\nparse() returns None for an empty header instead of raising HeaderError\n</pr_description>"


def _bash(i: str, command: str) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(i, "bash", json.dumps({"command": command})),))


def _out(i: str, text: str, code: int = 0) -> Message:
    return Message("tool", f"<returncode>{code}</returncode>\n<output>\n{text}\n</output>", tool_call_id=i)


def _facts(messages: list[Message], label: str) -> list[tuple[str, str]]:
    """(answer, question) of the candidates of one type, best first."""
    return [(c.answer, c.question) for c in extract_candidates(Transcript("t", messages)) if c.label == label]


def test_an_error_keeps_its_message_not_a_librarys_frame():
    numpy = (
        "Traceback (most recent call last):\n"
        '  File "/testbed/pkg/core.py", line 59, in <module>\n    limit=np.Inf,\n'
        '  File "/opt/conda/lib/python3.11/site-packages/numpy/__init__.py", line 778, in __getattr__\n'
        "    raise AttributeError(\n"
        "AttributeError: `np.Inf` was removed in the NumPy 2.0 release. Use `np.inf` instead.\n"
    )
    assert errors(numpy) == ["AttributeError: `np.Inf` was removed in the NumPy 2.0 release. Use `np.inf` instead."]
    stdlib = (  # the standard library's frame is no more the project's than a package's
        '  File "/opt/conda/lib/python3.9/ssl.py", line 1167, in read\n    return self._sslobj.read(len, buffer)\n'
        "TimeoutError: The read operation timed out\n"
    )
    assert errors(stdlib) == ["TimeoutError: The read operation timed out"]
    deep = (
        '  File "/testbed/src/marshmallow/very/long/package/path/schema.py", line 894, in _invoke_field_validators\n'
        "    value = data[field_obj.attribute or field_name]\n"
        "TypeError: 'NoneType' object is not subscriptable\n"
        "Error: 'NoneType' object is not subscriptable\n"  # the script's own print of what the traceback said
    )
    assert errors(deep) == [
        "line 894, in _invoke_field_validators value = data[field_obj.attribute or field_name] "
        "TypeError: 'NoneType' object is not subscriptable"
    ]
    lint = "Your proposed edit has introduced new syntax error(s).\nERRORS:\n- E999 SyntaxError: unmatched ')'\n"
    assert errors(lint)[-1] == "E999 SyntaxError: unmatched ')'"
    assert errors("strings: 'flash.img': No such file") == ["strings: 'flash.img': No such file"]
    make = "mkdir -p build\n/bin/sh: 1: cd: can't cd to /w/build/build_release\nmake: *** [Makefile:192: build] Error 2"
    assert errors(make) == ["/bin/sh: 1: cd: can't cd to /w/build/build_release"]  # why the recipe failed


def test_installing_or_finding_a_test_runner_runs_no_tests():
    assert not runs_tests("pip install pytest") and not runs_tests("pip install -q pytest pytest-cov")
    assert not runs_tests("which pytest")
    assert runs_tests("pip install -q pytest && python -m pytest tests/test_x.py")


def test_a_runner_runs_tests_where_a_segment_runs_it_not_where_it_is_read_or_named():
    looks = [
        "head tests/runtests.py", "sed -n 1,40p tests/runtests.py", "cat tests/runtests.py | grep -n parallel",
        "vim tests/runtests.py", "grep -n pytest setup.cfg", "echo 'now run pytest'", "git log -- tests/runtests.py",
        "find . -name '*_test.go' | xargs grep -l 'go test'", "python tests/runtests.py --help", "pytest -h",
        "python -m pytest --version", 'python -c "import pytest"',
        'python -c "import pytest; print(pytest.__version__)"',
        "cargo test --no-run", "tox -l", "python -m pytest --collect-only -q tests/test_x.py", "go test -list . ./pkg",
        "man pytest", "npx jest --listTests", "ls tests/ && cat tox.ini", "make", "./configure && make install",
        "python test_fix.py", "python -Bc 'import pytest'", "gcc test.c -o test && ./test",
    ]  # fmt: skip
    assert [c for c in looks if runs_tests(c)] == []
    runs = [
        "cd /testbed && python tests/runtests.py queries --parallel 1", "timeout 300 python -m pytest tests/x.py -x",
        "PYTHONPATH=. pytest -q", "bash -c 'cd /w && go test ./...'", "poetry run pytest tests",
        "npx jest src/a.test.ts",
        "uv run pytest -k parse", "./gradlew test --tests X", "mvn -q -Dtest=FooTest test", "cargo test -- --nocapture",
        'python -c "import pytest; pytest.main([\'tests/x.py\'])"', "npm test -- --watchAll=false",
        "python -m django test lookups --verbosity=2", "make test 2>&1 | tail", "yarn jest --ci", "tox -e py311",
        "make -C build test-ci", "./build/release/libponyc.tests --gtest_filter=X.*", "./run_tests.sh unit",
        "python -W ignore -m pytest t.py", "django-admin.py test --settings=s",
        'python -c "import unittest; from t import T; unittest.TextTestRunner().run(unittest.makeSuite(T))"',
        'python -c "from django.test.utils import get_runner; get_runner(settings)().run_tests([\'queries\'])"',
    ]  # fmt: skip
    assert [c for c in runs if not runs_tests(c)] == []


def test_verdicts_are_stated_and_only_a_failing_line_contradicts_them():
    lines = ["✓ error: extra_tags='' -> decoded=''", "Edge cases: PASS", "✅ All tests passed!"]
    assert not contradicted(lines) and contradicted([*lines, "✗ FAIL: got None"])
    assert not contradicted(["Ran 3 checks, 0 failed"])
    # a sentence that starts with the word "error" reports no failure; an exception, an error line do
    prose = ["error that occurred when the handler tried to use get_response_async", "✅ Fix appears correct!"]
    assert not contradicted(prose)
    assert contradicted(["TypeError: bad operand"]) and contradicted(["Error: no handler"])
    assert contradicted(["ERROR: test_x failed to import"]) and contradicted(["error: could not compile"])
    assert verdict_lines(["  Message(level=30, extra_tags='success')", "test_parse passed!"]) == ["test_parse passed!"]
    assert verdict_lines(["File updated successfully!", "Patch applied successfully"]) == []  # a patch script
    said = ["Bug fixed!", "Issue resolved: empty header raises", "FIXED: header parsed", "No exception was raised"]
    assert verdict_lines(said) == said  # other scripts' wording of a verdict
    assert verdict_lines(["Fixed width: 10", "resolved path: /r/x", "Issue: fixed-point overflow"]) == []  # values


def _fixed_by_a_script() -> list[Message]:
    """mini-swe-agent on DeepSeek: a reproduction, a fix written by a Python script (no editor call),
    the reproduction run again, a verification script, a suite that cannot start."""
    fix = (
        "cat > fix.py << 'EOF'\nsrc = open('src/hdr.py').read()\n"
        "src = src.replace('return None', 'raise HeaderError')\n"
        "with open('src/hdr.py', 'w') as f:\n    f.write(src)\nprint('File updated successfully!')\nEOF\npython fix.py"
    )
    diff = (
        "diff --git a/src/hdr.py b/src/hdr.py\n--- a/src/hdr.py\n+++ b/src/hdr.py\n@@ -3,3 +3,3 @@ def parse(h):\n"
        "-        return None\n+        raise HeaderError('empty header')\n"
    )
    return [
        Message("user", TASK),
        _bash("a", "cat > repro.py << 'EOF'\nfrom hdr import parse\nprint('header:', 'empty')\nprint(parse(''))\nEOF"),
        _out("a", ""),
        _bash("b", "python repro.py"),
        _out("b", "header: empty\nresult: None"),
        _bash("c", fix),
        _out("c", "File updated successfully!"),
        _bash("d", "python repro.py"),
        _out("d", "header: empty\nresult: HeaderError('empty header')"),
        _bash("e", "python - << 'EOF'\nprint('✓ error: raised')\nprint('✓ SUCCESS: empty header raises')\nEOF"),
        _out("e", "✓ error: raised\n✓ SUCCESS: empty header raises HeaderError\n✅ All tests passed!"),
        _bash("f", "pip install pytest"),
        _out("f", "Successfully installed pytest-9.0.3"),
        _bash("g", "python -m pytest tests/test_hdr.py"),
        _out("g", "TypeError: /testbed/pyproject.toml: config option 'testpaths' expects a list, got str"),
        _bash("h", "git diff"),
        _out("h", diff),
        Message("assistant", "Done."),
    ]


def test_a_fix_written_to_another_file_and_moved_over_the_source_is_the_fix():
    """mini-swe-agent on DeepSeek: `cat > x.py.fixed << 'EOF'` then `cp x.py.fixed x.py`, or `sed ... > x.py.new &&
    mv x.py.new x.py`, writes the fix: the rerun after it checks it (a copied-back backup does not)."""
    for write, move in (
        (
            "cat > src/hdr.py.fixed << 'EOF'\ndef parse(h):\n    raise HeaderError('empty header')\nEOF",
            "cp src/hdr.py.fixed src/hdr.py",
        ),
        ("sed 's/return None/raise HeaderError/' src/hdr.py > src/hdr.py.new", "mv src/hdr.py.new src/hdr.py"),
    ):
        messages = _fixed_by_a_script()
        messages[5:7] = [
            _bash("c", write),
            _out("c", ""),
            _bash("c2", f"cp src/hdr.py src/hdr.py.orig && {move}"),
            _out("c2", ""),
        ]
        assert _facts(messages, "reproduction") == [
            ("header: empty result: None", "What did `python repro.py` print before the fix?")
        ], write
        assert _facts(messages, "test_result")[0][0] == "header: empty result: HeaderError('empty header')", write
        restored = [*messages[:5], _bash("c", "cp src/hdr.py.orig src/hdr.py"), _out("c", ""), *messages[9:]]
        assert not any("HeaderError('empty" in answer for answer, _ in _facts(restored, "test_result"))


def test_a_fix_written_by_a_script_splits_the_reproduction_from_the_checks():
    messages = _fixed_by_a_script()
    # the line the fix changed, with the unchanged label line above it
    before = ("header: empty result: None", "What did `python repro.py` print before the fix?")
    assert _facts(messages, "reproduction") == [before]
    results = _facts(messages, "test_result")
    assert results[0] == (
        "header: empty result: HeaderError('empty header')",
        "What did `python repro.py` print after the change?",  # the reproduction, run again after the fix
    )
    answers = [a for a, _ in results]
    assert "✓ SUCCESS: empty header raises HeaderError" in answers  # the verdict naming what was fixed
    assert "TypeError: /testbed/pyproject.toml: config option 'testpaths' expects a list, got str" in answers
    assert not any("updated successfully" in a or "No module named pytest" in a for a in answers)


def test_the_widest_suite_run_after_the_fix_is_reported_beside_the_targeted_one():
    edit = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    messages = [
        Message("user", TASK),
        Message("assistant", "", tool_calls=(ToolCall("a", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="a"),
        _bash("b", "python -m pytest tests/test_hdr.py -q"),
        _out("b", "3 passed in 0.02s"),
        _bash("c", "python -m pytest tests/ -x -q"),
        _out("c", "779 passed, 1 warning in 0.60s"),
        _bash("d", "python -m pytest tests/test_hdr.py::test_empty -q"),
        _out("d", "1 passed in 0.01s"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "test_result")][:3] == [
        "1 passed in 0.01s",
        "779 passed, 1 warning in 0.60s",
        "3 passed in 0.02s",
    ]


def test_errors_seen_first_and_last_not_slips_or_echoes():
    edit = "edit 287:295\n    value = f(x))\nend_of_edit"
    rejected = (
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully.\n"
        "ERRORS:\n- E999 SyntaxError: unmatched ')'\n(Open file: /r/src/hdr.py)"
    )
    messages = [
        Message("user", TASK),
        Message("assistant", "```\ngcc -o hdr src/hdr.c\n```"),
        Message("user", "src/hdr.c:3:5: error: expected ';' before 'return'"),
        Message("assistant", "```\nopen /r/src/hdr.py\n```"),
        Message("user", "[File: /r/src/hdr.py (300 lines total)]\n(Open file: /r/src/hdr.py)"),
        Message("assistant", f"```\n{edit}\n```"),
        Message("user", rejected),
        Message("assistant", f"```\n{edit}\n```"),
        Message("user", rejected),
        Message("assistant", "```\nedit 287:296\n    value = f(x)\nend_of_edit\n```"),
        Message("user", "[File: /r/src/hdr.py (300 lines total)]\nFile updated."),
        Message("assistant", "```\ncat > check.py << 'EOF'\nassert parse('a')\nEOF\npython check.py\n```"),
        Message("user", 'Traceback (most recent call last):\n  File "check.py", line 1\nAssertionError'),
        Message("assistant", "```\nmake build\n```"),
        Message("user", "/bin/sh: 1: cc: not found\nmake: *** [Makefile:3: build] Error 127"),
        Message("assistant", "```\nsubmit\n```"),
        Message("user", "Wrong flag!"),
    ]
    answers = [a for a, _ in _facts(messages, "error")]
    first, last = "src/hdr.c:3:5: error: expected ';' before 'return'", "/bin/sh: 1: cc: not found"
    assert answers[:2] == [first, last]
    assert "E999 SyntaxError: unmatched ')'" in answers  # refused twice: no slip fixed at once
    assert "Wrong flag!" in answers  # the environment refused the submission
    assert "AssertionError" not in answers  # a bare name says nothing


def test_a_script_crashing_in_its_own_code_is_no_error_seen_and_no_reproduction():
    own_bug = (
        "=== Model details ===\nTraceback (most recent call last):\n"
        '  File "/testbed/check_models.py", line 81, in <module>\n'
        '    print(f"  Has explicit PK: {model.id.primary_key}")\n'
        "AttributeError: 'DeferredAttribute' object has no attribute 'primary_key'"
    )
    finding = (
        "Traceback (most recent call last):\n"
        '  File "/testbed/check_models.py", line 30, in check\n'
        "    assert not errors, f'Unexpected errors: {errors}'\n"
        "AssertionError: Unexpected errors: {'_schema': ['Invalid input type.']}"
    )
    edit = {"command": "str_replace", "path": "/testbed/src/hdr.py", "old_str": "return None", "new_str": "raise E"}
    messages = [
        Message("user", TASK),
        _bash("a", "./hdr_tool"),
        Message("tool", "EXECUTION TIMED OUT", tool_call_id="a"),  # waits on stdin: shows nothing yet
        _bash("b", "cat > check_models.py << 'EOF'\nprint(model.id.primary_key)\nEOF\npython check_models.py"),
        _out("b", own_bug, 1),
        _bash("c", "python reproduce.py"),
        _out("c", "result: None"),
        Message("assistant", "", tool_calls=(ToolCall("d", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /testbed/src/hdr.py has been edited.", tool_call_id="d"),
        _bash("e", "python check_models.py"),
        _out("e", finding, 1),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["result: None"]
    answers = [a for a, _ in _facts(messages, "error")]
    assert not any("DeferredAttribute" in a for a in answers)  # the script's own bug
    assert any("Unexpected errors" in a for a in answers)  # its failed assert is a finding


def test_an_error_of_a_script_of_the_agents_that_was_not_set_up_is_no_error_seen():
    """Its own script's settings not configured, or a stand-in it made (a mock queryset, a model declared
    in `__main__`) missing what the code asks of it: the script's setup, not the code (the rubric's
    throwaway scripts). The project's own runner not set up is why the suite could not run: kept."""
    unset = (
        'Traceback (most recent call last):\n  File "/testbed/django/conf/__init__.py", line 57, in _setup\n'
        "    raise ImproperlyConfigured(\ndjango.core.exceptions.ImproperlyConfigured: Requested setting "
        "INSTALLED_APPS, but settings are not configured."
    )
    mock = (
        'Traceback (most recent call last):\n  File "/testbed/django/db/models/deletion.py", line 40, in sort\n'
        "    model._meta.concrete_model\nAttributeError: type object 'MockModel' has no attribute '_meta'"
    )
    runner = unset.replace("INSTALLED_APPS", "TEST_RUNNER")
    messages = [
        Message("user", TASK),
        _bash("a", "cat > simple_test.py << 'EOF'\nfrom django import forms\nEOF\npython simple_test.py"),
        _out("a", unset, 1),
        _bash("b", "cat > mock_test.py << 'EOF'\nclass MockModel: pass\nEOF\npython mock_test.py"),
        _out("b", mock, 1),
        _bash("c", "python -m django test forms_tests"),
        _out("c", runner, 1),
        *_edit("d"),
        _bash("e", "git diff"),
        _out(
            "e",
            "diff --git a/src/hdr.py b/src/hdr.py\n--- a/src/hdr.py\n+++ b/src/hdr.py\n"
            "@@ -1 +1 @@\n-return None\n+raise",
        ),
        Message("assistant", "Done."),
    ]
    answers = [a for a, _ in _facts(messages, "error")]
    assert not any("INSTALLED_APPS" in a or "MockModel" in a for a in answers), answers
    iterated = [*messages[:4], _out("b", "TypeError: 'MockQuerySet' object is not iterable", 1), *messages[5:]]
    assert not any("MockQuerySet" in a for a, _ in _facts(iterated, "error"))
    typed = _typed_candidates(Transcript("t", messages))
    assert [c for c in typed if c.label == "error" and "`python -m django test forms_tests`" in c.question]


def test_every_runners_summary_and_the_failing_tests():
    assert suite_summary("Ran 4 tests in 0.003s\n\nOK") == "Ran 4 tests in 0.003s OK"  # the count, not a bare OK
    assert suite_summary("  5 passing (20ms)\n  1 failing\n\n  1) parser\n") == "5 passing (20ms) 1 failing"
    assert suite_summary(" Test Files  1 passed (1)\n      Tests  5 passed (5)\n") == "Tests 5 passed (5)"
    assert suite_summary("Finished in 0.1 seconds\n5 examples, 1 failure\n") == "5 examples, 1 failure"
    assert suite_summary("OK (5 tests, 10 assertions)") == "OK (5 tests, 10 assertions)"
    assert suite_summary("100% tests passed, 0 tests failed out of 12") == "100% tests passed, 0 tests failed out of 12"
    assert suite_summary("[INFO] Tests run: 12, Failures: 1, Errors: 0, Skipped: 0") == (
        "[INFO] Tests run: 12, Failures: 1, Errors: 0, Skipped: 0"
    )
    out = "FAILED tests/test_a.py::test_x - AssertionError\nFAIL: test_y (pkg.tests.T)\n--- FAIL: TestZ (0.00s)"
    assert failing_tests(out + "\ntest w ... FAILED\n  ✕ renders (5 ms)") == [
        "tests/test_a.py::test_x",
        "test_y (pkg.tests.T)",
        "TestZ",
        "w",
        "renders",
    ]
    assert runs_tests("npx vitest run") and runs_tests("bundle exec rake spec") and runs_tests("dotnet test")
    assert runs_tests("cd /testbed && python -m django test messages_tests --settings=test_sqlite")
    assert runs_tests("bin/test sympy/core/tests/test_basic.py") and runs_tests("python setup.py test")
    assert suite_summary("==== tests finished: 5 passed, 1 expected to fail, in 0.34 seconds ====") == (
        "tests finished: 5 passed, 1 expected to fail, in 0.34 seconds"
    )
    assert suite_summary("============ no tests ran in 0.01s ============") == "no tests ran in 0.01s"
    assert suite_summary("Ran 0 tests in 0.000s\n\nNO TESTS RAN") == "Ran 0 tests in 0.000s NO TESTS RAN"  # 3.12+
    phpunit = "FAILURES!\nTests: 5, Assertions: 10, Failures: 1."
    assert suite_summary(phpunit) == "Tests: 5, Assertions: 10, Failures: 1."
    dotnet = "Failed!  - Failed:     1, Passed:    11, Skipped:     0, Total:    12, Duration: 1 s - Hdr.Tests.dll"
    assert suite_summary(dotnet) == "Failed! - Failed: 1, Passed: 11, Skipped: 0, Total: 12"
    swift = "\t Executed 5 tests, with 1 failure (0 unexpected) in 0.010 (0.011) seconds"
    assert suite_summary(swift) == "Executed 5 tests, with 1 failure (0 unexpected) in 0.010 (0.011) seconds"
    assert suite_summary(" 5 pass\n 1 fail\nRan 6 tests across 1 files. [12.00ms]") == "Ran 6 tests across 1 files."
    mix = "Finished in 0.05 seconds (0.03s async, 0.02s sync)\n5 tests, 1 failure"
    assert suite_summary(mix) == "5 tests, 1 failure"
    go_build = "# example.com/hdr\n./hdr.go:12:2: undefined: HeaderError\nFAIL\texample.com/hdr [build failed]\nFAIL"
    assert suite_summary(go_build) == "FAIL\texample.com/hdr [build failed]"


def test_more_languages_runners_and_their_summaries():
    # gradle, deno, cargo-nextest, dart/flutter, bazel and perl's prove: the runner's command and its result line
    assert suite_summary("5 tests completed, 1 failed\n\nFAILURE: Build failed.") == "5 tests completed, 1 failed"
    assert suite_summary("FAILED | 4 passed | 1 failed (31ms)\n\nerror: Test failed") == (
        "FAILED | 4 passed | 1 failed (31ms)"
    )
    nextest = "     Summary [   0.123s] 10 tests run: 9 passed, 1 failed, 0 skipped"
    assert suite_summary(nextest) == "Summary [ 0.123s] 10 tests run: 9 passed, 1 failed, 0 skipped"
    assert suite_summary("00:02 +4 -1: Some tests failed.") == "00:02 +4 -1: Some tests failed."
    assert suite_summary("Executed 3 out of 3 tests: 3 tests pass.") == "Executed 3 out of 3 tests: 3 tests pass."
    prove = "All tests successful.\nFiles=3, Tests=12,  0 wallclock secs\nResult: PASS"
    assert suite_summary(prove) == "Files=3, Tests=12, 0 wallclock secs Result: PASS"
    runs = ["deno test -A", "cargo nextest run", "bazel test //pkg:all", "flutter test", "dart test", "prove -lr t/"]
    assert [c for c in runs if not runs_tests(c)] == []
    assert not any(runs_tests(c) for c in ("cargo nextest list", "bazel build //pkg", "cat prove.log", "dart run"))


def test_the_failing_test_before_the_change_and_one_still_failing_after_it():
    edit = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    messages = [
        Message("user", TASK),
        _bash("a", "python -m pytest tests/test_hdr.py -q"),
        _out("a", "F..\nFAILED tests/test_hdr.py::test_empty - AssertionError\n1 failed, 2 passed in 0.05s", 1),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="b"),
        _bash("c", "python -m pytest tests/ -q"),
        _out("c", "FAILED tests/test_io.py::test_roundtrip - KeyError\n1 failed, 40 passed in 0.30s", 1),
        Message("assistant", "Done."),
    ]
    got = dict(_facts(messages, "test_result"))
    assert got["tests/test_hdr.py::test_empty"].endswith("before the change?")
    assert got["tests/test_io.py::test_roundtrip"].endswith("after the change?")


def test_the_test_a_first_version_of_the_fix_broke_and_the_last_run_made_pass():
    def edit(i: str, new: str) -> Message:
        args = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "x", "new_str": new}
        return Message("assistant", "", tool_calls=(ToolCall(i, "str_replace_editor", json.dumps(args)),))

    run = "python -m unittest tests.test_http.HttpDateTests -v"
    ok = "test_rfc850 (tests.test_http.HttpDateTests.test_rfc850) ... ok\n" + "-" * 70 + "\nRan 5 tests in 0.001s\n\nOK"
    failed = (  # unittest's -v run, shaped as Django's tests print it
        "test_year_less_than_70 (tests.test_http.HttpDateTests.test_year_less_than_70) ... FAIL\n\n" + "=" * 70 + "\n"
        "FAIL: test_year_less_than_70 (tests.test_http.HttpDateTests.test_year_less_than_70)\n" + "-" * 70 + "\n"
        "AssertionError: datetime.datetime(37, 11, 6) != datetime.datetime(2037, 11, 6)\n\n" + "-" * 70 + "\n"
        "Ran 5 tests in 0.001s\n\nFAILED (failures=1)"
    )
    messages = [Message("user", TASK), edit("a", "y"), Message("tool", "The file was edited.", tool_call_id="a")]
    messages += [_bash("b", run), _out("b", ok), edit("c", "z"), Message("tool", "edited.", tool_call_id="c")]
    messages += [_bash("d", run), _out("d", failed, 1), edit("e", "y"), Message("tool", "edited.", tool_call_id="e")]
    messages += [_bash("f", run), _out("f", ok), Message("assistant", "Done.")]
    got = dict(_facts(messages, "test_result"))
    assert "Ran 5 tests in 0.001s OK" in got
    question = got["test_year_less_than_70 (tests.test_http.HttpDateTests.test_year_less_than_70)"]
    assert question.endswith("after the change, before it passed?")


def test_a_suite_run_with_the_change_stashed_is_asked_as_the_code_without_it():
    # sqlfluff's shape: a test fails after the change; `git stash && pytest ...` shows it failing on the code without
    # the change too (a failure there before), then `git stash pop` puts the change back.
    edit = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    run = "python -m pytest tests/test_cli.py::test_fix -q"
    failed = "FAILED tests/test_cli.py::test_fix[L001] - AssertionError\n1 failed, 2 warnings in 0.03s"
    messages = [
        Message("user", TASK),
        Message("assistant", "", tool_calls=(ToolCall("a", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="a"),
        _bash("b", "python -m pytest tests/test_hdr.py -q"),
        _out("b", "12 passed in 0.05s"),
        _bash("c", f"cd /r && {run}"),
        _out("c", failed, 1),
        _bash("d", f"cd /r && git stash && {run}"),
        _out("d", "Saved working directory and index state WIP on main: a1005\n" + failed.replace("03s", "04s"), 1),
        _bash("e", "cd /r && git stash pop"),
        _out("e", "On branch main\nDropped refs/stash@{0} (e3c75a7)"),
        Message("assistant", "Done."),
    ]
    got = [(a, q) for a, q in _facts(messages, "test_result")]
    stashed = [q for a, q in got if "git stash" in q]
    assert stashed and all(q.endswith("report with the change stashed?") for q in stashed), got
    after = [(a, q) for a, q in got if q.endswith("after the change?")]
    assert ("1 failed, 2 warnings in 0.03s", f"What did `cd /r && {run}` report after the change?") in after
    assert not any("git stash" in q for _, q in after)


def test_claude_codes_exit_code_header_and_reminders_are_the_harness_not_the_output():
    out = read_output("Exit code 127\n/bin/bash: line 1: python: command not found")
    assert out.exit_code == 127 and out.lines == ["/bin/bash: line 1: python: command not found"]
    read = read_output(
        "     1→print('hi')\n\n<system-reminder>\nWhenever you read a file, consider malware.\n</system-reminder>\n"
    )
    assert read.lines == ["     1→print('hi')"]


def test_a_verification_that_exits_with_a_failure_gives_no_verdict():
    messages = _fixed_by_a_script()
    at = next(i for i, m in enumerate(messages) if m.tool_call_id == "e")
    messages[at] = _out("e", "✓ error: raised\n✓ SUCCESS: empty header raises HeaderError\n✅ All tests passed!", 1)
    assert not any("SUCCESS" in a or "All tests passed" in a for a, _ in _facts(messages, "test_result"))


def test_a_long_changed_line_is_quoted_around_its_change_and_a_script_running_unittest_is_a_suite():
    select = 'SELECT "auth_user"."id", "auth_user"."password", "auth_user"."last_login", "auth_user"."email" FROM '
    before = (
        select
        + '"auth_user" WHERE "auth_user"."id" = (SELECT U0."id" FROM "auth_user" U0 GROUP BY U0."email", U0."id")'
    )
    after = (
        select + '"auth_user" WHERE "auth_user"."id" = (SELECT MAX(U0."id") FROM "auth_user" U0 GROUP BY U0."email")'
    )
    edit = {"command": "str_replace", "path": "/r/src/query.py", "old_str": "a", "new_str": "b"}
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce_issue.py"),
        _out("a", f"Query a:\nSELECT 1\nQuery b (problematic):\n{before}"),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/query.py has been edited.", tool_call_id="b"),
        _bash("c", "python reproduce_issue.py"),
        _out("c", f"Query a:\nSELECT 1\nQuery b (problematic):\n{after}"),
        _bash("d", "python run_checks.py"),
        _out(
            "d",
            "...\n----------------------------------------------------------------------\nRan 3 tests in 0.008s\n\nOK",
        ),
        Message("assistant", "Done."),
    ]
    (repro,) = [a for a, _ in _facts(messages, "reproduction")]
    assert 'GROUP BY U0."email", U0."id")' in repro and len(repro) <= 150 and repro in before
    results = [a for a, _ in _facts(messages, "test_result")]
    assert "Ran 3 tests in 0.008s OK" in results  # the agent's script ran a unittest suite
    assert any('SELECT MAX(U0."id")' in a and a in after for a in results)


def test_a_reproductions_telling_line_is_no_traceback_frame_or_object_address():
    edit = {"command": "str_replace", "path": "/r/src/log.py", "old_str": "a", "new_str": "b"}
    messages = [
        Message("user", TASK),
        _bash("a", "python check_logger.py"),
        _out(
            "a",
            "Handler 0: <StreamHandler <stderr> (NOTSET)>\n  Formatter: <logging.Formatter object at 0x732090850250>",
        ),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/log.py has been edited.", tool_call_id="b"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["Handler 0: <StreamHandler <stderr> (NOTSET)>"]
    # a temporary directory's random name (tempfile's) is no telling line either
    messages[2] = _out("a", "Test directory: /tmp/tmpn_n85vaw\nFile permissions: 0o600")
    assert [a for a, _ in _facts(messages, "reproduction")] == ["File permissions: 0o600"]
    from ctxbench.probes.runs import _value_line

    frame = ['File "/r/src/header.py", line 288, in parse', "Test 1: String content"]
    assert _value_line(frame, {"header", "parse"}, set()) == "Test 1: String content"


def test_the_same_error_with_another_object_address_is_asked_once():
    """Two runs of the agent's scripts print the task's error, each naming the object's address: one fact."""
    error = "TypeError: <django.db.models.expressions.Exists object at 0x{}>"
    messages = [
        Message("user", TASK),
        _bash("a", "python test_simple.py"),
        _out("a", error.format("7dfb2a61dc90"), 1),
        _bash("b", "python test_original.py"),
        _out("b", error.format("7dfb91b4dc10"), 1),
        Message("assistant", "Done."),
    ]
    answers = [p.answer for p in extract_probes(Transcript("t", messages)) if p.label in ("error", "reproduction")]
    assert len(answers) == 1, answers


def test_a_debugging_scripts_error_is_exploration():
    messages = [
        Message("user", TASK),
        _bash("a", "python debug_issue2.py 2>&1"),
        _out(
            "a",
            "Traceback (most recent call last):\nValueError: The QuerySet value for an exact lookup must be limited",
            1,
        ),
        _bash("b", "python app.py"),
        _out("b", "Traceback (most recent call last):\nKeyError: 'header'", 1),
    ]
    answers = [a for a, _ in _facts(messages, "error")]
    assert "KeyError: 'header'" in answers and not any("QuerySet" in a for a in answers)


def test_other_harnesses_exit_code_headers_and_output_labels():
    autogen = read_output(
        "exitcode: 1 (execution failed)\nCode output: \nTraceback (most recent call last):\nKeyError: 1"
    )
    assert autogen.exit_code == 1 and errors(autogen.text) == ["KeyError: 1"]
    cursor = read_output("\nExit code: 0\n\nCommand output:\n\n3 passed in 0.10s\n\nCommand completed.")
    assert cursor.exit_code == 0 and cursor.lines == ["3 passed in 0.10s"]
    codex = read_output("Exit code: 1\nWall time: 0.5 seconds\nOutput:\nFAILED tests/test_a.py::test_x")
    assert codex.exit_code == 1 and codex.lines == ["FAILED tests/test_a.py::test_x"]


def test_the_suites_outcome_before_the_change_comes_right_after_the_one_after_it():
    edit = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    messages = [
        Message("user", TASK),
        _bash("a", "python -m pytest tests/test_hdr.py -q"),
        _out("a", "1 failed, 2 passed in 0.05s", 1),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="b"),
        _bash("c", "python -m pytest tests/ -q"),
        _out("c", "41 passed in 0.30s"),
        _bash("d", "python -m pytest tests/test_hdr.py -q"),
        _out("d", "3 passed in 0.05s"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "test_result")][:3] == [
        "3 passed in 0.05s",
        "1 failed, 2 passed in 0.05s",
        "41 passed in 0.30s",
    ]


def test_a_question_names_a_heredoc_script_by_the_line_that_runs_it():
    from ctxbench.probes.facts import named

    command = "cd /testbed && cat > test_x.py << 'EOF'\nprint(parse(''))\nEOF\npython test_x.py 2>&1"
    assert named(command) == "cd /testbed && cat > test_x.py << 'EOF' ... python test_x.py 2>&1"
    assert named("python repro.py") == "python repro.py" and named("python - << 'EOF'\nprint(1)\nEOF").endswith("...")


def test_an_errors_question_names_where_the_projects_code_raised_it():
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/testbed/reproduce.py", line 19, in <module>\n    sch.validate({})\n'
        '  File "/testbed/src/marshmallow/schema.py", line 894, in _invoke_field_validators\n'
        "    value = data[field_obj.attribute or field_name]\n"
        "            ~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "TypeError: 'NoneType' object is not subscriptable"
    )
    messages = [Message("user", TASK), _bash("a", "python run_me.py"), _out("a", traceback, 1)]
    ((answer, question),) = _facts(messages, "error")
    assert answer == "TypeError: 'NoneType' object is not subscriptable"
    # the line of code it ran: Python 3.11's markers under it keep the frame out of the verbatim answer
    assert question.endswith(
        "show (raised in `_invoke_field_validators`, schema.py line 894: "
        "`value = data[field_obj.attribute or field_name]`)?"
    )
    raising = traceback.replace("    value = data[field_obj.attribute or field_name]\n", "    raise TypeError(\n")
    messages = [Message("user", TASK), _bash("a", "python run_me.py"), _out("a", raising, 1)]
    ((_, question),) = _facts(messages, "error")
    assert question.endswith("show (raised in `_invoke_field_validators`, schema.py line 894)?")  # `raise` says no more


def test_the_projects_command_line_on_input_the_agent_made_is_a_reproduction_and_its_check():
    """A linter's bug shown by its own CLI on a file the agent wrote (``sqlfluff fix test.sql``), the
    same command run again after the fix; a grep whose pattern holds `|` and `;` is no such run."""
    sql = "cat > test.sql << 'EOF'\nSELECT a  FROM t\nEOF"
    edit = {"command": "str_replace", "path": "/r/src/rules/L039.py", "old_str": "x", "new_str": "y"}
    messages = [
        Message("user", TASK),
        _bash("a", sql),
        _out("a", ""),
        _bash("b", "cd /r && sqlfluff fix test.sql --rules L039 -f 2>&1"),
        _out("b", "==== finding fixable violations ====\nL:   1 | P:   9 | L039 | Unnecessary whitespace found.\n", 1),
        _bash("c", 'grep -n "L039\\|fix;" src/rules/L039.py test.sql'),
        _out("c", "3:class Rule_L039"),
        Message("assistant", "", tool_calls=(ToolCall("d", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/rules/L039.py has been edited.", tool_call_id="d"),
        _bash("e", "cd /r && sqlfluff fix test.sql --rules L039 -f 2>&1"),
        _out("e", "==== finding fixable violations ====\nFIXES: SELECT a FROM t\nAll Finished!"),
    ]
    ((answer, question),) = _facts(messages, "reproduction")
    assert answer.endswith("L: 1 | P: 9 | L039 | Unnecessary whitespace found.")
    assert question == "What did `cd /r && sqlfluff fix test.sql --rules L039 -f 2>&1` print before the fix?"
    results = _facts(messages, "test_result")
    assert results[0][1] == "What did `cd /r && sqlfluff fix test.sql --rules L039 -f 2>&1` print after the change?"
    assert not any("grep" in q for _, q in [*results, *_facts(messages, "reproduction")])


def test_a_verbose_runs_failing_tests_are_read_when_its_summary_is_cut():
    pytest_v = (
        "tests/test_hdr.py::test_parse PASSED                                      [ 33%]\n"
        "tests/test_hdr.py::TestEmpty::test_empty[''] FAILED                       [ 66%]\n"
    )
    django_v2 = (
        "test_slugify (utils_tests.test_text.TestUtilsText) ... ok\n"
        "test_strip (utils_tests.test_text.TestUtilsText) ... FAIL\n"
        "test_wrap (utils_tests.test_text.TestUtilsText) ... ERROR\n"
    )
    assert failing_tests(pytest_v) == ["tests/test_hdr.py::TestEmpty::test_empty['']"]
    assert failing_tests(django_v2) == [
        "test_strip (utils_tests.test_text.TestUtilsText)",
        "test_wrap (utils_tests.test_text.TestUtilsText)",
    ]
    edit = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    messages = [
        Message("user", TASK),
        _bash("a", "python -m pytest tests/test_hdr.py -v 2>&1 | head -5"),
        _out("a", "collected 3 items\n\n" + pytest_v),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="b"),
        _bash("c", "python -m pytest tests/test_hdr.py -q"),
        _out("c", "3 passed in 0.05s"),
    ]
    got = dict(_facts(messages, "test_result"))
    assert got["tests/test_hdr.py::TestEmpty::test_empty['']"].endswith("before the change?")


def test_the_same_tests_outcome_before_the_change_is_asked_beside_the_one_after_it():
    """Django's runner (``tests/runtests.py``), run on another module first, then on the fixed one
    before and after the change: the before is the fixed module's, whatever pipes the run had."""
    edit = {"command": "str_replace", "path": "/r/django/utils/text.py", "old_str": "a", "new_str": "b"}
    ok = "Creating test database for alias 'default'...\n....\n" + "-" * 70 + "\nRan 4 tests in 0.010s\n\nOK\n"
    failed = "..F.\n" + "-" * 70 + "\nRan 4 tests in 0.011s\n\nFAILED (failures=1)\nDestroying test database..."
    messages = [
        Message("user", TASK),
        _bash("a", "cd /r && python tests/runtests.py template_tests 2>&1 | tail -5"),
        _out("a", ok.replace("4 tests", "120 tests")),
        _bash("b", "cd /r && python tests/runtests.py utils_tests.test_text 2>&1 | tail -20"),
        _out("b", failed),
        Message("assistant", "", tool_calls=(ToolCall("c", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/django/utils/text.py has been edited.", tool_call_id="c"),
        _bash("d", "cd /r && python tests/runtests.py utils_tests.test_text -v 2 2>&1 | tail -5"),
        _out("d", ok),
    ]
    after, before = _facts(messages, "test_result")[:2]
    assert after == (
        "Ran 4 tests in 0.010s OK",
        "What did `cd /r && python tests/runtests.py utils_tests.test_text -v 2 2>&1 | tail -5` report after "
        "the change?",
    )
    assert before == (
        "Ran 4 tests in 0.011s FAILED (failures=1)",
        "What did `cd /r && python tests/runtests.py utils_tests.test_text 2>&1 | tail -20` report before the change?",
    )


def test_a_test_the_agent_added_first_does_not_mark_the_fix():
    """An agent that writes the failing test before the code's change: the run between them is a
    run before the fix (it fails), the code's edit is the fix."""
    test = {"command": "str_replace", "path": "/r/tests/test_hdr.py", "old_str": "# end", "new_str": "def test_empty()"}
    code = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    diff = "diff --git a/src/hdr.py b/src/hdr.py\ndiff --git a/tests/test_hdr.py b/tests/test_hdr.py\n"
    messages = [
        Message("user", TASK),
        Message("assistant", "", tool_calls=(ToolCall("a", "str_replace_editor", json.dumps(test)),)),
        Message("tool", "The file /r/tests/test_hdr.py has been edited.", tool_call_id="a"),
        _bash("b", "python -m pytest tests/test_hdr.py -q"),
        _out("b", "FAILED tests/test_hdr.py::test_empty - AssertionError\n1 failed, 2 passed in 0.05s", 1),
        Message("assistant", "", tool_calls=(ToolCall("c", "str_replace_editor", json.dumps(code)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="c"),
        _bash("d", "python -m pytest tests/test_hdr.py -q"),
        _out("d", "3 passed in 0.04s"),
        _bash("e", "git diff --stat"),
        _out("e", diff),
    ]
    got = dict(_facts(messages, "test_result"))
    assert got["1 failed, 2 passed in 0.05s"].endswith("before the change?")
    assert got["3 passed in 0.04s"].endswith("after the change?")


def test_a_throwaway_scripts_error_the_agent_walked_away_from_is_asked_last():
    """An edge-case script the agent wrote, ran once and dropped: its error (raised in the project's
    code) comes after the errors of the suite's runs."""
    trace = 'Traceback (most recent call last):\n  File "/r/src/hdr.py", line 9, in parse\n    h.split()\n'
    messages = [
        Message("user", TASK),
        _bash("a", "cat > check_edges.py << 'EOF'\nparse(b'')\nEOF\npython check_edges.py"),
        _out("a", trace + "AttributeError: 'bytes' object has no attribute 'split'", 1),
        _bash("b", "python -m pytest tests/test_hdr.py -q"),
        _out("b", "E   TypeError: 'NoneType' object is not iterable\n1 failed in 0.10s", 1),
    ]
    answers = [a for a, _ in _facts(messages, "error")]
    assert answers == [
        "TypeError: 'NoneType' object is not iterable",
        "File \"/r/src/hdr.py\", line 9, in parse h.split() AttributeError: 'bytes' object has no attribute 'split'",
    ]


def test_a_reproduction_that_died_on_import_is_quoted_by_its_error_not_a_frames_code():
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/r/repro.py", line 3, in <module>\n    import hdr\n'
        '  File "/r/hdr/__init__.py", line 2, in <module>\n    from hdr import tools  # noqa: F401\n'
        "    ^^^^^^^^^^^^^^^^^^^^^^\n"
        "=== parsing ===\n"  # a section title is no value either
        "ModuleNotFoundError: No module named 'numpy'"
    )
    edit = {"command": "str_replace", "path": "/r/hdr/parse.py", "old_str": "return None", "new_str": "raise"}
    messages = [
        Message("user", TASK),
        _bash("a", "python repro.py"),
        _out("a", trace, 1),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/hdr/parse.py has been edited.", tool_call_id="b"),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["ModuleNotFoundError: No module named 'numpy'"]


def test_a_reproduction_that_died_on_a_module_the_agent_then_installed_is_none():
    """The environment lacked a module and the agent installed it: the run showed nothing of the bug
    (issue 23's trivial kind "an error fixed by installing a package"), whether or not the script ran
    again before the fix. Never installed, the missing module is why the reproduction failed."""
    trace = (
        'Traceback (most recent call last):\n  File "/testbed/pkg/tz.py", line 9, in <module>\n    import pytz\n'
        "ModuleNotFoundError: No module named 'pytz'"
    )
    edit = {"command": "str_replace", "path": "/r/hdr/parse.py", "old_str": "return None", "new_str": "raise"}
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce_issue.py"),
        _out("a", trace, 1),
        _bash("b", "pip install pytz -q"),
        _out("b", ""),
        Message("assistant", "", tool_calls=(ToolCall("d", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/hdr/parse.py has been edited.", tool_call_id="d"),
    ]
    assert _facts(messages, "reproduction") == []
    never = messages[:3] + messages[5:]
    assert [a.endswith("No module named 'pytz'") for a, _ in _facts(never, "reproduction")] == [True]
    timed_out = "<exception>Command 'pip install pytz -q' timed out after 60 seconds</exception>"
    tried = [
        *messages[:4],
        Message("tool", f"{timed_out}\n<returncode>-1</returncode>", tool_call_id="b"),
        *messages[5:],
    ]
    assert [a.endswith("No module named 'pytz'") for a, _ in _facts(tried, "reproduction")] == [True]


def test_a_command_the_harness_cut_off_reports_what_happened_not_the_harness_argv():
    """mini-swe-agent's docker exec wrapper names its whole argv before what went wrong; the gold is cut at
    160 characters, so it read as the argv and never said the command timed out."""
    cut_off = (
        "<exception>An error occurred while executing the command: Command '['docker', 'exec', '-w', '/testbed', "
        "'-e', 'PAGER=cat', '-e', 'MANPAGER=cat', '-e', 'LESS=-R', '7315b52c', 'bash', '-c', 'pip install numpy -q']'"
        " timed out after 60 seconds</exception>\n<returncode>-1</returncode>\n<output>\n</output>"
    )
    assert errors(read_output(cut_off).text) == ["timed out after 60 seconds"]


def test_reading_a_test_file_or_asking_a_runner_for_help_runs_no_tests():
    """Reading tests/runtests.py, printing a runner's help or version, importing pytest to see it is there:
    none of these prints a suite's outcome."""
    for command in (
        "head -50 tests/runtests.py",
        "cat /testbed/tests/runtests.py | grep -n settings",
        "python -m pytest --help | grep -i timeout",
        "pytest --version",
        'python -c "import pytest; print(pytest.__version__)"',
        "grep -rn 'def test_' tests/test_x.py",
        "ls tests/ && sed -n 1,40p tests/runtests.py",
    ):
        assert not runs_tests(command), command
    for command in (
        "cd /testbed && ./tests/runtests.py auth_tests --verbosity 2",
        "python -m pytest tests/test_x.py -x 2>&1 | head -40",
        "ls tests && python -m pytest tests/test_x.py",
        "python -c \"import pytest; pytest.main(['tests/test_x.py'])\"",
        "go test ./... 2>&1 | tail -5",
        "find tests -name 'test_*.py' | xargs python -m pytest -q",
    ):
        assert runs_tests(command), command


def test_a_one_liner_that_finds_the_test_runner_missing_is_an_error_seen_not_a_suite():
    """`python -c "import pytest"` runs no tests, but its ModuleNotFoundError says the environment has no
    pytest (why the agent verified otherwise); another one-liner's error is the agent's slip."""
    edit = {"command": "str_replace", "path": "/testbed/src/hdr.py", "old_str": "return None", "new_str": "raise E"}
    messages = [
        Message("user", TASK),
        _bash("a", 'python -c "import pytest"'),
        _out(
            "a",
            'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
            "ModuleNotFoundError: No module named 'pytest'",
            1,
        ),
        _bash("b", "python -c \"from hdr import parse; print(parse(b''))"),
        _out("b", '  File "<string>", line 1\nSyntaxError: unterminated string literal (detected at line 1)', 1),
        Message("assistant", "", tool_calls=(ToolCall("c", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /testbed/src/hdr.py has been edited.", tool_call_id="c"),
        Message("assistant", "Done."),
    ]
    errors_seen = [a for a, _ in _facts(messages, "error")]
    assert "ModuleNotFoundError: No module named 'pytest'" in errors_seen
    assert not any("unterminated" in a for a in errors_seen)
    assert not _facts(messages, "test_result")


def test_a_reproductions_telling_line_is_no_section_header_or_installers_chatter():
    """A line ending in ':' titles what follows ("Testing parse() with an empty header:"), and pip's,
    npm's and apt's progress lines are the installer speaking: neither is what the run printed of the bug."""
    edit = {"command": "str_replace", "path": "/r/src/header.py", "old_str": "a", "new_str": "b"}
    printed = (
        "Requirement already satisfied: parse-header in /opt/conda/lib/python3.11/site-packages (1.2)\n"
        "Testing whether parse() returns None for an empty header instead of raising HeaderError:\n"
        "  result of parse(b''): None\n"
    )
    messages = [
        Message("user", TASK),
        _bash("a", "pip install -e . -q; python reproduce.py"),
        _out("a", printed),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/header.py has been edited.", tool_call_id="b"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["result of parse(b''): None"]
    from ctxbench.probes.runs import _value_line

    chatter = [
        "Collecting pytest", "  Downloading pytest-8.0.0-py3-none-any.whl (334 kB)",
        "Installing collected packages: iniconfig, pytest", "Successfully installed iniconfig-2.0.0 pytest-8.0.0",
        "WARNING: Running pip as the 'root' user can result in broken permissions", "added 312 packages in 9s",
        "npm WARN deprecated inflight@1.0.6: This module is not supported", "Setting up libgtest-dev (1.11.0-3) ...",
        "Get:1 http://archive.ubuntu.com/ubuntu jammy/universe amd64 googletest 1.11.0-3 [1.4 MB]",
    ]  # fmt: skip
    assert _value_line([*chatter, "header -> None"], {"header", "parse"}, set()) == "header -> None"
    assert _value_line(chatter, {"header", "parse"}, set()) is None


def test_a_tracebacks_last_line_is_its_error_whatever_the_exception_is_named():
    # Django's ImproperlyConfigured, a StopIteration: the line under a traceback's frames is what it raised
    django = (
        "Traceback (most recent call last):\n"
        '  File "/testbed/django/conf/__init__.py", line 190, in __init__\n'
        '    raise ImproperlyConfigured("The SECRET_KEY setting must not be empty.")\n'
        "django.core.exceptions.ImproperlyConfigured: The SECRET_KEY setting must not be empty.\n"
    )
    assert errors(django) == ["django.core.exceptions.ImproperlyConfigured: The SECRET_KEY setting must not be empty."]
    bare = 'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n    next(it)\nStopIteration\n'
    assert errors(bare) == ['File "t.py", line 3, in <module> next(it) StopIteration']
    # a log line shaped like one, with no traceback above it, is no error
    assert errors("app.views.Index: rendered in 3ms\nINFO done") == []


def test_a_suite_that_could_not_start_reports_the_exception_under_its_traceback():
    messages = [
        Message("user", TASK),
        _bash("1", "cd /testbed && python -m django test auth_tests.test_validators 2>&1 | tail -50"),
        _out(
            "1",
            "Traceback (most recent call last):\n"
            '  File "/testbed/django/conf/__init__.py", line 57, in _setup\n    raise ImproperlyConfigured(\n'
            "django.core.exceptions.ImproperlyConfigured: Requested setting TEST_RUNNER, but settings are not "
            "configured.",
        ),
    ]
    [(answer, question)] = _facts(messages, "test_result")
    assert answer.endswith(
        "django.core.exceptions.ImproperlyConfigured: Requested setting TEST_RUNNER, but settings are not configured."
    )
    assert question == (
        "What did `cd /testbed && python -m django test auth_tests.test_validators 2>&1 | tail -50` report?"
    )


def test_a_script_that_prints_a_bare_value_reproduces_with_it_and_checks_with_the_new_one():
    # `print(field.serialize(...))` shows the bug as one short number; the fix changes it
    edit = {"command": "str_replace", "path": "/r/src/fields.py", "old_str": "int(x)", "new_str": "round(x)"}
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce.py"),
        _out("a", "344"),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/fields.py has been edited.", tool_call_id="b"),
        _bash("c", "python reproduce.py"),
        _out("c", "345"),
        Message("assistant", "Done."),
    ]
    assert _facts(messages, "reproduction") == [("344", "What did `python reproduce.py` print before the fix?")]
    assert ("345", "What did `python reproduce.py` print after the change?") in _facts(messages, "test_result")
    # a decimal printed alone is a value too (`print(division(123, 15))` -> 8.2), not a version number
    fixed = [messages[0], *messages[3:5], _bash("c", "python3 /r/tests/missing_colon.py"), _out("c", "8.2")]
    assert _facts(fixed, "test_result") == [
        ("8.2", "What did `python3 /r/tests/missing_colon.py` print after the change?")
    ]
    versions = [*fixed[:3], _bash("c", "python -c 'import hdr; print(hdr.__version__)'"), _out("c", "2.4.1")]
    assert _facts(versions, "test_result") == []  # a version, with its two dots


def test_a_short_word_is_no_value_to_quote():
    edit = {"command": "str_replace", "path": "/r/src/fields.py", "old_str": "int(x)", "new_str": "round(x)"}
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce.py"),
        _out("a", "done"),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/fields.py has been edited.", tool_call_id="b"),
        _bash("c", "python reproduce.py"),
        _out("c", "ok"),
        Message("assistant", "Done."),
    ]
    assert _facts(messages, "reproduction") == []


def test_each_check_script_run_after_the_fix_reports_what_it_printed():
    # the agent checks edge cases with scripts of its own that state no verdict: their values are the result
    edit = {"command": "str_replace", "path": "/r/src/options.py", "old_str": "a = 1", "new_str": "a = 2"}
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce.py"),
        _out("a", "PK auto_created: True"),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/options.py has been edited.", tool_call_id="b"),
        _bash("c", "python reproduce.py"),
        _out("c", "PK auto_created: False"),
        _bash("d", "python test_multilevel.py"),
        _out("d", "Testing models...\nB._meta.pk.auto_created: False\nC._meta.pk.auto_created: False"),
        _bash("e", "python test_no_pk_parent.py"),
        _out("e", "ChildOfNoPK._meta.pk.auto_created: True"),
        Message("assistant", "Done."),
    ]
    results = _facts(messages, "test_result")
    assert results[0] == ("PK auto_created: False", "What did `python reproduce.py` print after the change?")
    assert (
        "ChildOfNoPK._meta.pk.auto_created: True",
        "What did `python test_no_pk_parent.py` print after the change?",
    ) in results
    assert any(q == "What did `python test_multilevel.py` print after the change?" for _, q in results)


def test_a_check_mark_states_a_verdict_at_either_end_of_its_line():
    assert verdict_lines(["✓ GROUP BY is correct (only email)", "Message 2: ✓", "a.query: SELECT 1"]) == [
        "✓ GROUP BY is correct (only email)",
        "Message 2: ✓",
    ]


def test_a_socket_librarys_progress_is_no_telling_line():
    # pwntools' "[x] Opening connection ..." around what the script printed
    edit = {"command": "str_replace", "path": "/r/src/fields.py", "old_str": "int(x)", "new_str": "round(x)"}
    messages = [
        Message("user", TASK),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/fields.py has been edited.", tool_call_id="b"),
        _bash("c", "python exploit.py"),
        _out(
            "c",
            "Warning: _curses.error: setupterm: could not find terminfo database\n\n"
            "Terminal features will not be available.  Consider setting TERM variable to your current terminal name.\n"
            "[x] Opening connection to pwn.chal.csaw.io on port 8000: Trying 172.18.0.2\n"
            "[+] Opening connection to pwn.chal.csaw.io on port 8000: Done\n"
            "Flag: FLAG{LET_US_BEGIN}\n[*] Closed connection to pwn.chal.csaw.io port 8000",
        ),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "test_result")] == ["Flag: FLAG{LET_US_BEGIN}"]


def test_a_numbered_tests_title_is_no_telling_line():
    edit = {"command": "str_replace", "path": "/r/src/fields.py", "old_str": "int(x)", "new_str": "round(x)"}
    messages = [
        Message("user", TASK),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/fields.py has been edited.", tool_call_id="b"),
        _bash("c", "python test_grid.py"),
        _out("c", "Test 4: Numpy arrays (should still work)\n  grid dimensions (3, 4, 1)"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "test_result")] == ["grid dimensions (3, 4, 1)"]


def test_per_case_lines_and_python_warnings_are_no_telling_line():
    from ctxbench.probes.runs import _value_line, per_case

    printed = ["Test: empty", "  Pass: True", "Test: None", "  Pass: True", "Message 1: ✓", "Message 2: ✓", "Done: 2/2"]
    assert per_case(printed) == {"Pass: True", "Message 1: ✓"}  # the last of a numbered series counts how far
    warned = [
        "/w/get.py:4: BytesWarning: Text is not bytes; assuming ASCII",
        '  r.recvuntil("Press ENTER")',
        "seed: 42",
    ]
    assert _value_line(warned, set(), set()) == "seed: 42"


def test_a_progress_line_ending_in_an_ellipsis_is_no_telling_line():
    """ "Examining Collector.delete() method..." says what the script is about to do, not what it found."""
    from ctxbench.probes.runs import _value_line

    lines = ["Examining Collector.delete() method...", "collector.data = defaultdict(<class 'set'>, {})"]
    assert _value_line(lines, {"collector", "delete"}, set()) == "collector.data = defaultdict(<class 'set'>, {})"
    assert _value_line(["Reversing DICOM dictionary so can look up tag from a keyword…"], set(), set()) is None


def test_a_pytest_run_that_ran_nothing_reports_the_id_it_did_not_find():
    # `pytest x.py::Cls::test_gone -xvs`: the summary counts only warnings; the error says why
    printed = (
        "collecting ... ERROR: not found: /testbed/tests/test_w.py::TestWrite::test_gone\n"
        "(no match in any of [<Class TestWrite>])\n\ncollected 0 items\n\n"
        "=============================== warnings summary ===============================\n"
        "  /opt/conda/lib/python3.11/site-packages/pkg_resources/__init__.py:2871: DeprecationWarning: x\n"
        "======================== 2 warnings in 0.04s ========================"
    )
    assert suite_summary(printed) == "ERROR: not found: /testbed/tests/test_w.py::TestWrite::test_gone"
    assert suite_summary("ERROR: file or directory not found: tests/t.py\n\nno tests ran in 0.01s") == (
        "ERROR: file or directory not found: tests/t.py"
    )
    assert suite_summary("==== 3 passed, 2 warnings in 0.1s ====") == "3 passed, 2 warnings in 0.1s"


def _edit(i: str) -> list[Message]:
    edit = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    return [
        Message("assistant", "", tool_calls=(ToolCall(i, "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id=i),
    ]


def test_a_reproduction_is_no_error_of_a_script_that_was_not_set_up():
    # Django's settings not configured, a stand-in the script made: the script's setup failed, not the code
    unset = (
        'Traceback (most recent call last):\n  File "/testbed/django/conf/__init__.py", line 57, in _setup\n'
        "    raise ImproperlyConfigured(\ndjango.core.exceptions.ImproperlyConfigured: Requested setting "
        "INSTALLED_APPS, but settings are not configured. You must either define the environment variable "
        "DJANGO_SETTINGS_MODULE or call settings.configure() before accessing settings."
    )
    mock = "AttributeError: 'MockQuerySet' object has no attribute 'all'"
    messages = [
        Message("user", TASK),
        _bash("a", "python simple_test.py"),
        _out("a", unset, 1),
        _bash("b", "python mock_test.py"),
        _out("b", mock, 1),
        _bash("c", "python check.py"),
        _out("c", "parse(''): None"),
        *_edit("d"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["parse(''): None"]
    # without the run that got through, no reproduction: the setup errors show nothing of the bug
    assert _facts(messages[:5] + messages[7:], "reproduction") == []


def test_a_reproductions_error_that_its_next_run_before_the_fix_did_not_raise_was_the_scripts():
    # the agent mended its script (an index it forgot to name) and ran it again: the bug shows after that
    first = "ValueError: Indexes passed to ModelState require a name attribute."
    messages = [
        Message("user", TASK),
        _bash("a", "python test_issue.py"),
        _out("a", first, 1),
        _bash("b", "python test_issue.py"),
        _out("b", "parse(''): None"),
        *_edit("c"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["parse(''): None"]
    # the same error again (at another line) is no mended script: the first run shows it
    at_line = 'File "/testbed/django/db/migrations/state.py", line {}, in __init__\n    raise ValueError(\n' + first
    again = list(messages)
    again[2], again[4] = _out("a", at_line.format(388), 1), _out("b", at_line.format(391), 1)
    quoted = at_line.format(388).replace("\n   ", "").replace("\n", " ")
    assert [a for a, _ in _facts(again, "reproduction")] == [quoted]


def test_a_reproduction_quotes_no_line_the_script_prints_as_written_unless_under_a_condition():
    script = (
        "cat > repro.py << 'EOF'\nfrom hdr import parse\nprint('The issue is that parse() swallows an empty header')\n"
        "r = parse('')\nprint(f'parse returned {r!r} for the empty header')\nif r is None:\n"
        "    print('ISSUE: parse returned nothing for the empty header')\nEOF\npython repro.py"
    )
    printed = (
        "The issue is that parse() swallows an empty header\nparse returned None for the empty header\n"
        "ISSUE: parse returned nothing for the empty header"
    )
    messages = [Message("user", TASK), _bash("a", script), _out("a", printed), *_edit("b"), Message("assistant", "ok")]
    (answer,) = [a for a, _ in _facts(messages, "reproduction")]
    assert answer in ("parse returned None for the empty header", "ISSUE: parse returned nothing for the empty header")
    notes = script.replace("print(f'parse returned {r!r} for the empty header')\n", "").replace(
        "if r is None:\n    print('ISSUE: parse returned nothing for the empty header')\n", ""
    )
    only_notes = [Message("user", TASK), _bash("a", notes), _out("a", printed.split("\n")[0]), *_edit("b")]
    assert _facts(only_notes, "reproduction") == []  # the agent's notes, printed as written: nothing shown


def test_a_script_for_looking_around_reproduces_with_its_error_only():
    messages = [
        Message("user", TASK),
        _bash("a", "python analyze_issue.py"),
        _out("a", "parse() at line 12 returns None when the header is empty"),
        *_edit("b"),
        Message("assistant", "Done."),
    ]
    assert _facts(messages, "reproduction") == []


def test_a_scripts_setup_error_the_agent_got_past_is_no_error_seen():
    """The agent's script ran with Django's settings not set up, then the same script ran past them: an error of
    the script's setup, so the bug's error has the slot. A runner that could not start stays a fact (no pytest: how
    the tests could be run is the agent's to carry). A setup error of its own script that no later run got past is
    no fact either: a throwaway script it never set up (issue 23's rubric), as it is no reproduction."""
    trace = 'Traceback (most recent call last):\n  File "/testbed/django/conf/__init__.py", line 57, in _setup\n'
    unset = (
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not "
        "configured. You must either define the environment variable DJANGO_SETTINGS_MODULE or call "
        "settings.configure() before accessing settings."
    )
    no_pytest = "/opt/miniconda3/bin/python: No module named pytest"
    bug = "TypeError: 'NoneType' object is not iterable"
    messages = [
        Message("user", TASK),
        _bash("a", "python repro.py"),
        _out("a", trace + unset, 1),
        _bash("b", "python repro.py"),
        _out("b", bug, 1),
        _bash("c", "cd /testbed && python -m pytest tests/test_hdr.py -x"),
        _out("c", no_pytest, 1),
        _bash("d", "cd /testbed && python tests/runtests.py hdr --verbosity 2"),
        _out("d", "Ran 12 tests in 0.051s\n\nOK"),
    ]

    def errors_seen(messages: list[Message]) -> list[str]:
        return [c.answer for c in _typed_candidates(Transcript("t", messages)) if c.label == "error"]

    assert bug in errors_seen(messages) and no_pytest in errors_seen(messages)
    assert not any(unset[:100] in a for a in errors_seen(messages))
    assert not any(unset[:100] in a for a in errors_seen(messages[:3] + messages[5:]))  # never got past it


def test_a_tox_run_reports_its_environments_result_where_its_tests_print_no_counts():
    tox4 = "py39: install_deps> pip install\n  py39: OK (12.34=setup[5.67]+cmd[6.67] seconds)\n  congratulations :)"
    assert suite_summary(tox4) == "py39: OK (12.34=setup[5.67]+cmd[6.67] seconds)"
    assert suite_summary("  py311: FAIL code 1 (3.21=setup[2.10]+cmd[1.11] seconds)\n  evaluation failed :(") == (
        "py311: FAIL code 1 (3.21=setup[2.10]+cmd[1.11] seconds)"
    )
    # tox 3: a failed environment is the verdict, whichever one passed after it
    tox3 = "ERROR:   py39: commands failed\n  py310: commands succeeded\n"
    assert suite_summary(tox3) == "ERROR: py39: commands failed"
    # the tests' own counts say more than tox's line
    assert suite_summary("===== 3 passed in 0.10s =====\n  py39: OK (1.0=setup[0.5]+cmd[0.5] seconds)") == (
        "3 passed in 0.10s"
    )


def test_the_projects_suite_that_never_ran_is_a_result_though_the_agents_own_unittest_script_ran():
    settings = "django.core.exceptions.ImproperlyConfigured: The SECRET_KEY setting must not be empty."
    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", "cd /testbed && python -m django test auth_tests.test_validators"),
        _out("b", f'Traceback (most recent call last):\n  File "/testbed/django/conf/__init__.py"\n{settings}', 1),
        _bash("c", "python run_existing_tests.py"),
        _out("c", "..\n" + "-" * 70 + "\nRan 2 tests in 0.001s\n\nOK"),
        Message("assistant", "Done."),
    ]
    results = _facts(messages, "test_result")
    assert ("Ran 2 tests in 0.001s OK", "What did `python run_existing_tests.py` report after the change?") in results
    assert (settings, "What did `cd /testbed && python -m django test auth_tests.test_validators` report?") in results
    # once the project's runner ran after it, its failure to start was superseded
    ran = [*messages[:-1], _bash("d", "python -m pytest tests/"), _out("d", "== 5 passed in 0.2s =="), messages[-1]]
    assert settings not in [a for a, _ in _facts(ran, "test_result")]


def test_a_verification_states_the_runs_verdict_not_one_cases_line():
    printed = (
        "OK:   'empty header' -> parse raises HeaderError: PASS\n"  # one case, naming the task
        "OK:   'a\\nb'          -> parse header: FAIL (rejected, as it should be)\n"
        "✓ All tests passed! The fix works correctly."
    )
    messages = [Message("user", TASK), *_edit("a"), _bash("b", "python verify.py"), _out("b", printed)]
    assert ("✓ All tests passed! The fix works correctly.", "What did `python verify.py` print after the change?") in (
        _facts(messages, "test_result")
    )


HDR_DIFF = (
    "diff --git a/src/hdr.py b/src/hdr.py\n--- a/src/hdr.py\n+++ b/src/hdr.py\n@@ -3,3 +3,3 @@ def parse(h):\n"
    "-        return None\n+        raise HeaderError\n"
)


def test_a_script_that_reads_the_projects_code_reproduces_nothing_by_what_it_prints():
    # it prints the code it read (or the agent's reading of it), not what the code does
    reads = "src = open('src/hdr.py').read()\nprint(f'parse() returns None at line 12: {src[:10]}')"

    def run(body: str, printed: str) -> list[Message]:
        return [
            Message("user", TASK),
            _bash("a", f"cat > find_parse.py << 'EOF'\n{body}\nEOF"),
            _out("a", ""),
            _bash("b", "python find_parse.py"),
            _out("b", printed),
            *_edit("c"),
            _bash("d", "git diff"),
            _out("d", HDR_DIFF),
        ]

    assert _facts(run(reads, "parse() returns None at line 12: return None"), "reproduction") == []
    calls = "from hdr import parse\nprint(f'parse() returned {parse(b\"\")}')"
    assert _facts(run(calls, "parse() returned None"), "reproduction") == [
        ("parse() returned None", "What did `python find_parse.py` print before the fix?")
    ]


def test_a_run_the_environment_stopped_is_quoted_by_its_error_and_a_mended_one_gives_way():
    # the first run died on a missing module; once installed, the same script raised the task's error
    missing = (
        'Traceback (most recent call last):\n  File "/testbed/repro.py", line 1, in <module>\n'
        "    from hdr import parse\n"
        '  File "/testbed/src/hdr.py", line 2, in <module>\n'
        "    import pytz\nModuleNotFoundError: No module named 'pytz'"
    )
    messages = [
        Message("user", TASK),
        _bash("a", "python repro.py"),
        _out("a", missing, 1),
        _bash("b", "pip install pytz && python repro.py"),
        _out("b", "HeaderError: parse() returns None for an empty header", 1),
        *_edit("c"),
        _bash("d", "git diff"),
        _out("d", HDR_DIFF),
    ]
    # the missing module was gone when the agent ran the script again before the fix: that run is the reproduction
    assert [a for a, _ in _facts(messages, "reproduction")] == ["HeaderError: parse() returns None for an empty header"]
    # never got past it: the missing module is all the reproduction showed
    assert [a for a, _ in _facts(messages[:3] + messages[5:], "reproduction")] == [
        "File \"/testbed/src/hdr.py\", line 2, in <module> import pytz ModuleNotFoundError: No module named 'pytz'"
    ]


def test_googletest_and_ponytest_runs_report_their_counts_and_failing_tests():
    gtest = (
        "[==========] 3 tests from 1 test suite ran. (0 ms total)\n[  PASSED  ] 2 tests.\n"
        "[  FAILED  ] 1 test, listed below:\n[  FAILED  ] ParseTest.EmptyHeader (2 ms)\n\n 1 FAILED TEST\n"
    )
    assert suite_summary(gtest) == "[ PASSED ] 2 tests. [ FAILED ] 1 test, listed below:"
    assert failing_tests(gtest) == ["ParseTest.EmptyHeader"]
    passed = "[==========] 3 tests from 1 test suite ran.\n[  PASSED  ] 3 tests.\n"
    assert suite_summary(passed) == "[ PASSED ] 3 tests."
    pony = "---- Passed: 41\n**** FAILED: 1 test, listed below:\n**** FAILED: builtin/String.add\n"
    assert suite_summary(pony) == "---- Passed: 41 **** FAILED: 1 test, listed below:"
    assert failing_tests(pony) == ["builtin/String.add"]


def test_a_check_that_states_no_verdict_is_quoted_by_what_it_computed_not_its_note():
    note = "Expected: parse() raises HeaderError instead of returning None for an empty header"
    script = (
        f"cat > check_empty.py << 'EOF'\nfrom hdr import parse\nprint('{note}')\nprint(f'got: {{parse(b\"\")!r}}')\nEOF"
    )
    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", script),
        _out("b", ""),
        _bash("c", "python check_empty.py"),
        _out("c", f"{note}\ngot: HeaderError('empty')"),
        _bash("d", "git diff"),
        _out("d", HDR_DIFF),
    ]
    assert [a for a, _ in _facts(messages, "test_result")] == ["got: HeaderError('empty')"]


def test_a_check_run_on_both_sides_of_a_fix_edit_is_quoted_by_the_line_the_fix_changed():
    # a second script, run between the fix's two edits and again after the last one, states no verdict: what
    # the edit changed in its output is the result (not its first lines, the same on both sides)
    lines = "Value: [b'\\x01', b'\\x02']\nTrying to write OB...\nFile size: 12 bytes\nHeader: DICM\n"
    script = (  # its verdict printed as written, in a try block once the write went through: a finding
        "cat > test_write.py << 'EOF'\nprint('Trying to write OB...')\ntry:\n    write(ds)\n"
        "    print('Write succeeded')\nexcept Exception as e:\n    print(f'Write error: {e}')\nEOF\n"
    )
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce.py"),
        _out("a", "parse(b''): None"),
        *_edit("b"),
        _bash("c", "python reproduce.py"),
        _out("c", "parse(b''): HeaderError('empty')"),
        _bash("d", f"{script}python test_write.py"),
        _out("d", lines + "Write error: TypeError: a bytes-like object is required, not 'MultiValue'"),
        *_edit("e"),
        _bash("f", "python test_write.py"),
        _out("f", lines + "Write succeeded"),
        _bash("h", "git diff"),
        _out("h", HDR_DIFF),
    ]
    asked = "What did `python test_write.py` print after the change?"
    check = [a for a, q in _facts(messages, "test_result") if q == asked]
    assert len(check) == 1 and check[0].endswith("Write succeeded")  # with its label line above, unchanged
    rewritten = [  # the script rewritten between its runs: what changed may be the script's doing, not the fix's
        *messages[:9],
        _bash("g", "cat > test_write.py << 'EOF'\nprint('other')\nEOF\n"),
        _out("g", ""),
        *messages[9:],
    ]
    assert asked not in [q for _, q in _facts(rewritten, "test_result")]


def test_a_check_whose_every_case_passed_as_fixed_is_quoted_by_that_line():
    # each case prints the same verdict, that it is fixed: with no failure and no overall verdict, that is the run's
    printed = "1. parse(b'')\n   Result: HeaderError\n   ✓ PASS - Fixed!\n2. parse(b'a')\n   Result: Header\n"
    printed += "   ✓ PASS - Fixed!"
    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", "python test_cases.py"),
        _out("b", printed),
        _bash("c", "git diff"),
        _out("c", HDR_DIFF),
    ]
    assert [a for a, _ in _facts(messages, "test_result")] == ["✓ PASS - Fixed!"]
    failing = [*messages[:4], _out("b", printed + "\n3. parse(None)\n   ✗ FAIL")]  # one case failed: no verdict
    assert "✓ PASS - Fixed!" not in [a for a, _ in _facts(failing, "test_result")]
    plain = [*messages[:4], _out("b", printed.replace(" - Fixed!", ""))]  # each case's bare "✓ PASS" tells nothing
    assert "✓ PASS" not in [a for a, _ in _facts(plain, "test_result")]


def test_the_same_tests_run_again_with_other_options_are_one_suite_asked_at_its_last_run():
    # `pytest t.py -v | tail -50` then `pytest t.py -v | tail -20`: one suite; its last run is the verification
    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", "cd /r && python -m pytest tests/test_hdr.py -v 2>&1 | tail -50"),
        _out("b", "tests/test_hdr.py::test_empty PASSED\n========== 12 passed in 0.32s =========="),
        _bash("c", "cd /r && python -m pytest tests/test_hdr.py -v 2>&1 | tail -20"),
        _out("c", "tests/test_hdr.py::test_empty PASSED\n========== 12 passed in 0.21s =========="),
        _bash("d", "git diff"),
        _out("d", HDR_DIFF),
    ]
    assert [a for a, _ in _facts(messages, "test_result")] == ["12 passed in 0.21s"]


def test_a_script_named_as_the_reproduction_goes_before_other_scripts_that_ran_as_cleanly():
    messages = [
        Message("user", TASK),
        _bash("a", "python test_header_parsing.py"),
        _out("a", "header fields: ['Host', 'Accept']"),
        _bash("b", "python reproduce_issue.py"),
        _out("b", "parse(''): None"),
        *_edit("c"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["parse(''): None"]


def test_a_command_that_exits_on_a_framework_not_set_up_reproduces_nothing_though_no_traceback_shows_it():
    messages = [
        Message("user", TASK),
        _bash("a", "python repro_full.py"),
        _out("a", "No installed app with label 'header'.", 2),  # Django's CommandError, printed without a traceback
        _bash("b", "python check_header.py"),
        _out("b", "parse(''): None"),
        *_edit("c"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["parse(''): None"]


def test_a_reruns_verdict_is_a_line_the_script_did_not_print_before_the_fix():
    before = "SUCCESS: parse returns the header for a non-empty header\nFAIL: parse('') returned None"
    after = "SUCCESS: parse returns the header for a non-empty header\nSUCCESS: raised for ''"
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce.py"),
        _out("a", before),
        *_edit("b"),
        _bash("c", "python reproduce.py"),
        _out("c", after),
        Message("assistant", "Done."),
    ]
    assert ("SUCCESS: raised for ''", "What did `python reproduce.py` print after the change?") in _facts(
        messages, "test_result"
    )


def test_an_edit_that_mends_what_the_environment_removed_is_not_the_fix():
    removed = "AttributeError: `np.Inf` was removed in the NumPy 2.0 release. Use `np.inf` instead."
    messages = [
        Message("user", TASK),
        _bash("a", "python reproduce.py"),
        _out("a", removed, 1),
        _bash("m", "sed -i 's/np\\.Inf/np.inf/g' src/hdr.py"),
        _out("m", ""),
        _bash("b", "python reproduce.py"),
        _out("b", "parse(''): None"),
        *_edit("c"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["parse(''): None"]


def test_a_unittest_run_whose_test_module_did_not_import_ran_no_test():
    # unittest counts the module it could not load as one test that errored: nothing of the project's ran
    loader = (
        "E\n======================================================================\n"
        "ERROR: forms_tests (unittest.loader._FailedTest.forms_tests)\n"
        "----------------------------------------------------------------------\n"
        "ImportError: Failed to import test module: forms_tests\nTraceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.11/unittest/loader.py", line 154, in loadTestsFromName\n'
        "    module = __import__(module_name)\nModuleNotFoundError: No module named 'forms_tests'\n\n\n"
        "----------------------------------------------------------------------\n"
        "Ran 1 test in 0.000s\n\nFAILED (errors=1)"
    )
    assert suite_summary(loader) == "ModuleNotFoundError: No module named 'forms_tests'"
    assert failing_tests(loader) == []
    real = loader.replace("forms_tests (unittest.loader._FailedTest.forms_tests)", "test_x (forms_tests.T.test_x)")
    assert suite_summary(real) == "Ran 1 test in 0.000s FAILED (errors=1)"
    assert failing_tests(real) == ["test_x (forms_tests.T.test_x)"]


def test_a_pytest_run_whose_every_test_errored_in_setup_reports_what_its_setup_raised():
    setup = (
        "E   django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not "
        "configured.\n=========================== short test summary info ============================\n"
        "ERROR tests/model_fields/test_m2m.py - django.core.exceptions.Improperl...\n"
        "========================= 2 warnings, 1 error in 0.21s ========================="
    )
    assert suite_summary(setup) == (
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, "
        "but settings are not configured."
    )
    ran = setup.replace("2 warnings, 1 error", "3 passed, 1 error")  # some tests ran: their counts say it
    assert suite_summary(ran) == "3 passed, 1 error in 0.21s"


def test_a_suite_run_that_selected_no_test_comes_after_the_runs_that_ran_some():
    nothing = (
        "ERROR: not found: /r/tests/test_hdr.py::TestParse::test_empty\n============ no tests ran in 0.01s ============"
    )
    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", "python -m pytest tests/test_hdr.py -q"),
        _out("b", "============ 12 passed in 0.32s ============"),
        _bash("c", "python -m pytest tests/test_hdr.py::TestParse::test_empty -q"),
        _out("c", nothing, 4),
        Message("assistant", "Done."),
    ]
    answers = [a for a, _ in _facts(messages, "test_result")]
    assert answers[0] == "12 passed in 0.32s"
    assert "ERROR: not found: /r/tests/test_hdr.py::TestParse::test_empty" in answers


def test_mini_swe_agents_mswea_bash_command_fence_is_an_action():
    messages = [
        Message("user", TASK),
        Message("assistant", "Run it.\n\n```mswea_bash_command\npython reproduce.py\n```"),
        Message("user", "<returncode>0</returncode>\n<output>\nparse(''): None\n</output>"),
        Message(
            "assistant", "Fix it.\n\n```mswea_bash_command\nsed -i 's/return None/raise HeaderError/' src/hdr.py\n```"
        ),
        Message("user", "<returncode>0</returncode>\n<output>\n</output>"),
        Message("assistant", "Done."),
    ]
    assert [a for a, _ in _facts(messages, "reproduction")] == ["parse(''): None"]
    assert [a for a, _ in _facts(messages, "file_changed")] == ["src/hdr.py"]


def test_an_error_the_very_next_command_mended_is_a_slip_or_asked_last():
    """A command run again at once with more to it (a flag the tool asked for) that then ran clean: its
    error was a slip. An error the next command's install mended (the retry got past it): asked after
    the code's errors (the environment mended at once). An install that failed mends nothing."""
    tty = (
        'Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/click/ui.py", line 8, in getchar\n'
        "    f = open('/dev/tty')\nOSError: [Errno 6] No such device or address: '/dev/tty'"
    )
    backend = "RuntimeError: backend 'fast' isn't available or couldn't be imported"
    messages = [
        Message("user", TASK),
        _bash("a", "hdrtool fix sample.hdr"),
        _out("a", tty, 1),
        _bash("b", "hdrtool fix sample.hdr --force"),
        _out("b", "1 fix applied", 0),
        _bash("c", "hdrtool check sample.hdr"),
        _out("c", backend, 1),
        _bash("d", "pip install hdrparse"),
        _out("d", "Successfully installed hdrparse-1.0", 0),
        _bash("e", "hdrtool check sample.hdr"),
        _out("e", "E   TypeError: 'NoneType' object is not iterable", 1),
    ]
    assert [a for a, _ in _facts(messages, "error")] == ["TypeError: 'NoneType' object is not iterable", backend]
    failed = [*messages[:8], _out("d", "E: Unable to locate package hdrparse", 100), *messages[9:]]
    assert [a for a, _ in _facts(failed, "error")][:2] == [backend, "TypeError: 'NoneType' object is not iterable"]


def test_inline_unittest_runs_of_a_module_and_of_one_test_of_it_are_two_suites():
    # `python -c "...unittest..."` twice: the module's 72 tests, then one test of it; each run's code differs and the
    # command's first line is all they share, so the count tells the suites apart (the 72 tests are not a rerun)
    def inline(name: str) -> str:
        return f"cd /r && python -c \"\nimport unittest\nunittest.main(module=None, argv=['x', '{name}'])\n\""

    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", inline("tests.test_hdr")),
        _out("b", f"....\n{'-' * 70}\nRan 72 tests in 0.303s\n\nOK"),
        _bash("c", inline("tests.test_hdr.HdrTests.test_empty")),
        _out("c", f".\n{'-' * 70}\nRan 1 test in 0.000s\n\nOK"),
    ]
    answers = [a for a, _ in _facts(messages, "test_result")]
    assert answers[:2] == ["Ran 1 test in 0.000s OK", "Ran 72 tests in 0.303s OK"]


def test_the_tests_the_fix_made_pass_are_asked_before_later_runs_of_other_tests():
    # test_empty failed after the first edit, passed once the fix was done; the agent then ran two other tests:
    # the one that went from failing to passing is what the fix was checked by
    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", "cd /r && python -m pytest tests/test_hdr.py::test_empty -x 2>&1 | tail -5"),
        _out("b", "FAILED tests/test_hdr.py::test_empty - AssertionError\n===== 1 failed, 2 warnings in 0.06s ====="),
        *_edit("c"),
        _bash("d", "cd /r && python -m pytest tests/test_hdr.py::test_empty -x 2>&1 | tail -5"),
        _out("d", "===== 1 passed, 2 warnings in 0.02s ====="),
        _bash("e", "cd /r && python -m pytest tests/test_hdr.py::test_long -x 2>&1 | tail -5"),
        _out("e", "===== 4 passed, 2 warnings in 0.02s ====="),
        _bash("f", "cd /r && python -m pytest tests/test_hdr.py::test_bytes -x 2>&1 | tail -5"),
        _out("f", "===== 6 passed, 2 warnings in 0.01s ====="),
    ]
    assert [a for a, _ in _facts(messages, "test_result")][0] == "1 passed, 2 warnings in 0.02s"


def test_a_failure_stated_as_what_should_happen_contradicts_no_verdict_and_is_none():
    # a check's title that says the old code should fail, an error it expected: no failure reported; a failure it
    # expected (the old code's, in a script that runs old and new) is no verdict of the run
    titled = ["Test 1: Single Array instance (should fail with current code)", "PASS: Created PVSystem", "All passed!"]
    assert not contradicted(titled)
    assert not contradicted(["ValueError raised (expected)", "✓ SUCCESS"]) and contradicted(["ValueError raised"])
    assert contradicted(["Test 2: empty list", "FAILED: got None"])
    assert verdict_lines(["✓ Failed as expected: object of type 'Array' has no len()"]) == []
    raises = ["✓ Empty arrays correctly raises ValueError"]
    assert verdict_lines(raises) == raises


def test_own_scripts_setup_a_path_slip_and_a_name_its_edit_left_undefined_are_no_errors_seen():
    """Errors of the agent's own scripts that say nothing of the code: an app its settings made up that
    would not load, the project not importable where the script ran (/tmp), and a name its own edit of a
    source file left undefined (an import it forgot), mended by its next edit of that file."""
    setup = (
        'Traceback (most recent call last):\n  File "/testbed/test_issue.py", line 5, in <module>\n'
        "    django.setup()\nModuleNotFoundError: No module named 'test_app'"
    )
    slip = (
        'Traceback (most recent call last):\n  File "/testbed/check_hdr.py", line 2, in <module>\n    parse(b"")\n'
        '  File "/testbed/src/hdr.py", line 9, in parse\n    raise HeaderError(textwrap.shorten(h, 9))\n'
        "NameError: name 'textwrap' is not defined"
    )
    imports = {
        "command": "str_replace",
        "path": "/testbed/src/hdr.py",
        "old_str": "import re",
        "new_str": "import re\nimport textwrap",
    }
    fix = {"command": "str_replace", "path": "/testbed/src/hdr.py", "old_str": "return None", "new_str": "raise E"}
    messages = [
        Message("user", TASK),
        _bash(
            "a",
            "cat > test_issue.py << 'EOF'\nsettings.configure(INSTALLED_APPS=['test_app'])\nEOF\npython test_issue.py",
        ),
        _out("a", setup, 1),
        _bash("b", "cd /tmp && python -c 'import src.hdr'"),
        _out("b", "ModuleNotFoundError: No module named 'src'", 1),
        Message("assistant", "", tool_calls=(ToolCall("c", "str_replace_editor", json.dumps(fix)),)),
        Message("tool", "The file /testbed/src/hdr.py has been edited.", tool_call_id="c"),
        _bash("d", "cd /testbed && python check_hdr.py"),
        _out("d", slip, 1),
        Message("assistant", "", tool_calls=(ToolCall("e", "str_replace_editor", json.dumps(imports)),)),
        Message("tool", "The file /testbed/src/hdr.py has been edited.", tool_call_id="e"),
        _bash("f", "python -m pytest tests/test_hdr.py -q"),
        _out("f", "E   TypeError: 'NoneType' object is not iterable\n1 failed in 0.10s", 1),
    ]
    assert [a for a, _ in _facts(messages, "error")] == ["TypeError: 'NoneType' object is not iterable"]


def test_a_cases_title_with_a_failure_word_in_its_prose_contradicts_no_verdict():
    # "6. Nested field (valid type but fails validation):" names the case that follows, not its outcome; a heading
    # that is the failure word itself, or a marked one, still reports one
    titled = ["6. Nested with field validator (valid type but fails validation):", "Result: {}", "All tests passed!"]
    assert not contradicted(titled)
    assert contradicted(["FAILED:", "test_empty"]) and contradicted(["✗ Nested field fails validation:", "x"])
    messages = [Message("user", TASK), *_edit("a"), _bash("b", "python check.py"), _out("b", "\n".join(titled))]
    verdict = ("All tests passed!", "What did `python check.py` print after the change?")
    assert verdict in _facts(messages, "test_result")


def test_an_empty_collection_printed_is_a_value_like_none():
    # of the lines a rerun changed, "handlers: []" (what the fix emptied) says more than a level's number
    assert _value_line(["Logger level: 0", "Logger handlers: []"], set(), set()) == "Logger handlers: []"
    assert _value_line(["Loaded items from list[] type", "Logger level: 0"], set(), set()) == "Logger level: 0"


def test_a_setup_steps_success_is_no_verdict():
    # "Successfully imported x" says the script got going, not that the fix works, though it names the task
    lines = ["✓ Successfully imported the header parser", "Module loaded successfully", "SUCCESS: The fix works!"]
    assert verdict_lines(lines) == lines[2:]
    messages = [Message("user", TASK), *_edit("a"), _bash("b", "python final.py"), _out("b", "\n".join(lines))]
    assert [a for a, _ in _facts(messages, "test_result")][0] == "SUCCESS: The fix works!"


def test_a_check_that_failed_at_its_run_before_is_asked_first_by_what_its_pass_says_new():
    # integration.py failed after the first edit and passed after the second: the fix made it pass; a later check
    # that only ever passed comes after it, and of integration.py's verdicts the one it did not print when failing
    messages = [
        Message("user", TASK),
        *_edit("a"),
        _bash("b", "python integration.py"),
        _out("b", "FAILURE: parse returned None for an empty header\nSUCCESS: long header parsed"),
        *_edit("c"),
        _bash("d", "python integration.py"),
        _out("d", "SUCCESS: empty header raises HeaderError\nSUCCESS: long header parsed"),
        _bash("e", "python edge.py"),
        _out("e", "All edge cases passed!"),
    ]
    assert [a for a, _ in _facts(messages, "test_result")][:2] == [
        "SUCCESS: empty header raises HeaderError",
        "All edge cases passed!",
    ]


HDR_FIX = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
HDR_TRACE = 'Traceback (most recent call last):\n  File "/r/src/hdr.py", line 9, in parse\n    h.split()\n'


def _errors(messages: list[Message]) -> list[str]:
    """The error candidates, best first, as read (before a gold read as two types is kept under the first)."""
    return [c.answer for c in _typed_candidates(Transcript("t", messages)) if c.label == "error"]


def test_a_test_runner_that_could_not_start_gives_way_when_another_runner_ran_the_tests():
    """pytest missing and Django's runner not set up, then the project's own runner counted tests: the suite
    ran another way (asked as a test result), so those runs' errors come after the code's errors, even after a
    throwaway script's. With no later runner's run that counted tests, why the suite could not run keeps its
    place."""
    setup = (
        'Traceback (most recent call last):\n  File "/r/django/conf/__init__.py", line 64, in _setup\n'
        "    raise ImproperlyConfigured(\n"
        "django.core.exceptions.ImproperlyConfigured: Requested setting TEST_RUNNER, but settings are not configured."
    )
    runs = [
        Message("user", TASK),
        _bash("a", "python -m pytest tests/test_hdr.py -q"),
        _out("a", "/usr/bin/python: No module named pytest", 1),
        _bash("b", "python -m django test hdr_tests"),
        _out("b", setup, 1),
        _bash("c", "cat > check_edges.py << 'EOF'\nparse(b'')\nEOF\npython check_edges.py"),
        _out("c", HDR_TRACE + "AttributeError: 'bytes' object has no attribute 'split'", 1),
    ]
    suite = [_bash("f", "python tests/runtests.py hdr_tests"), _out("f", "Ran 3 tests in 0.01s\n\nOK")]
    thrown = (
        "File \"/r/src/hdr.py\", line 9, in parse h.split() AttributeError: 'bytes' object has no attribute 'split'"
    )
    superseded = [
        "line 64, in _setup raise ImproperlyConfigured( django.core.exceptions.ImproperlyConfigured: Requested "
        "setting TEST_RUNNER, but settings are not configured.",
        "/usr/bin/python: No module named pytest",
    ]
    assert _errors([*runs, *suite]) == [thrown, superseded[1], superseded[0]]
    assert _errors(runs) == [superseded[0], superseded[1], thrown]


def test_an_error_the_agent_answered_by_rewriting_its_own_script_is_asked_after_the_codes():
    """Its own script called the code wrongly (an error raised in the project's code, or its own assert that
    expected the wrong thing), and the agent's next write was of a script of its own, not of the code: the
    script's misuse, asked after the suite's error. Answered by an edit of the code, it is a finding and stays."""
    misuse = [
        Message("user", TASK),
        _bash("a", "cat > check_edges.py << 'EOF'\nparse(b'')\nEOF\npython check_edges.py"),
        _out("a", HDR_TRACE + "AttributeError: 'bytes' object has no attribute 'split'", 1),
        _bash("b", "cat > check_edges.py << 'EOF'\nparse('')\nEOF\npython check_edges.py"),
        _out("b", "ok"),
        _bash("c", "python check_edges.py"),
        _out("c", "ok"),
        _bash("d", "python -m pytest tests/test_hdr.py -q"),
        _out("d", "E   TypeError: 'NoneType' object is not iterable\n1 failed in 0.10s", 1),
    ]
    answers = _errors(misuse)
    assert answers[0] == "TypeError: 'NoneType' object is not iterable", answers
    wrong_assert = [
        *misuse[:1],
        _bash("a", "python test_edge.py"),
        _out("a", "AssertionError: Expected 'None', got ''", 1),
        _bash("b", "cat > test_edge_fixed.py << 'EOF'\nassert parse('') == ''\nEOF"),
        _out("b", ""),
        *misuse[-2:],
    ]
    answers = _errors(wrong_assert)
    assert answers[0] == "TypeError: 'NoneType' object is not iterable", answers
    finding = [
        *misuse[:3],
        Message("assistant", "", tool_calls=(ToolCall("e", "str_replace_editor", json.dumps(HDR_FIX)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="e"),
        _bash("c", "python check_edges.py"),
        _out("c", "ok"),
        *misuse[-2:],
    ]
    answers = _errors(finding)
    assert answers[0].endswith("AttributeError: 'bytes' object has no attribute 'split'"), answers
    # a script that digs into the error next is no rewrite of the one that showed it
    digging = [
        *misuse[:3],
        _bash("b", "cat > debug_split.py << 'EOF'\nprint(type(b''))\nEOF"),
        _out("b", ""),
        *misuse[5:],
    ]
    answers = _errors(digging)
    assert answers[0].endswith("AttributeError: 'bytes' object has no attribute 'split'"), answers


def test_a_run_with_many_checks_after_the_fix_is_asked_four_of_their_results():
    # test results are most of what an engineer needs of a run's end (the suite, the rerun, the checks): four slots
    checks = [f"check_{n}.py" for n in range(5)]
    runs = [m for n, c in enumerate(checks) for m in (_bash(f"r{n}", f"python {c}"), _out(f"r{n}", f"Case {c}: OK!"))]
    probes = extract_probes(Transcript("t", [Message("user", TASK), *_edit("a"), *runs]))
    assert len([p for p in probes if p.label == "test_result"]) == 4


def test_an_error_the_agent_put_on_its_own_script_is_no_error_seen():
    """The agent's next words after a run of its own script say the script is at fault ("There's a bug in my
    test.", "Let me fix the test script:"): that script's error says nothing of the code. A missing module is
    the environment's, whatever the agent makes of it; its other words leave the error asked."""

    def errors_after(output: str, reply: str) -> list[str]:
        return _errors(
            [
                Message("user", TASK),
                _bash("a", "cat > check_watch.py << 'EOF'\nwatch('/tmp/nope')\nEOF\npython check_watch.py"),
                _out("a", output, 1),
                Message("assistant", reply, tool_calls=(ToolCall("b", "bash", json.dumps({"command": "ls"})),)),
                _out("b", "check_watch.py"),
            ]
        )

    raised = HDR_TRACE + "KeyError: PosixPath('/tmp/nope')"
    assert errors_after(raised, "There's a bug in my test. Let me look at the directory first.") == []
    assert errors_after(raised, "Let me fix the test script:") == []
    assert errors_after(raised, "So `parse` fails on a missing directory.") == [
        "File \"/r/src/hdr.py\", line 9, in parse h.split() KeyError: PosixPath('/tmp/nope')"
    ]
    assert errors_after("ModuleNotFoundError: No module named 'sqlparse'", "Let me fix the test script:") == [
        "ModuleNotFoundError: No module named 'sqlparse'"
    ]


def test_a_suite_that_could_not_start_on_a_module_the_agent_then_installed_is_asked_after_its_checks():
    """Django's runner died importing `sqlparse`, the agent's next command installed it and it verified by its own
    script: the environment, mended at once (the rubric's trivial kind), so the check's verdict is asked before it.
    A runner that could not start on a module nobody installed keeps its place before the check."""
    missing = (
        'Traceback (most recent call last):\n  File "/testbed/django/db/backends/sqlite3/introspection.py", line 4, '
        "in <module>\n    import sqlparse\nModuleNotFoundError: No module named 'sqlparse'"
    )
    runner = [
        Message("user", TASK),
        *_edit("d"),
        _bash("a", "cd /testbed && python -m django test hdr_tests --settings=tests.test_sqlite"),
        _out("a", missing, 1),
    ]
    check = [
        _bash("c", "cat > verify_hdr.py << 'EOF'\nparse(b'')\nEOF\npython verify_hdr.py"),
        _out("c", "HeaderError raised for an empty header\nSUCCESS: parse() rejects an empty header"),
    ]
    install = [_bash("b", "pip install sqlparse -q"), _out("b", "WARNING: Running pip as the 'root' user")]
    mended = [a for a, _ in _facts([*runner, *install, *check], "test_result")]
    assert mended[0] == "SUCCESS: parse() rejects an empty header"
    assert mended[-1].endswith("No module named 'sqlparse'")
    kept = [a for a, _ in _facts([*runner, *check], "test_result")]
    assert kept[0].endswith("No module named 'sqlparse'")


def test_an_inline_checks_verdict_that_names_nothing_is_not_asked():
    """`python -c "..."` printing only "Test passed!": neither the question (inline code, shown as `...`) nor the
    answer names what was checked (the rubric's trivial kind), so a script's verdict naming the case is asked.
    An inline check's verdict that names the case keeps its place."""
    inline = (
        "cd /testbed && python -c \"\nfrom hdr import parse\nassert parse(b'') is not None\nprint('Test passed!')\n\""
    )
    messages = [
        Message("user", TASK),
        *_edit("d"),
        _bash("c", "cat > verify_hdr.py << 'EOF'\nparse(b'')\nEOF\npython verify_hdr.py"),
        _out("c", "SUCCESS: parse() rejects an empty header"),
        _bash("e", inline),
        _out("e", "Test passed!"),
    ]
    answers = [a for a, _ in _facts(messages, "test_result")]
    assert answers[0] == "SUCCESS: parse() rejects an empty header"
    assert "Test passed!" not in answers
    named = [*messages[:-1], _out("e", "Test passed: parse(b'') raises HeaderError")]
    assert [a for a, _ in _facts(named, "test_result")][0] == "Test passed: parse(b'') raises HeaderError"


def test_a_scripts_all_passed_is_its_verdict_not_one_of_its_marked_cases():
    edit = {"command": "str_replace", "path": "/r/src/hdr.py", "old_str": "return None", "new_str": "raise HeaderError"}
    cases = "✓ PASS: empty header raises HeaderError\n✓ PASS: parse of a header with a value\n✅ All tests passed!"
    messages = [
        Message("user", TASK),
        Message("assistant", "", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
        Message("tool", "The file /r/src/hdr.py has been edited.", tool_call_id="b"),
        _bash("c", "python check_header.py"),
        _out("c", cases),
        Message("assistant", "Done."),
    ]
    answers = [a for a, _ in _facts(messages, "test_result")]
    assert "✅ All tests passed!" in answers and "✓ PASS: empty header raises HeaderError" not in answers


def test_an_argument_the_command_misnamed_is_a_slip_not_an_error_seen():
    """pytest given a test id that does not exist (`ERROR: not found: .../test_filewriter.py::TestWriteFile::
    test_write_OL_implicit_little`, the agent then grepped for the right name) or `cp` of a backup never made
    (`cp: cannot stat 'django/utils/deconstruct.py.backup'`): the command named a thing wrongly, which says
    nothing of the code (two mini-swe-agent DeepSeek runs). An error of the code the same run shows stays."""
    node = "pydicom/tests/test_filewriter.py::TestWriteFile::test_write_OL_implicit_little"
    messages = [
        Message(
            "user", "<pr_description>\nError : a bytes-like object is required, not 'MultiValue'\n</pr_description>"
        ),
        _bash("r", "cd /testbed && python reproduce.py"),
        _out(
            "r", "Traceback (most recent call last):\nTypeError: a bytes-like object is required, not 'MultiValue'", 1
        ),
        *_edit("e"),
        _bash("t", f"cd /testbed && python -m pytest {node} -xvs 2>&1 | tail -50"),
        _out(
            "t",
            f"collecting ... collected 0 items\n\nERROR: not found: /testbed/{node}\n(no match in any of [<Module>])",
        ),
        _bash("g", "grep -n 'def test_write_OL' pydicom/tests/test_filewriter.py"),
        _out("g", "1320:    def test_write_OL_implicit_little(self):"),
        _bash("c", "cd /testbed && cp django/utils/deconstruct.py.backup django/utils/deconstruct.py"),
        _out("c", "cp: cannot stat 'django/utils/deconstruct.py.backup': No such file or directory", 1),
        _bash("s", "cd /testbed && git status"),
        _out("s", "On branch main"),
    ]
    got = _errors(messages)
    assert got == ["TypeError: a bytes-like object is required, not 'MultiValue'"], got
