"""Delimited spans found in linear time give what the lazy regexes they replace gave: the issue in
its tags or SWE-agent's template, XML tool calls and their parameters, SEARCH/REPLACE blocks.
(How long hostile input takes is measured by scripts/bench_probe_extraction.py, not here.)"""

import re

from ctxbench.probes.actions import search_replace_blocks, xml_tool_calls
from ctxbench.probes.delimited import bodies, closing_tag
from ctxbench.probes.extract import task_body

OLD_TASK = re.compile(
    r"<(issue_description|pr_description|issue|task)>\s*(.*?)\s*</\1>|^(ISSUE):[ \t]*\n(.*?)\n\s*INSTRUCTIONS:",
    re.DOTALL | re.IGNORECASE | re.MULTILINE,
)
OLD_PARAM = re.compile(r"<(\w+)>\n?(.*?)\n?</\1>", re.DOTALL)
OLD_BLOCK = re.compile(
    r"^(?:<{7}|-{7}) SEARCH[^\n]*\n(.*?)^={7}[^\n]*\n(.*?)^(?:>{7}|\+{7}) REPLACE", re.DOTALL | re.MULTILINE
)

TEXTS = [
    "Fix it.\n<pr_description>\n  Encoder drops empty tags\n</pr_description>\nThanks",
    "<ISSUE>Upper case tag</issue> and <task>later</task>",
    "<issue>never closed <task>  closed task  </task>",
    "<task>a</task><issue>b</issue>",
    "Here's the issue text:\nISSUE:\nSyntaxError: invalid syntax\n\n\nINSTRUCTIONS:\nNow solve it.",
    "ISSUE:\nfirst\nINSTRUCTIONS:\n<issue>second</issue>",
    "<issue>" * 50 + "no closing",
    "nothing here",
]


def test_the_issue_body_is_where_the_lazy_regex_found_it():
    for text in TEXTS:
        old = OLD_TASK.search(text)
        want = None
        if old:
            group = 2 if old.group(2) is not None else 4
            want = old.group(group).strip()
        got = task_body(text)
        assert (text[got[0] : got[1]] if got else None) == want, text


def test_xml_parameters_and_search_replace_blocks_match_the_lazy_regexes():
    params = "<path>\nsrc/a.py\n</path><content><div>x</div></content><diff><a>unclosed <b>ok</b></diff>"
    assert [(k, v) for k, v in bodies(params, re.compile(r"<(\w+)>"), closing_tag())] == [
        (k, v) for k, v in re.findall(r"<(\w+)>(.*?)</\1>", params, re.DOTALL)
    ]
    call = f"I will write it.\n<write_to_file>{params}</write_to_file>"
    assert xml_tool_calls(call) == [("write_to_file", dict(OLD_PARAM.findall(params)))]
    diff = (
        "<<<<<<< SEARCH\n:start_line:3\n-------\nold()\n=======\nnew()\n>>>>>>> REPLACE\n"
        "------- SEARCH\nx = 1\n=======\nx = 2\n+++++++ REPLACE\n<<<<<<< SEARCH\nnever replaced\n=======\n"
    )
    assert search_replace_blocks(diff) == OLD_BLOCK.findall(diff)


def test_unclosed_openings_by_the_thousand_find_nothing_and_leave_a_later_closed_span():
    text = "<issue>" * 5000 + "<task>the real one</task>"
    got = task_body(text)
    assert got is not None and text[got[0] : got[1]] == "the real one"
    assert xml_tool_calls("<write_to_file>" * 5000) == []
    assert search_replace_blocks("<<<<<<< SEARCH\n" * 5000) == []
