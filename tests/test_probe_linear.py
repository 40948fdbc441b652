"""Probe extraction's readers on hostile shapes (runs of blank lines, of `\\"`, of one long word or sentence) give
what the regexes they replace gave, and a shape read once at 200 characters is read the same at 20,000.
(How long hostile input takes is measured by scripts/bench_probe_extraction.py --hostile, not here.)"""

import json
import random
import re

from ctxbench.probes.actions import QUOTED, mask_quoted
from ctxbench.probes.extract import extract_probes
from ctxbench.probes.outputs import MESSAGE
from ctxbench.probes.runs import ERROR_MESSAGE
from ctxbench.probes.statements import STATEMENT_MAX, code_lines
from ctxbench.transcripts.model import Message, ToolCall, Transcript

OLD_CODE_LINE = re.compile(r"^.*(?:\w\s*=\s*\S|\w\(.*\)|[{};]\s*$|^\s*(?:def|return|if|for|while)\b).*$", re.MULTILINE)
OLD_MESSAGE = re.compile(r"(?:Error|Exception|Failure)\w*:\s*(.{12,})$")
OLD_ERROR_MESSAGE = re.compile(r"(?:Error|Exception|Failure)\w*:\s*(.+)$")


def test_quoted_words_are_masked_as_the_regex_masks_them():
    texts = [
        """sed -i 's/a|b/c/' f.py && echo "x > y" > out.txt""",
        """echo 'it'\\''s' | grep "a \\" b" > o""",
        'echo "' + '\\"' * 500 + " > never_closed",
        'echo "open \\\nline" then "closed" > f',
        """printf "%s" 'a"b' "c'd" > g""",
        '"\\',
    ]
    rng = random.Random(23)
    texts += ["".join(rng.choice("'\"\\ a\n>") for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    for text in texts:
        assert mask_quoted(text, "Q") == QUOTED.sub("Q", text), repr(text)


def test_code_lines_are_counted_a_line_at_a_time():
    assert code_lines("x = 1\nfoo(bar)\nreturn x", 5) == 3
    assert code_lines("src/a.py\nsrc/b.py\n| name | size |", 5) == 0
    assert code_lines("\n\n " * 5000, 2) == 0
    assert code_lines("\n\n " * 5000 + "if x:\n    f(a) and g(\n}", 5) == 3
    assert code_lines("a(" * 5000, 2) == 0  # a call opened and never closed
    # where no line's code runs into the next, the count is the old regex's
    for text in ("x = 1\n\nfoo(a, b)\n  def f():\n{\n", "Total: 3 files\nx=1\n;  \n a.b(c)d"):
        assert code_lines(text, 99) == len(OLD_CODE_LINE.findall(text))


def test_an_error_message_is_what_follows_its_type_word():
    lines = [
        "ValueError: invalid literal for int() with base 10",
        "xError foo: not a type KeyError: the message after the type",
        "ValueError: short",
        "Error" * 2000 + ": the message of a very long type word",
        "Error" * 2000,
        "raise RuntimeFailure: no such thing as a failure",
        "AssertionError:    padded message with spaces",
    ]
    for line in lines:
        for new, old in ((MESSAGE, OLD_MESSAGE), (ERROR_MESSAGE, OLD_ERROR_MESSAGE)):
            got, want = new.search(line), old.search(line)
            assert (got and got.group(1)) == (want and want.group(1)), line[:80]


def _run(thought: str, output: str, command: str) -> Transcript:
    edit = {"command": "str_replace", "path": "/r/parse.py", "old_str": "x", "new_str": "y"}
    return Transcript(
        "t",
        [
            Message("system", "s"),
            Message("user", "<pr_description>\nParser fails on empty files\n</pr_description>"),
            Message("assistant", thought, tool_calls=(ToolCall("a", "bash", json.dumps({"command": command})),)),
            Message("tool", f"<returncode>1</returncode>\n<output>\n{output}\n</output>", tool_call_id="a"),
            Message("assistant", "Fix.", tool_calls=(ToolCall("b", "str_replace_editor", json.dumps(edit)),)),
            Message("tool", "The file /r/parse.py has been edited.", tool_call_id="b"),
            Message("assistant", "All done."),
        ],
    )


def _probes(run: Transcript) -> list[tuple[str | None, int, str]]:
    return [(p.label, p.message_index, p.answer) for p in extract_probes(run)]


def test_a_hostile_shape_is_read_the_same_at_any_length():
    """Blank lines in an output, `\\"` in a command, one long word in an output: the probes at 20,000 characters are
    the probes at 200 (the shape's own text aside)."""
    cause = "The issue is that `parse()` returns None for an empty file."
    for shape, where in (("\n\n ", "output"), ("\n", "output"), ('"\\', "command"), ("Error", "output")):
        got = []
        for chars in (200, 20_000):
            text = shape * (chars // len(shape))
            output = text if where == "output" else "ValueError: empty file"
            command = f'echo "{text}" > log.txt' if where == "command" else "python repro.py"
            probes = _probes(_run(cause, output, command))
            got.append([(label, at, "<shape>" if shape * 3 in answer else answer) for label, at, answer in probes])
        assert got[0] == got[1], shape


def test_a_sentence_longer_than_any_statement_is_no_decision():
    """ "I'll keep ... because ..." is a decision; the same words run on for thousands of characters without a stop
    are a dump (where each modal was read to the sentence's end, 4,000 "I'll " took 1.8 s)."""
    decision = "I'll keep the empty-file check in `parse()` because callers rely on the None result"
    filler = " and" + " more" * (STATEMENT_MAX // 5)
    short = _probes(_run(decision + ".", "ValueError: empty file", "python repro.py"))
    long = _probes(_run(decision + filler + ".", "ValueError: empty file", "python repro.py"))
    assert ("decision", 2, decision + ".") in short
    assert not [p for p in long if p[0] in ("decision", "root_cause")]
