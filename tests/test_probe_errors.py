"""Error lines read from what a command printed (ctxbench/probes/outputs.py ``errors``), for agents working in
other languages than Python: each output below is shaped like the tool's real one (JVM, Go, tsc, npm, rustc and
cargo, gcc and ld)."""

from ctxbench.probes.outputs import errors


def test_a_java_exception_is_read_with_its_message_and_the_cause_wins():
    npe = (
        'Exception in thread "main" java.lang.NullPointerException: Cannot invoke "String.length()" because "s"'
        " is null\n\tat com.example.Main.process(Main.java:14)\n\tat com.example.Main.main(Main.java:8)\n"
    )
    assert errors(npe) == ['java.lang.NullPointerException: Cannot invoke "String.length()" because "s" is null']
    caused = (
        'Exception in thread "main" java.lang.RuntimeException: load failed\n'
        "\tat com.example.App.main(App.java:20)\n"
        "Caused by: java.io.FileNotFoundException: config.yml (No such file or directory)\n"
        "\tat java.base/java.io.FileInputStream.open0(Native Method)\n\t... 1 more\n"
    )
    assert errors(caused)[-1] == "java.io.FileNotFoundException: config.yml (No such file or directory)"
    javac = "Main.java:5: error: ';' expected\n        int x = 3\n                 ^\n1 error\n"
    assert errors(javac) == ["Main.java:5: error: ';' expected"]


def test_a_go_panic_a_failed_go_test_and_a_compile_error():
    panic = (
        "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n"
        "\t/app/main.go:8 +0x1d\nexit status 2\n"
    )
    assert errors(panic) == ["panic: runtime error: index out of range [5] with length 3"]
    failed = (
        "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n"
        '    parse_test.go:12: Parse("1+2") = 4, want 3\nFAIL\nFAIL\texample.com/calc\t0.002s\nFAIL\n'
    )
    assert errors(failed) == ['--- FAIL: TestParse (0.00s) parse_test.go:12: Parse("1+2") = 4, want 3']
    build = "# example.com/calc\n./calc.go:10:2: undefined: evaluate\n./calc.go:14:9: too many return values\n"
    assert errors(build) == ["./calc.go:10:2: undefined: evaluate", "./calc.go:14:9: too many return values"]


def test_typescript_errors_in_both_of_tscs_formats():
    plain = (
        "src/index.ts(10,5): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.\n"
    )
    assert errors(plain) == [plain.strip()]
    pretty = (
        "src/app.ts:3:7 - error TS2322: Type 'number' is not assignable to type 'string'.\n\n"
        "3 const name: string = 42;\n        ~~~~\n\n\nFound 1 error in src/app.ts:3\n"
    )
    assert errors(pretty) == ["src/app.ts:3:7 - error TS2322: Type 'number' is not assignable to type 'string'."]


def test_npm_says_what_failed_once_not_its_log_file():
    missing = (
        "npm ERR! code E404\n"
        "npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found\n"
        "npm ERR! 404 \n"
        "npm ERR! 404  'left-padd@*' is not in this registry.\n\n"
        "npm ERR! A complete log of this run can be found in:\n"
        "npm ERR!     /root/.npm/_logs/2024-03-01T10_00_00_000Z-debug-0.log\n"
    )
    assert errors(missing) == ["npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found"]
    newer = "npm error code ENOENT\nnpm error syscall open\nnpm error path /app/package.json\n"
    newer += "npm error errno -2\nnpm error enoent Could not read package.json: Error: ENOENT: no such file\n"
    assert errors(newer) == ["npm error enoent Could not read package.json: Error: ENOENT: no such file"]
    # a script's failure: npm only repeats that it failed, the test's own error above says why
    script = (
        "Error: Cannot find module './utils'\nRequire stack:\n- /app/index.js\n"
        "npm ERR! code ELIFECYCLE\nnpm ERR! errno 1\nnpm ERR! app@1.0.0 start: `node index.js`\n"
        "npm ERR! Exit status 1\nnpm ERR! \nnpm ERR! Failed at the app@1.0.0 start script.\n"
    )
    assert errors(script) == ["Error: Cannot find module './utils'"]


def test_rust_errors_keep_their_place_and_cargos_summary_is_no_error():
    mismatch = (
        "   Compiling demo v0.1.0 (/app)\n"
        "error[E0308]: mismatched types\n --> src/main.rs:4:18\n  |\n"
        '4 |     let x: i32 = "hello";\n  |            ---   ^^^^^^^ expected `i32`, found `&str`\n\n'
        "For more information about this error, try `rustc --explain E0308`.\n"
        'error: could not compile `demo` (bin "demo") due to 1 previous error\n'
    )
    assert errors(mismatch) == ["error[E0308]: mismatched types --> src/main.rs:4:18"]
    panicked = (
        "thread 'main' panicked at src/main.rs:3:5:\n"
        "index out of bounds: the len is 3 but the index is 10\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    )
    assert errors(panicked) == [
        "thread 'main' panicked at src/main.rs:3:5: index out of bounds: the len is 3 but the index is 10"
    ]
    old = "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/lib.rs:7:37\n"
    assert errors(old) == [old.strip()]


def test_gcc_and_the_linker_say_why_not_that_ld_failed():
    compile_error = (
        "main.c: In function 'main':\nmain.c:5:10: error: expected ';' before 'return'\n    5 |   int x = 3\n"
    )
    assert errors(compile_error) == ["main.c:5:10: error: expected ';' before 'return'"]
    link = (
        "/usr/bin/ld: /tmp/ccA1b2C3.o: in function `main':\nmain.c:(.text+0x1e): undefined reference to `helper'\n"
        "collect2: error: ld returned 1 exit status\n"
    )
    assert errors(link) == ["main.c:(.text+0x1e): undefined reference to `helper'"]


def test_an_error_line_with_no_message_is_not_joined_to_the_lines_below_it():
    # A script's `print(f"Error: {e}")` of an exception with an empty message, then its next case's title: the
    # error line is that one line, not "Error: \n\n2. ExpressionWrapper(...)" (the case's title read as the error).
    printed = "1. ExpressionWrapper(Q(pk__in=[])):\n   Error: \n\n2. ExpressionWrapper(~Q(pk__in=[])):\n   Error: \n"
    assert errors(printed) == []
    assert errors("src/x.c: error:\nnext line\n") == []
    bare = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nValueError:\nnext line\n'
    assert all("\n" not in line for line in errors(bare))
    assert errors("   Error: the value was wrong\n") == ["Error: the value was wrong"]


def test_pytests_empty_exception_message_is_read_from_its_next_e_line():
    # assert_allclose's failure: pytest prints the message on the E lines under "AssertionError: ".
    failure = (
        ">       assert_allclose(out, expected, atol=10)\nE       AssertionError: \n"
        "E       Not equal to tolerance rtol=1e-07, atol=10\nE       \nE       Mismatched elements: 1 / 1 (100%)\n\n"
        "pvlib/tests/test_irradiance.py:97: AssertionError\n"
    )
    assert errors(failure)[0] == "AssertionError: Not equal to tolerance rtol=1e-07, atol=10"
