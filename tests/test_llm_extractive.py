"""The extractive summariser: deterministic, keeps facts, drops filler, always has every heading."""

from ctxbench.llm import ExtractiveSummariser, SummaryRequest, missing_sections, usage_totals

DBGPT_SECTIONS = (
    "Original Task",
    "Completed Steps",
    "Current State",
    "Key Data (must be exact)",
    "Errors Encountered",
    "Next Steps",
)
CLAUDE_SECTIONS = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)
FILLER = "Sure, happy to help with that, let me have a look."
SPAN = f"""[user]: Please make the service start cleanly again
[assistant]: {FILLER}
[tool]: Traceback (most recent call last):
  File "/srv/app/main.py", line 12, in <module>
OSError: [Errno 98] Address already in use
[assistant]: Okay, that is interesting.
[assistant]: We decided to move the server to port 8081 because 8080 is taken by nginx.
[tool]: wrote config/settings.yaml
[assistant]: That sounds good to me.
[tool]: docs at https://example.org/deploy for release v2.4.1
[assistant]: Next I will restart the service and run the smoke tests.
"""


def request(sections=DBGPT_SECTIONS, max_tokens=2000, source=SPAN):
    return SummaryRequest(instructions="(unused)", source_text=source, sections=sections, max_tokens=max_tokens)


def bullets_under(summary: str, heading: str) -> list[str]:
    lines = summary.splitlines()
    start = lines.index(f"## {heading}") + 1
    out = []
    for line in lines[start:]:
        if line.startswith("## "):
            break
        out.append(line)
    return out


def test_keeps_paths_ports_errors_and_drops_filler():
    summary = ExtractiveSummariser().summarise(request())
    assert "/srv/app/main.py" in summary
    assert "config/settings.yaml" in summary
    assert "port 8081" in summary
    assert "Address already in use" in summary
    assert "https://example.org/deploy" in summary and "v2.4.1" in summary
    assert FILLER not in summary
    assert "That sounds good to me" not in summary and "Okay, that is interesting" not in summary
    assert missing_sections(summary, DBGPT_SECTIONS) == []


def test_lines_go_under_fitting_headings():
    summary = ExtractiveSummariser().summarise(request())
    assert any("Address already in use" in b for b in bullets_under(summary, "Errors Encountered"))
    assert any("start cleanly" in b for b in bullets_under(summary, "Original Task"))
    assert any("restart the service" in b for b in bullets_under(summary, "Next Steps"))
    nine = ExtractiveSummariser().summarise(request(CLAUDE_SECTIONS))
    assert missing_sections(nine, CLAUDE_SECTIONS) == []
    assert any("settings.yaml" in b for b in bullets_under(nine, "Files and Code Sections"))
    assert any("decided" in b for b in bullets_under(nine, "Problem Solving"))


def test_budget_is_respected_and_headings_survive():
    long_span = "\n".join(f"[tool]: error {i} in /var/log/app_{i}.log at port {9000 + i}" for i in range(500))
    summary = ExtractiveSummariser().summarise(request(max_tokens=200, source=long_span))
    assert len(summary) <= 200 * 4
    assert missing_sections(summary, DBGPT_SECTIONS) == []
    assert "error 499" in summary  # later lines win ties: the most recent facts are kept
    tiny = ExtractiveSummariser().summarise(request(max_tokens=1, source=long_span))
    assert missing_sections(tiny, DBGPT_SECTIONS) == []


def test_deterministic_free_and_labelled():
    one, two = ExtractiveSummariser(), ExtractiveSummariser()
    assert one.summarise(request()) == two.summarise(request())
    assert one.name == "extractive"
    totals = usage_totals(one.usage)
    assert totals["calls"] == 1 and totals["cost_usd"] == 0.0 and totals["faults"] == {}


def test_line_kinds_remembered_or_not_are_the_searches():
    from ctxbench.llm.extractive import MEMO_LINE_CHARS, _kinds, line_kinds

    lines = ["Error: port 8080 refused at src/app.py", "we decided to use v1.2.3", "plain words", ""]
    long_line = "x" * MEMO_LINE_CHARS + " ValueError in a/b.py"
    for line in [*lines, *lines, long_line, long_line]:
        assert line_kinds(line) == _kinds(line)
    assert line_kinds(lines[0]) == ("error", "path", "port", "number")
    assert "error" in line_kinds(long_line) and "path" in line_kinds(long_line)
