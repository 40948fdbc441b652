"""What the agent said, read as probes (ctxbench/probes/statements.py): the outcome at the end of a
run as each framework records it, root causes and decisions. Short examples shaped like the real
transcripts in ../shared/transcripts/ (mini-swe-agent, SWE-agent, OpenHands, tau-bench)."""

import json

from ctxbench.judges.deterministic import DeterministicJudge
from ctxbench.probes import CheckpointPolicy, ProbeObserver, retention_metrics
from ctxbench.probes.extract import extract_probes
from ctxbench.probes.statements import DECISION, StatementReader
from ctxbench.replay.engine import replay
from ctxbench.replay.provider import ModelSpec
from ctxbench.strategies.none import FullHistory
from ctxbench.tokens import ExactEstimator, TokenCounter, get_tokenizer
from ctxbench.transcripts.model import Message, ToolCall, Transcript


def _bash(i: str, command: str, thought: str = "") -> Message:
    return Message("assistant", thought, tool_calls=(ToolCall(i, "bash", json.dumps({"command": command})),))


def _out(i: str, text: str) -> Message:
    return Message("tool", f"<returncode>0</returncode>\n<output>\n{text}\n</output>", tool_call_id=i)


def _outcomes(messages: list[Message], source: dict | None = None) -> dict[str, tuple[int, str]]:
    probes = extract_probes(Transcript("t", messages, source=source or {}))
    return {p.answer: (p.message_index, p.question) for p in probes if p.label == "outcome"}


MINI_SWE_AGENT_END = [
    Message("system", "You are a helpful assistant that can interact with a computer shell."),
    Message("user", "<pr_description>\nEncoder drops empty extra_tags when serializing\n</pr_description>"),
    _bash("a", "sed -i 's/if obj.extra_tags:/if obj.extra_tags is not None:/' src/cookie.py", "Fix the check:"),
    _out("a", ""),
    _bash("b", "git diff -- src/cookie.py > patch.txt", "Now let me create the patch file:"),
    _out("b", ""),
    _bash("c", "cat patch.txt", "Let me verify the patch:"),
    _out("c", "diff --git a/src/cookie.py b/src/cookie.py\n-if obj.extra_tags:\n+if obj.extra_tags is not None:"),
    _bash(
        "d",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt",
        "Perfect! The patch changes `if obj.extra_tags:` to `if obj.extra_tags is not None:`, so empty strings "
        "survive the round trip.\n\nNow let me submit the final output:",
    ),
]


def test_the_outcome_stated_at_the_last_call_is_asked():
    """The end checkpoint's context holds the last call's reply (the replay appends it), so a fact
    stated there is a probe; the metrics class it trivial (within the last two rounds)."""
    got = _outcomes(MINI_SWE_AGENT_END)
    last = len(MINI_SWE_AGENT_END) - 1
    said = [a for a, (at, _) in got.items() if at == last]
    assert said and "`if obj.extra_tags is not None:`" in said[0], got
    assert "submit the final output" not in said[0]  # the lead-in to the submit says nothing


def test_what_was_submitted_is_read_before_the_last_call():
    """mini-swe-agent submits by printing a file (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat
    patch.txt`): what it submitted is the command that wrote that file, stated before the last call
    (so a context can lose it), asked with the submission named."""
    got = _outcomes(MINI_SWE_AGENT_END)
    at, question = got["git diff -- src/cookie.py > patch.txt"]
    assert at == 4 and "`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt`" in question


def test_an_outcome_at_the_last_call_is_kept_by_every_strategy_and_never_in_the_headline():
    """Honest in the metrics: the end checkpoint holds the last call's reply, so the outcome stated
    there is kept whatever the strategy, and retention_metrics classes it trivial; the submission's
    command, two rounds earlier, can be lost and counts."""
    probes = extract_probes(Transcript("t", MINI_SWE_AGENT_END))
    t = Transcript("t", MINI_SWE_AGENT_END, probes=probes)
    observer = ProbeObserver(probes, DeterministicJudge(), CheckpointPolicy(every_n_calls=1))
    model = ModelSpec(name="m", context_window=8000, reserved_output_tokens=1000, tokenizer="cl100k_base")
    counter = TokenCounter(get_tokenizer("cl100k_base"))
    replay(t, FullHistory(), ExactEstimator("cl100k_base"), model, counter, observers=[observer])
    trivial = set(retention_metrics(observer.rows, {})["trivial_probes"])
    outcome = {p.answer: p.id for p in probes if p.label == "outcome"}
    stated_last = [pid for answer, pid in outcome.items() if "survive the round trip" in answer]
    assert stated_last and stated_last[0] in trivial
    assert outcome["git diff -- src/cookie.py > patch.txt"] not in trivial


def test_a_run_that_stopped_without_submitting_ends_where_it_stood():
    """OpenHands runs can stop at the iteration limit mid-work: no finish action. What it was doing
    is the final state, not the reasoning before its last command."""
    messages = [
        Message("user", "<issue>\nThe compiler aliases iso captures in match\n</issue>"),
        Message(
            "assistant",
            "It seems that CMake can't find the GTest package. Let's try to install it.",
            tool_calls=(ToolCall("a", "execute_bash", json.dumps({"command": "apt-get install -y libgtest-dev"})),),
        ),
        Message("tool", "E: Unable to locate package libgtest-dev", tool_call_id="a"),
    ]
    got = _outcomes(messages)
    assert list(got) == ["apt-get install -y libgtest-dev"] and "had not submitted" in got[next(iter(got))][1]


def test_a_finish_message_leads_with_what_is_still_not_done():
    finish = {
        "message": "The segfault on a single-element tuple in `match` has been addressed by modifying the "
        "`idseqsingle` rule in `parser.c`. However, the compiler was not built, so the fix could not be verified.",
        "task_completed": "partial",
    }
    messages = [
        Message("user", "<issue>\nSegfault when matching a single-element tuple\n</issue>"),
        Message("assistant", "Let me finish.", tool_calls=(ToolCall("f", "finish", json.dumps(finish)),)),
    ]
    got = _outcomes(messages)
    assert list(got) == ["However, the compiler was not built, so the fix could not be verified."], got


def test_a_customer_service_reply_reports_what_the_last_action_created():
    """tau-bench: the final reply to the user; the sentence with the value the booking returned (not
    the flights listed, which the search had shown, nor the offer of more help)."""
    booked = {"reservation_id": "HATHAT", "flights": [{"flight_number": "HAT136"}], "payment": "certificate_7504069"}
    messages = [
        Message("system", "You are an airline agent."),
        Message("user", "I want to fly from JFK to SEA on May 20."),
        Message("assistant", "", tool_calls=(ToolCall("s", "search_onestop_flight", '{"origin": "JFK"}'),)),
        Message("tool", '[{"flight_number": "HAT136", "price": 152}]', tool_call_id="s"),
        Message("assistant", "Flight HAT136 costs $152. Shall I book it?"),
        Message("user", "Yes, please go ahead and book it."),
        Message("assistant", "", tool_calls=(ToolCall("b", "book_reservation", '{"flight": "HAT136"}'),)),
        Message("tool", json.dumps(booked), tool_call_id="b"),
        Message(
            "assistant",
            "Your flight has been successfully booked.\n\n- **Flight HAT136 (JFK to ATL)**\n\n"
            "Your reservation ID is **HATHAT**. If you have any further questions, feel free to ask!",
        ),
        Message("user", "Thank you! ###STOP###"),
    ]
    got = _outcomes(messages)
    assert "Your reservation ID is **HATHAT**." in got, got


def test_last_words_that_only_thank_give_way_to_the_reply_before():
    messages = [
        Message("user", "Please cancel my trip to Boston, it has only me on it."),
        Message("assistant", "", tool_calls=(ToolCall("c", "cancel_reservation", '{"reservation_id": "D1EW9B"}'),)),
        Message("tool", '{"reservation_id": "D1EW9B", "status": "cancelled"}', tool_call_id="c"),
        Message("assistant", "The reservation D1EW9B has been cancelled; the refund goes to your gift card."),
        Message("user", "Great, thanks!"),
        Message("assistant", "You're welcome! If you have any other questions, feel free to reach out."),
        Message("user", "###STOP###"),
    ]
    assert _outcomes(messages) == {
        "The reservation D1EW9B has been cancelled; the refund goes to your gift card.": (
            3,
            "What did the agent report when it finished?",
        )
    }


def test_a_submitted_flag_is_the_outcome():
    """SWE-agent's text action `submit flag{...}` (its CTF demonstrations)."""
    messages = [
        Message("system", "SETTING: a CTF challenge."),
        Message("user", "We're currently solving the following CTF challenge. Find the flag hidden in flash.img"),
        Message("assistant", "Run strings.\n```\nstrings flash.img | grep flag\n```"),
        Message("user", "flag{b3l0w_th3_r4dar}\n(Open file: n/a)"),
        Message("assistant", "submit flag\n```\nsubmit flag{b3l0w_th3_r4dar}\n```"),
    ]
    got = _outcomes(messages, {"format": "swe-agent"})
    assert got == {"flag{b3l0w_th3_r4dar}": (4, "What did the agent submit at the end?")}


def test_a_sentence_about_a_command_printing_nothing_is_no_report():
    """SWE-agent's demonstration ends "rm doesn't have any output when it deletes successfully, so that must have
    worked. Now that we have fixed the issue, we should submit ... Let's submit the changes using the `submit`
    command.": what `rm` printed is no outcome (its "successfully" read as a verdict), nor the submit said
    (its `submit` read as code); a report that says what the fix did still is."""
    messages = [
        Message("user", "ISSUE:\nTimeDelta serialization precision\n\nINSTRUCTIONS:\nFix it."),
        Message("assistant", "Run it again.\n```\npython reproduce.py\n```"),
        Message("user", "345\n(Open file: src/marshmallow/fields.py)"),
        Message("assistant", "The output has changed from 344 to 345. Let's remove it.\n```\nrm reproduce.py\n```"),
        Message("user", "Your command ran successfully and did not produce any output.\n(Open file: n/a)"),
        Message(
            "assistant",
            "rm doesn't have any output when it deletes successfully, so that must have worked. Now that we have "
            "fixed the issue, we should submit our changes to the code base. Let's submit the changes using the "
            "`submit` command.\n```\nsubmit\n```",
        ),
    ]
    got = _outcomes(messages, {"format": "swe-agent"})
    assert got == {}, got
    messages[5] = Message(
        "assistant", "The fix rounds `value.total_seconds()` to the nearest int, so 345 is printed.\n```\nsubmit\n```"
    )
    assert "The fix rounds `value.total_seconds()` to the nearest int, so 345 is printed." in _outcomes(
        messages, {"format": "swe-agent"}
    )


def _causes(messages: list[Message]) -> list[tuple[int, str]]:
    probes = extract_probes(Transcript("t", messages))
    return [(p.message_index, p.answer) for p in probes if p.label == "root_cause"]


def _edit(i: str, path: str, old: str, new: str, thought: str = "") -> Message:
    args = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
    return Message("assistant", thought, tool_calls=(ToolCall(i, "str_replace_editor", json.dumps(args)),))


def test_a_cause_stated_in_an_openhands_think_action_is_read():
    """OpenHands agents reason in `think` actions (the thought is the call's argument, in every
    later context); a cause or the place to fix stated there is the agent's statement."""
    thought = (
        "To fix the incorrect aliasing of `iso` when using `match`, we need to modify the `make_pattern_type` "
        "function to correctly handle `iso` references. The `TK_MATCH_CAPTURE` case returns the type unchanged."
    )
    messages = [
        Message("user", "<issue>\nIncorrect aliasing of iso when using match\n</issue>"),
        Message("assistant", "Let me think.", tool_calls=(ToolCall("t", "think", json.dumps({"thought": thought})),)),
        Message("tool", "Your thought has been logged.", tool_call_id="t"),
        _edit("e", "/w/src/match.c", "return pattern_type;", "return alias(pattern_type);"),
        Message("tool", "The file /w/src/match.c has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert any(at == 1 and "`make_pattern_type`" in answer for at, answer in _causes(messages)), _causes(messages)


def test_a_cause_only_in_the_models_reasoning_is_not_asked():
    """DeepSeek-reasoner (and other APIs with hidden reasoning) keep their words in the message's
    reasoning (metadata["reasoning"]) and never resend them: no later context holds them, so no
    strategy could retain a fact said only there. Probes are read from what the model is sent back
    (text, tool calls, think-tool arguments), as the judges read the context; this pins that choice."""
    cause = "The issue is that `make_bytes` calls `str(value)` for a `memoryview`, so it prints `<memory at>`."
    messages = [
        Message("user", "<pr_description>\nHttpResponse does not handle memoryview objects\n</pr_description>"),
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("g", "bash", json.dumps({"command": "grep -n make_bytes r/response.py"})),),
            metadata={"reasoning": cause},
        ),
        _out("g", "230:    def make_bytes(self, value):"),
        _edit("e", "/r/response.py", "return str(value).encode(self.charset)", "return bytes(value)"),
        Message("tool", "The file /r/response.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert not any("memoryview" in answer for _, answer in _causes(messages)), _causes(messages)
    messages[1] = Message("assistant", cause, tool_calls=messages[1].tool_calls)
    assert any("memoryview" in answer for _, answer in _causes(messages)), _causes(messages)  # said: asked


def test_a_name_the_task_only_contains_is_still_new():
    """`PersonName` is not named by a task about `PersonName3`: names compare whole, not as substrings."""
    messages = [
        Message("user", "<pr_description>\nMake PersonName3 iterable\n</pr_description>"),
        Message("assistant", "Good! So the issue is with `PersonName` class, not `PersonName3`. Let me look."),
        Message("user", "ok"),
        _edit("e", "/r/valuerep.py", "def __hash__(self):", "def __iter__(self):"),
        Message("tool", "The file /r/valuerep.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _causes(messages)] == ["So the issue is with `PersonName` class, not `PersonName3`."]


def test_a_name_the_task_spells_in_a_dotted_path_is_no_new_name():
    """A task asking to change `django.utils.html.json_script()` names `json_script`: a statement naming only
    it and the task's words restates the request (a mini-swe-agent DeepSeek run: "The current `json_script`
    function doesn't accept an `encoder` parameter."); one naming code the task does not is still a cause."""
    restated = "Now I understand the issue. The current `json_script` function doesn't accept an `encoder` parameter."
    found = "The issue is that `json_script` hardcodes `DjangoJSONEncoder` in its `json.dumps` call."
    messages = [
        Message(
            "user", "<pr_description>\nAdd an encoder parameter to django.utils.html.json_script().\n</pr_description>"
        ),
        _bash("c", "grep -n 'def json_script' -A 12 django/utils/html.py", restated),
        _out("c", "62:def json_script(value, element_id=None):"),
        _bash("t", "grep -rn json_script django/template/defaultfilters.py", "Let me see how the filter calls it."),
        _out("t", "85:    return _json_script(value, element_id)"),
        _edit(
            "e",
            "/testbed/django/utils/html.py",
            "def json_script(value, element_id=None):",
            "def json_script(value, element_id=None, encoder=None):",
        ),
        Message("tool", "The file /testbed/django/utils/html.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert _causes(messages) == [], _causes(messages)
    messages[1] = _bash("c", "grep -n 'def json_script' -A 12 django/utils/html.py", found)
    assert [a for _, a in _causes(messages)] == [found]


def test_an_explicit_statement_of_the_bug_comes_before_a_later_vague_one():
    """ "This is the bug!" names the cause; "the issue seems to be" closer to the fix only guesses.
    Among statements before the fix, the explicit ones are asked first."""
    messages = [
        Message("user", "<pr_description>\nmodels.W042 raised on an inherited manually specified primary key\n"),
        Message(
            "assistant",
            "When this field is promoted to be the primary key (in `_prepare`), it still has `auto_created=True`. "
            "This is the bug!",
        ),
        Message("user", "ok"),
        Message("assistant", "The issue seems to be related to `_check_default_pk` in some way."),
        Message("user", "ok"),
        Message("assistant", "The problem appears to be that `setup_pk` runs twice, maybe."),
        Message("user", "ok"),
        _edit("e", "/r/options.py", "field.primary_key = True", "field.primary_key = True\nfield.auto_created = False"),
        Message("tool", "The file /r/options.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)  # two slots, three statements
    assert len(causes) == 2 and causes[0][0] == 1 and "This is the bug!" in causes[0][1], causes


def test_a_cause_naming_the_code_the_fix_changes_comes_before_guesses_closer_to_the_fix():
    """Of causes stated alike (none announced, none named outright), one that names the code the
    final fix changes (`extra_tags`, in the edit's old and new text) is asked before statements
    closer to the fix that name none of it (a side note, a guess about other code)."""
    messages = [
        Message("user", "<pr_description>\nMessages lose an empty string on a round trip\n</pr_description>"),
        Message("assistant", "The issue seems to be that `obj.extra_tags` is dropped when it is an empty string."),
        Message("user", "ok"),
        Message("assistant", "The problem appears to be in `SessionStorage` caching the decoded list."),
        Message("user", "ok"),
        Message("assistant", "The issue seems to be related to `CookieStorage._update_cookie` somehow."),
        Message("user", "ok"),
        _edit("e", "/r/messages/cookie.py", "if obj.extra_tags:", "if obj.extra_tags is not None:"),
        Message("tool", "The file /r/messages/cookie.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)  # two slots, three statements
    assert 1 in [at for at, _ in causes] and len(causes) == 2, causes


def test_a_cause_announced_as_found_comes_before_a_statement_closer_to_the_fix():
    """ "I see the issue now. <cause>" marks the moment of diagnosis; "The issue is in X" is said of
    plans and restatements too, so two of those nearer the fix do not push the announced finding
    out of the two slots (mini-swe-agent on DeepSeek, pvlib-1707 messages 60, 84 and 86)."""
    messages = [
        Message("user", "<pr_description>\nregression: iam.physical returns nan for aoi > 90° when n = 1\n"),
        Message(
            "assistant",
            "I see the issue now. When `aoi ≥ 90°`, `costheta = 0` initially. Then after refraction calculation, "
            "`costheta` might still be 0 (especially when `n=1`).",
        ),
        Message("user", "ok"),
        Message(
            "assistant",
            "The issue is in the calculation of `rho12_s` and `rho12_p`. We need to handle the case when both "
            "numerator and denominator are zero.",
        ),
        Message("user", "ok"),
        _edit(
            "e",
            "/r/pvlib/iam.py",
            "rho12_s = (n1costheta1 - n2costheta2) / (n1costheta1 + n2costheta2)",
            "rho12_s = np.divide(n1costheta1 - n2costheta2, n1costheta1 + n2costheta2)",
            "The issue is that when `aoi > 90°`, `cosd(aoi)` is negative, so `costheta = max(0, cosd(aoi)) = 0`. "
            "This leads to division by zero in the reflectance calculations.",
        ),
        Message("tool", "The file /r/pvlib/iam.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)
    assert 1 in [at for at, _ in causes] and len(causes) == 2, causes


def test_an_announcement_with_a_modal_leads_its_cause():
    """ "Now I can see the issue!" announces the cause as "Now I see the issue!" does (DeepSeek chat
    writes both): it is asked with the sentence after it, before statements that do not announce
    (mini-swe-agent on DeepSeek, django-11133 messages 16, 76 and 78)."""
    messages = [
        Message("user", "<pr_description>\nHttpResponse doesn't handle memoryview objects\n</pr_description>"),
        Message(
            "assistant",
            "Now I can see the issue! In the `make_bytes` method, when a `memoryview` object is passed, it falls "
            "through to the last line `return str(value).encode(self.charset)`.",
        ),
        Message("user", "ok"),
        Message(
            "assistant",
            "The problem is that for binary data (like `memoryview`, `bytearray`, `array.array`), we shouldn't be "
            "doing any charset conversion at all! We should just convert them to bytes.",
        ),
        Message("user", "ok"),
        Message("assistant", "Hmm, `force_bytes` doesn't handle `bytearray` correctly either."),
        Message("user", "ok"),
        _edit("e", "/r/response.py", "return str(value).encode(self.charset)", "return bytes(value)"),
        Message("tool", "The file /r/response.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = dict(_causes(messages))
    assert causes.get(1, "").startswith("Now I can see the issue! In the `make_bytes` method"), causes


def test_a_cause_announced_after_a_first_fix_that_did_not_hold_is_asked():
    """A fix redone: the cause announced between the first and the last edit is what the first
    attempt missed, asked before a second statement made before the first edit (mini-swe-agent on
    DeepSeek, django-11133 messages 78, 98 and 132)."""
    messages = [
        Message("user", "<pr_description>\nHttpResponse doesn't handle memoryview objects\n</pr_description>"),
        Message(
            "assistant",
            "The problem is that for binary data (like `memoryview`, `bytearray`, `array.array`), we shouldn't be "
            "doing any charset conversion at all! We should just convert them to bytes.",
        ),
        Message("user", "ok"),
        Message(
            "assistant",
            "The issue is that `make_bytes` calls `str(value).encode(self.charset)` for non-string, non-bytes types.",
        ),
        Message("user", "ok"),
        _edit("e1", "/r/response.py", "return str(value).encode(self.charset)", "return bytes(value)"),
        Message("tool", "The file /r/response.py has been edited.", tool_call_id="e1"),
        Message(
            "assistant",
            "Ah! Now I see the issue! `make_bytes` is being called with integers (77, 121, 32, etc.), not with the "
            "memoryview object!",
        ),
        Message("user", "ok"),
        _edit("e2", "/r/response.py", "if hasattr(value, '__iter__')", "if hasattr(value, '__iter__') and not b"),
        Message("tool", "The file /r/response.py has been edited.", tool_call_id="e2"),
        Message("assistant", "Done."),
    ]
    assert sorted(at for at, _ in _causes(messages)) == [3, 7], _causes(messages)


def test_a_later_finding_announced_after_a_guess_at_it_is_still_asked():
    """The announcement ("... This is a bug!") follows a guess at the same thing two messages before
    ("Actually, I think this is a bug in ..."): the guess does not hide it as a restatement
    (mini-swe-agent on DeepSeek, django-11797 messages 244, 280 and 282)."""
    messages = [
        Message("user", "<pr_description>\nFiltering on query result overrides GROUP BY of internal query\n"),
        Message(
            "assistant",
            "The issue is in the `Exact` lookup's `process_rhs` method. It should not clear the select clause and "
            "add pk if the query already has a select clause or annotations.",
        ),
        Message("user", "ok"),
        _edit("e1", "/r/lookups.py", "if not value.has_select_fields:", "if not value.has_select_fields and x:"),
        Message("tool", "The file /r/lookups.py has been edited.", tool_call_id="e1"),
        Message(
            "assistant",
            "Actually, I think this is a bug in `has_select_fields`. It should check `self.annotation_select` in "
            "addition to `self.annotation_select_mask`. Let me check the implementation:",
        ),
        Message("user", "ok"),
        Message(
            "assistant",
            "So `has_select_fields` only checks `annotation_select_mask`, not `annotation_select`. This is a bug!",
        ),
        Message("user", "ok"),
        _edit("e2", "/r/query.py", "self.annotation_select_mask", "self.annotation_select"),
        Message("tool", "The file /r/query.py has been edited.", tool_call_id="e2"),
        Message("assistant", "Done."),
    ]
    assert 7 in [at for at, _ in _causes(messages)], _causes(messages)


def test_a_hedged_guess_or_a_status_is_not_a_stated_cause():
    """ "Maybe the issue is that ...?" asks; "the issue is still there" reports; neither states a cause."""
    messages = [
        Message("user", "<pr_description>\nHttpResponse does not handle memoryview objects\n</pr_description>"),
        Message("assistant", "The issue is that `make_bytes` calls `str(value)` for a `memoryview`: `<memory at>`."),
        Message("user", "ok"),
        Message("assistant", "However, the issue is still there - `content` is `b'<memory at 0x7f>'` again."),
        Message("user", "ok"),
        Message("assistant", "Maybe the issue is that the response is not going through `make_bytes`?"),
        Message("user", "ok"),
        _edit("e", "/r/response.py", "return str(value).encode(self.charset)", "return bytes(value)"),
        Message("tool", "The file /r/response.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [1], _causes(messages)


def _decisions(messages: list[Message]) -> list[tuple[int, str]]:
    probes = extract_probes(Transcript("t", messages))
    return [(p.message_index, p.answer) for p in probes if p.label == "decision"]


def test_a_result_instead_of_another_is_an_observation_not_a_decision():
    """ "returns `0.0` instead of `nan`" says what a run printed; "I should X instead of Y" decides."""
    messages = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        Message("assistant", "Instead of adding an early return, I should fix the division by zero in `rho12_s`."),
        Message("user", "ok"),
        _edit("e", "/r/iam.py", "rho12_s = a / b", "rho12_s = np.where(b == 0, 0.0, a / b)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="e"),
        Message("assistant", "Now `aoi=100` with `n=1` returns `0.0` instead of `nan`."),
        Message("user", "ok"),
        _edit("f", "/r/iam.py", "rho23_s = c / d", "rho23_s = np.where(d == 0, 0.0, c / d)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="f"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _decisions(messages)] == [1], _decisions(messages)


def test_a_decision_not_to_do_something_and_one_said_after_the_fix_are_decisions():
    """ "we shouldn't change <it>" (a decision not to do something), "We should X instead." (the plan,
    "instead" at its end) and, after the last fix, "I should not modify the tests" (a constraint accepted); the
    agent judging its own fix after it ("Our fix is the right fix") decides nothing."""
    messages = [
        Message("user", "<pr_description>\ngetitem raises AttributeError on an uninferable key\n</pr_description>"),
        Message("assistant", "Strings are accepted there too, and that is existing behavior that we shouldn't change."),
        Message("user", "ok"),
        _edit("e", "/r/node.py", "value.getitem(index)", "_infer_or_raise(value, AstroidIndexError).getitem(index)"),
        Message("tool", "The file /r/node.py has been edited.", tool_call_id="e"),
        Message("assistant", "Our fix for `getitem` is the right fix and all checks pass now."),
        Message("user", "ok"),
        Message("assistant", "Since the instructions forbid it, I should not modify the tests in `tests/test_n.py`."),
        Message("user", "ok"),
        Message("assistant", "The fix is complete: `getitem` now raises `AstroidIndexError` for uninferable keys."),
    ]
    got = _decisions(messages)
    assert {at for at, _ in got} == {1, 7}, got
    # the plan with "instead" at its end
    plan = "So we should catch inference errors and raise `AstroidIndexError` instead."
    assert [a for _, a in _decisions([messages[0], Message("assistant", plan), *messages[2:6]])] == [plan]


def test_a_decision_is_asked_about_the_code_it_names_that_the_fix_touches():
    """Of a run's decisions, the question names the code each is about (the code the fix changes
    first, not the way rejected), so one answer is right; one naming no code keeps the plain question."""
    messages = [
        Message("user", "<pr_description>\nDateTime format option ignored in List fields\n</pr_description>"),
        Message("assistant", "I will make `DateTime` read `self.root.opts` instead of `schema.opts`."),
        Message("user", "ok"),
        _edit("e", "/r/fields.py", "schema.opts.datetimeformat", "self.root.opts.datetimeformat"),
        Message("tool", "The file /r/fields.py has been edited.", tool_call_id="e"),
        Message("assistant", "Rather than rewriting the test suite, I will add one new test case."),
        Message("user", "ok"),
        _edit("f", "/r/fields.py", "return value", "return value  # kept"),
        Message("tool", "The file /r/fields.py has been edited.", tool_call_id="f"),
        Message("assistant", "The fix is complete: `DateTime` inside `List` now reads the schema's format."),
    ]
    probes = [p for p in extract_probes(Transcript("t", messages)) if p.label == "decision"]
    asked = {p.message_index: p.question for p in probes}
    assert asked == {
        1: "What did the agent decide about `self.root.opts`, and why?",
        5: "What did the agent decide, and why?",
    }, asked
    # a one-letter name quoted first is a span of its own, not the start of one running to the next quote
    said = [Message("assistant", "`Q` objects become `WhereNode` objects. So we don't need to fix `WhereNode`.")]
    (decided,) = StatementReader(said, "", None, None).decisions()
    assert decided.question == "What did the agent decide about `WhereNode`, and why?", decided


def test_a_way_planned_in_code_the_fix_never_touched_is_no_decision():
    """A plan of where or how to fix, made before the last fix, that names only code the submitted fix never
    touched was given up (the fix went elsewhere): no decision. A decision against a way ("too complex")
    and one to leave code alone name such code by design and stay; so does the plan the fix carried out."""
    reader = StatementReader(
        [
            Message("assistant", "Instead of patching `pre_save`, we should fix it in `Descriptor.__set__`."),
            Message("assistant", "But the `__getattr__` approach is getting too complex, so I will stick to two."),
            Message("assistant", "The fix should be to read the key in `_prepare_fields` from the cached object."),
            Message("assistant", "We don't need to change `dumpdata`, since it already skips missing tables."),
            _edit("e", "/r/base.py", "if obj.pk is None:", "if obj.pk is None or stale(obj):"),
        ],
        "",
        first_fix=4,
        last_fix=4,
        fix_text="base.py\ndef _prepare_fields(self):\nif obj.pk is None:\nif obj.pk is None or stale(obj):",
        patched=True,
    )
    assert sorted(f.message_index for f in reader.decisions()) == [1, 2, 3]


def test_a_decision_revised_after_an_edit_is_asked_as_revised_and_a_restatement_is_not():
    """A decision said again after an edit of the fix is the agent's revision (it tried the way): the later word
    is asked, ranked where the choice was first made. Said again with no edit between, the first statement
    stays (it carries the reasoning)."""
    first = "So the fix should be to only check `filterable` when it is a class attribute of the expression."
    revised = "Let me update the fix to only check `filterable` when it is a boolean class attribute:"
    said = [Message("assistant", first), Message("assistant", "Done."), Message("assistant", revised)]
    said.append(Message("assistant", "Done."))
    got = [f.answer for f in StatementReader(said, "", 1, 3, fix_edits=(1, 3)).decisions()]
    assert got == [revised], got
    got = [f.answer for f in StatementReader(said, "", 3, 3, fix_edits=(3,)).decisions()]
    assert got == [first], got


def test_where_the_agent_stops_its_change_is_a_decision():
    """Out of scope, a known limitation, a way too costly (with the plan said right after it, up to its
    code), code left as it is with why: decisions of every coding agent; a side problem set aside on a
    guess ("This should probably fail ... That's a separate issue.") is none."""
    said = [
        Message("assistant", "This is a known limitation, not a bug in our fix. Overrides keep the first `key`."),
        Message("assistant", "The other `replace` call reads data, but that's outside the scope of this PR."),
        Message("assistant", "But changing that would be a bigger change. For now, let me fix `write_OBvalue`:"),
        Message("assistant", "Actually, that's fine because we should always expand `~` before caching."),
        Message("assistant", "This should probably fail, but it doesn't. That's a separate issue though."),
    ]
    got = [
        (f.message_index, f.answer)
        for f in StatementReader(said, "", None, None).statements("decision", DECISION, needs_code=False)
    ]
    assert [at for at, _ in got] == [0, 1, 2, 3], got
    assert got[2][1] == "But changing that would be a bigger change. For now, let me fix `write_OBvalue`", got


def test_a_decision_naming_dotted_code_is_read_past_its_dots_and_a_search_step_is_none():
    """The dots of `os.path.normpath` or dataelem.py end no sentence: "I'll use `os.path.normpath` because ..."
    decides; "I will first search for the `missing_colon.py` file ... since ..." is a step of looking."""
    said = [
        Message("assistant", "I'll use `os.path.normpath` because it also strips repeated trailing slashes."),
        Message("assistant", "I will first search for the `missing_colon.py` file since that is where it fails."),
    ]
    got = StatementReader(said, "", None, None).statements("decision", DECISION, needs_code=False)
    assert [f.message_index for f in got] == [0]


def test_ways_weighed_and_concluded_are_decisions():
    """A guard added to be safe, "I think I should <change `code`>",
    a consequence accepted, a failure judged unrelated to the change, and a way leading its list even when
    several words name it ("I think the simplest and most robust approach is:")."""
    said = [
        Message("assistant", "So `self.root` is set by then. But to be safe, we should handle `None` too."),
        Message("assistant", "I think I should override `__init__` to validate the value after `super().__init__()`."),
        Message("assistant", "For a security fix like this, it's reasonable to break existing `tokens`."),
        Message(
            "assistant", "There's one test failure, but it's unrelated to our change (`__main__` has no `__file__`)."
        ),
        Message(
            "assistant", "I think the simplest and most robust approach is:\n1. Read `get_email_field_name()` first"
        ),
    ]
    got = StatementReader(said, "", None, None).statements("decision", DECISION, needs_code=False)
    assert [f.message_index for f in got] == [0, 1, 2, 3, 4]


TAU_POLICY = "# Airline Agent Policy\nYou can help users book, modify, or cancel flight reservations."


def test_a_customer_confirming_a_concrete_action_is_a_choice():
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Hi, I want to downgrade my business class reservations to economy."),
        Message("assistant", "You have two upcoming reservations in business class: JG7FMM and 2FBBAH. Shall I?"),
        Message("user", "Yes, please downgrade all of them to economy class. I just want to save some money."),
        Message("assistant", "", tool_calls=(ToolCall("u", "update_reservation_flights", '{"cabin": "economy"}'),)),
        Message("tool", '{"reservation_id": "JG7FMM", "cabin": "economy"}', tool_call_id="u"),
        Message("assistant", "Both reservations are now economy; $10,519 is refunded."),
        Message("user", "Thanks! ###STOP###"),
    ]
    assert (3, "Yes, please downgrade all of them to economy class.") in _decisions(messages)


def test_a_customers_choice_with_a_curly_apostrophe_a_request_or_a_way_to_pay_is_a_choice():
    """Customers type "I’d" as often as "I'd"; "Could you please use Gift Card 6276644" chooses by asking;
    "I'll use the credit card on file" names no ID but a way to pay. A bare "Yes, go ahead." chooses nothing."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Hi, I want to change my flight to Newark to a later one."),
        Message("assistant", "Here are two options: 1. HAT004 at 14:00 2. HAT110 at 16:30. Which one would you like?"),
        Message("user", "I’d like to go with Option 1 for EWR, please."),
        Message("assistant", "The total is $122. How would you like to pay?"),
        Message("user", "Could you please use Gift Card 6276644 and then the rest on my card?"),
        Message("assistant", "The gift card balance is not enough. Would you like another payment method?"),
        Message("user", "I'll use the credit card on file for the payment."),
        Message("assistant", "Shall I proceed with the change?"),
        Message("user", "Yes, go ahead."),
        Message("assistant", "Your flight is changed to HAT004."),
        Message("user", "Thanks! ###STOP###"),
    ]
    chosen = {at for at, _ in _decisions(messages)}
    assert {3, 5, 7} <= chosen and 9 not in chosen, _decisions(messages)
    # each choice asked in the context of the agent's question it answers
    asked = _questions(messages)
    assert asked[5] == 'The agent asked: "How would you like to pay?" What did the user choose or ask for?', asked


def test_a_request_added_with_a_curly_apostrophe_is_a_task_of_its_own():
    """ "Also, I’d like to add an extra passenger" adds a request as "Also, I'd like ..." does."""
    added = "Also, I’d like to add an extra passenger, Kevin Smith, and we don’t have any baggage."
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "I want to book a flight from JFK to SEA on May 20."),
        Message("assistant", "Here is the direct flight HAT136 at 19:00 for $152. Shall I book it?"),
        Message("user", added),
        Message("assistant", "Noted. Shall I book HAT136 for two passengers?"),
        Message("user", "Yes. ###STOP###"),
    ]
    tasks = {p.answer for p in extract_probes(Transcript("t", messages)) if p.label == "task"}
    assert added in tasks, tasks


def test_a_refusal_with_its_reason_is_a_decision():
    """Customer-service agents refuse by policy ("Unfortunately, I need the reservation ID to proceed"):
    a decision a continuing agent must not reverse."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "I need to change my return flight from Texas to Newark to a later one."),
        Message("assistant", "I can help with that. Could you give me your user ID and reservation ID?"),
        Message("user", "I don't have the reservation ID with me, is it possible to look it up another way?"),
        Message(
            "assistant",
            "Unfortunately, I need the reservation ID to proceed with modifying your flight. Once you have it, "
            "please let me know.",
        ),
        Message("user", "Found it: ZFA04Y. Then please cancel it instead, I have travel insurance."),
        Message("assistant", "", tool_calls=(ToolCall("c", "cancel_reservation", '{"reservation_id": "ZFA04Y"}'),)),
        Message("tool", '{"reservation_id": "ZFA04Y", "status": "cancelled"}', tool_call_id="c"),
        Message("assistant", "Your reservation ZFA04Y has been cancelled; the refund goes to your card."),
        Message("user", "Thanks! ###STOP###"),
    ]
    assert any(at == 4 and "I need the reservation ID to proceed" in a for at, a in _decisions(messages))


def test_a_bare_go_ahead_is_no_choice_and_a_refusal_repeated_is_asked_once():
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Can I add travel insurance to my reservation?"),
        Message("assistant", "Unfortunately, travel insurance cannot be added after the initial booking."),
        Message("user", "Are you sure? Please check again."),
        Message(
            "assistant",
            "Unfortunately, once a reservation is made, travel insurance cannot be added afterward. This is a strict "
            "policy.",
        ),
        Message("user", "Fine. Yes, please go ahead with the change of seat then."),
        Message("assistant", "", tool_calls=(ToolCall("u", "update_reservation_seat", '{"seat": "12A"}'),)),
        Message("tool", '{"reservation_id": "ZFA04Y", "seat": "12A"}', tool_call_id="u"),
        Message("assistant", "Your seat on ZFA04Y is now 12A."),
        Message("user", "Thanks ###STOP###"),
    ]
    assert [at for at, _ in _decisions(messages)] == [2], _decisions(messages)


def test_one_cause_per_message():
    """Two statements of one message state one cause (the second restates the first in other words);
    the slot goes to another message's."""
    messages = [
        Message("user", "<pr_description>\nmodels.W042 is raised on inherited manually specified primary key\n"),
        Message("assistant", "When promoted (in `_prepare`), the field keeps `auto_created=True`. This is the bug!"),
        Message("user", "ok"),
        Message(
            "assistant",
            "`User` gets its primary key from `Entity` as a parent link - this is the BUG! Entity declared it.\n\n"
            "The issue is in the `_prepare` method in `options.py`, which promotes a parent link to primary key.",
        ),
        _edit("e", "/r/options.py", "field.primary_key = True", "field.primary_key = True\nfield.auto_created = False"),
        Message("tool", "The file /r/options.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [1, 3], _causes(messages)


def test_a_discovery_exclamation_states_the_cause_that_follows_it():
    """An exclamation ("Yes! That's it! If the format string has format specifiers ...") announces the
    cause in the next sentence ("This is the bug!" points back instead)."""
    messages = [
        Message("user", "<pr_description>\nastroid crashes on str.format with None\n</pr_description>"),
        Message(
            "assistant",
            "Yes! That's it! If the format string has format specifiers (like `{:10}`), and the value is `None`, "
            "Python raises `TypeError`.\n\nLet me create a test to confirm:",
        ),
        Message("user", "ok"),
        _edit("e", "/r/brain.py", "except (IndexError, KeyError):", "except (IndexError, KeyError, TypeError):"),
        Message("tool", "The file /r/brain.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _causes(messages)] == [
        "That's it! If the format string has format specifiers (like `{:10}`), and the value is `None`, Python "
        "raises `TypeError`."
    ], _causes(messages)


def test_a_statement_read_as_two_types_is_asked_under_the_one_that_selects_it():
    """A statement such as "Instead of an early return, I should fix the root cause: ..." is a cause and
    a decision; when the root cause slots go to statements closer to the fix, it is asked as the decision."""
    messages = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        Message("assistant", "Instead of an early return, I should fix the root cause: the 0/0 in `rho12_s`."),
        Message("user", "ok"),
        Message("assistant", "The issue is that `costheta` is exactly 0 for `aoi > 90`."),
        Message("user", "ok"),
        Message("assistant", "The problem is in `rho12_p` too: its denominator `n1costheta2 + n2costheta1` is 0."),
        Message("user", "ok"),
        _edit(  # the fix touches what all three name: closeness to it decides
            "e",
            "/r/iam.py",
            "costheta = cosd(aoi)\nrho12_s = a / b\nrho12_p = c / (n1costheta2 + n2costheta1)",
            "costheta = cosd(aoi)\nrho12_s = np.where(b == 0, 0.0, a / b)\nrho12_p = np.where(d == 0, 0.0, c / d)",
        ),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    probes = extract_probes(Transcript("t", messages))
    asked = {(p.label, p.message_index) for p in probes}
    assert ("root_cause", 3) in asked and ("root_cause", 5) in asked and ("decision", 1) in asked, asked
    assert len({p.answer for p in probes}) == len(probes)  # each fact once


def test_code_that_does_not_handle_a_case_is_a_stated_cause():
    messages = [
        Message("user", "<pr_description>\nHttpResponse doesn't handle memoryview objects\n</pr_description>"),
        Message("assistant", "I see. The `make_bytes` method doesn't handle `memoryview` objects correctly."),
        Message("user", "ok"),
        _edit("e", "/r/response.py", "return str(value).encode(self.charset)", "return bytes(value)"),
        Message("tool", "The file /r/response.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _causes(messages)] == [
        "I see. The `make_bytes` method doesn't handle `memoryview` objects correctly."
    ], _causes(messages)


def test_a_policy_stated_as_what_cannot_be_done_is_a_refusal():
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Can my reservation be changed if I booked basic economy?"),
        Message("assistant", "If it was booked in basic economy, no: basic economy flights cannot be modified."),
        Message("user", "Then I'll cancel it later, thanks."),
        Message("assistant", "Noted: you will cancel reservation ZFA04Y yourself once you find its details."),
        Message("user", "###STOP###"),
    ]
    got = _decisions(messages)
    assert (2, "If it was booked in basic economy, no: basic economy flights cannot be modified.") in got, got


def test_a_run_that_stopped_at_a_tool_call_ends_with_what_it_said_it_was_doing():
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Upgrade all my reservations with flights over 3 hours to business."),
        Message(
            "assistant",
            "Let's proceed with checking the final reservation, **WUNA5K**.",
            tool_calls=(ToolCall("g", "get_reservation_details", '{"reservation_id": "WUNA5K"}'),),
        ),
        Message("tool", '{"reservation_id": "WUNA5K", "cabin": "economy"}', tool_call_id="g"),
    ]
    assert _outcomes(messages) == {
        "Let's proceed with checking the final reservation, **WUNA5K**.": (
            2,
            "What was the agent doing when the run ended (it had not submitted)?",
        )
    }, _outcomes(messages)


def test_a_handover_summary_is_the_outcome_whole():
    """tau-bench agents end by `transfer_to_human_agents` with a summary written for the next agent:
    the handover is the final state, all of it (not the one sentence a report would pick)."""
    summary = (
        "The user, Amelia Davis, wishes to cancel reservations UDMOP1 and XAZ3C0 despite restrictions on basic "
        "economy flights. Assistance from a human agent is required to proceed with these cancellations."
    )
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Please cancel my reservations UDMOP1 and XAZ3C0, or get me someone who can."),
        Message(
            "assistant", "", tool_calls=(ToolCall("t", "transfer_to_human_agents", json.dumps({"summary": summary})),)
        ),
        Message("tool", "Transfer successful", tool_call_id="t"),
    ]
    assert list(_outcomes(messages)) == [summary], _outcomes(messages)


def test_an_eligibility_ruling_with_its_reason_is_a_decision_and_a_question_about_it_is_not():
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "My flight was delayed, and I want to cancel my trip from JFK."),
        Message("assistant", "This will help me determine if you're eligible for any compensation based on the delay."),
        Message("user", "Sure, my user ID is mei_brown_7075 and I have travel insurance."),
        Message(
            "assistant", "Since you have travel insurance, you are eligible to cancel the flight and get a full refund."
        ),
        Message("user", "Great, thanks, I'll decide later. ###STOP###"),
    ]
    got = _decisions(messages)
    assert [at for at, _ in got] == [4], got
    assert "eligible" in _questions(messages)[4]


def _questions(messages: list[Message]) -> dict[int, str]:
    return {p.message_index: p.question for p in extract_probes(Transcript("t", messages)) if p.label == "decision"}


def test_the_explanation_before_the_first_edit_of_the_fixed_file_is_the_cause():
    """Agents explain before they edit (SWE-agent's DISCUSSION, mini-swe-agent's THOUGHT, OpenHands'
    message, Claude Code's text), often without "the issue is": a sentence there that says how the
    code behaves, naming code, is the cause when no statement of one was made."""
    messages = [
        Message("user", "<pr_description>\nQuery.count() is wrong after values() on an annotation\n</pr_description>"),
        _bash("a", "python reproduce.py", "Let me reproduce the issue first."),
        _out("a", "3"),
        _edit(
            "e",
            "/r/django/db/models/lookups.py",
            "self.rhs.clear_select_clause()",
            "if not self.rhs.has_select_fields:\n    self.rhs.clear_select_clause()",
            "Looking at `process_rhs`, it always calls `clear_select_clause()` on the subquery, so the "
            "annotation selected by `values('m')` is dropped. I will only clear it when no fields are selected.",
        ),
        Message("tool", "The file /r/django/db/models/lookups.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)
    assert [at for at, _ in causes] == [3], causes
    assert "it always calls `clear_select_clause()` on the subquery" in causes[0][1], causes


def test_a_plan_before_the_edit_is_no_cause():
    """What the agent is about to do ("Now let me edit `_serialize` so that it always rounds") says no cause."""
    messages = [
        Message("user", "<issue>\nTimeDelta serialization precision: 345 ms comes back as 344\n</issue>"),
        _edit(
            "e",
            "/r/src/marshmallow/fields.py",
            "return int(value.total_seconds() / base_unit.total_seconds())",
            "return int(round(value.total_seconds() / base_unit.total_seconds()))",
            "Now let me edit `_serialize` in `fields.py` so that it always rounds.",
        ),
        Message("tool", "The file /r/src/marshmallow/fields.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert _causes(messages) == []


def _results(messages: list[Message]) -> list[tuple[int, str]]:
    probes = extract_probes(Transcript("t", messages))
    return [(p.message_index, p.answer) for p in probes if p.label == "test_result"]


def test_what_the_agent_read_off_its_check_after_the_fix_is_a_result():
    """An ad-hoc check prints values, not a verdict; the agent says what they show ("Now
    `User._meta.pk.auto_created` is `False` instead of `True`") in its next message: that is the
    result after the change. A plan in that message ("Let me run the tests") is not."""
    messages = [
        Message("user", "<pr_description>\nmodels.W042 raised on an inherited manually specified primary key\n"),
        _edit("e", "/r/django/db/models/options.py", "field.primary_key = True", "field.auto_created = False"),
        Message("tool", "The file /r/django/db/models/options.py has been edited.", tool_call_id="e"),
        _bash("a", "python check_pk.py", "Now let me test if my fix works:"),
        _out("a", "User:\n  PK: app.User.entity_ptr\n  PK auto_created: False"),
        _bash(
            "b",
            "python -m pytest tests/check_framework -q",
            "Great! Now `User._meta.pk.auto_created` is `False` instead of `True`. Let me run the tests now.",
        ),
        _out("b", "no tests ran in 0.01s"),
        Message("assistant", "The fix sets `auto_created = False` when a parent link with an explicit PK is promoted."),
    ]
    said = [r for r in _results(messages) if r[0] == 5]
    assert said == [(5, "Now `User._meta.pk.auto_created` is `False` instead of `True`.")], _results(messages)


def test_a_reading_of_a_check_whose_output_is_asked_is_not_asked_again():
    """Where the check's output gives a result (a verdict line), the agent's reading of it would ask
    the same fact twice."""
    messages = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        _edit("e", "/r/pvlib/iam.py", "rho12_s = a / b", "rho12_s = np.where(b == 0, 0.0, a / b)"),
        Message("tool", "The file /r/pvlib/iam.py has been edited.", tool_call_id="e"),
        _bash("a", "python test_issue.py", "Now let me test if this fixes the issue:"),
        _out("a", "Result: 0.0\nIs nan: False\nAll tests passed!"),
        _bash("b", "git diff", "Great! Now `aoi=100` with `n=1` returns `0.0` instead of `nan`."),
        _out("b", "diff --git a/pvlib/iam.py b/pvlib/iam.py"),
        Message("assistant", "The fix replaces the division in `rho12_s` by `np.where(b == 0, 0.0, a / b)`."),
    ]
    assert [a for _, a in _results(messages)] == ["All tests passed!"], _results(messages)


def test_an_announcement_of_the_issue_states_the_cause_in_the_sentence_after_it():
    """ "Ah! Now I see the issue!" names nothing; the next sentence says what the agent saw."""
    messages = [
        Message("user", "<pr_description>\nHttpResponse doesn't handle memoryview objects\n</pr_description>"),
        Message("assistant", "The issue is that `make_bytes` calls `str(value)` for a `memoryview`."),
        Message("user", "ok"),
        Message(
            "assistant",
            "Ah! Now I see the issue! `make_bytes` is being called with integers (77, 121), not with the memoryview "
            "object!\n\nLet me check the content setter again:",
        ),
        Message("user", "ok"),
        _edit("e", "/r/response.py", "if hasattr(value, '__iter__'):", "if hasattr(value, '__iter__') and not mv:"),
        Message("tool", "The file /r/response.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)
    assert any(at == 3 and "`make_bytes` is being called with integers" in a for at, a in causes), causes


def test_this_is_a_bug_points_back_to_the_sentence_before_it():
    messages = [
        Message("user", "<pr_description>\nFiltering on query result overrides GROUP BY of internal query\n"),
        Message(
            "assistant",
            "So `has_select_fields` only checks `annotation_select_mask`, not `annotation_select`. This is a bug!",
        ),
        Message("user", "ok"),
        _edit("e", "/r/query.py", "return bool(self.select)", "return bool(self.select or self.annotation_select)"),
        Message("tool", "The file /r/query.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _causes(messages)] == [
        "So `has_select_fields` only checks `annotation_select_mask`, not `annotation_select`. This is a bug!"
    ], _causes(messages)


def test_what_the_code_does_against_what_it_should_is_a_cause():
    """ "The check includes X as required. However, X should not be required for Y": what the code does
    and what it should do, the cause stated as a contrast (not the plan that follows it)."""
    messages = [
        Message("user", "<issue>\nPixel Representation should not be required for Float Pixel Data\n</issue>"),
        Message(
            "assistant",
            "The section of code that checks for required elements includes 'PixelRepresentation' as a required "
            "attribute. However, according to the issue, 'PixelRepresentation' should not be required for Float "
            "Pixel Data. We need to modify this check.",
        ),
        Message("user", "ok"),
        _edit("e", "/r/numpy_handler.py", "'Columns', 'PixelRepresentation',", "'Columns',"),
        Message("tool", "The file /r/numpy_handler.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = [a for _, a in _causes(messages)]
    assert causes and "includes 'PixelRepresentation' as a required attribute" in causes[0], causes


def test_a_policy_ruling_stated_before_the_next_call_is_a_decision_and_a_first_person_aside_is_not():
    """Agents rule by policy in the message that goes on to its next call ("KC18K6 is in basic economy,
    which cannot be modified"); there only the policy's impersonal wording counts: a coding agent's
    "I can't find the file" before its next call rules on nothing."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Please upgrade all my reservations to business class wherever possible."),
        Message(
            "assistant",
            "The reservation **KC18K6** is in basic economy class, which cannot be modified to change cabin class. "
            "Therefore, I cannot upgrade this reservation.",
            tool_calls=(ToolCall("s", "get_reservation_details", '{"reservation_id": "H8Q05L"}'),),
        ),
        Message("tool", '{"reservation_id": "H8Q05L", "cabin": "economy"}', tool_call_id="s"),
        Message(
            "assistant",
            "Unfortunately, I can't find the fare rules here, let me look at the next one.",
            tool_calls=(ToolCall("t", "get_reservation_details", '{"reservation_id": "WUNA5K"}'),),
        ),
        Message("tool", '{"reservation_id": "WUNA5K", "cabin": "economy"}', tool_call_id="t"),
        Message("assistant", "H8Q05L and WUNA5K can be upgraded. Shall I proceed?"),
        Message("user", "Thanks, not now. ###STOP###"),
    ]
    got = _decisions(messages)
    assert [at for at, _ in got] == [2] and "cannot be modified" in got[0][1], got


def test_a_cost_over_the_customers_budget_is_a_ruling():
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Upgrade both passengers to business, but I won't pay more than $600."),
        Message(
            "assistant",
            "The total cost for upgrading both passengers to business class is $1200, which exceeds your budget of "
            "$600. However, upgrading just one passenger will cost exactly $600.",
        ),
        Message("user", "Then upgrade only Noah Hernandez. ###STOP###"),
    ]
    got = _decisions(messages)
    assert any(at == 2 and "exceeds your budget" in a and "exactly $600" in a for at, a in got), got


def test_a_choice_needs_an_object_and_a_payment_chosen_is_one():
    """ "I want to modify a few of them" names nothing to act on; "use my credit card ending in 7334" does."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Hi, I have several reservations."),
        Message("assistant", "Sure, which ones would you like to change?"),
        Message("user", "I want to modify a few of them."),
        Message("assistant", "The second cheapest economy option is HAT069 and HAT258, $290 in total. Shall I book?"),
        Message("user", "That sounds good. Can you please use my credit card ending in 7334 for this booking?"),
        Message("assistant", "Booked: reservation HATHAT, $290 on the card ending in 7334."),
        Message("user", "Thanks ###STOP###"),
    ]
    got = [at for at, _ in _decisions(messages)]
    assert got == [5], _decisions(messages)


def test_a_conversation_asks_rulings_and_choices_both_and_an_agent_alone_three_decisions():
    """A conversation's decisions are the agent's rulings and the person's choices, asked by turns (a run
    of choices does not crowd out every ruling); an agent working alone is asked its best three."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "I want to change my flight to the cheapest business round trip."),
        Message("assistant", "Unfortunately, basic economy flights cannot be modified, so the flight must stay."),
        Message("user", "Then I'd like to add 2 checked bags to reservation ZFA04Y."),
        Message("assistant", "Bags can be added. How would you like to pay?"),
        Message("user", "I'll take the card ending in 7447 for the bags."),
        Message("assistant", "Unfortunately, travel insurance cannot be added after booking, as you asked earlier."),
        Message("user", "I'll go with certificate_7504069 for the second bag, then."),
        Message("assistant", "Done: 2 bags on ZFA04Y."),
        Message("user", "Thanks ###STOP###"),
    ]
    got = [at for at, _ in _decisions(messages)]
    assert {2, 6} <= set(got) and {5, 7} & set(got), _decisions(messages)
    coding = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        Message("assistant", "Instead of adding an early return, I should fix the division by zero in `rho12_s`."),
        Message("user", "ok"),
        Message("assistant", "Rather than `np.where`, I will use `np.divide` with `where=` to avoid the warning."),
        Message("user", "ok"),
        Message("assistant", "I'll keep the `tau_0` term instead of recomputing it, because it is already right."),
        Message("user", "ok"),
        Message("assistant", "The simplest fix is to divide only where `b` is not zero, since `b == 0` gives nan."),
        Message("user", "ok"),
        _edit("e", "/r/iam.py", "rho12_s = a / b", "rho12_s = np.divide(a, b, where=b != 0)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert len(_decisions(coding)) == 3, _decisions(coding)


def test_what_the_agent_offers_instead_after_a_failed_call_is_a_decision():
    """After a call fails the agent says why and offers another way ("Let's consider the next available
    option, flight HAT271"): the way chosen next; a reply that only restates the error offers nothing."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Book me on HAT139 from ORD to PHL on May 26, two passengers."),
        Message("assistant", "", tool_calls=(ToolCall("b", "book_reservation", '{"flight": "HAT139"}'),)),
        Message("tool", "Error: not enough seats on flight HAT139", tool_call_id="b"),
        Message(
            "assistant",
            "It seems that there are not enough economy seats on flight HAT139 for both passengers. Let's consider "
            "the next available option, flight HAT271, which has enough seats.\n\nWould you like to book it instead?",
        ),
        Message("user", "Hmm, let me think first."),
        Message("assistant", "", tool_calls=(ToolCall("c", "book_reservation", '{"flight": "HAT271"}'),)),
        Message("tool", "Error: not enough balance in payment method gift_card_5094406", tool_call_id="c"),
        Message("assistant", "It seems that the gift card balance is not sufficient for this booking."),
        Message("user", "Thanks ###STOP###"),
    ]
    got = _decisions(messages)
    assert [at for at, _ in got] == [4], got
    assert got[0][1].endswith("Let's consider the next available option, flight HAT271, which has enough seats.")
    assert "instead after the failed call" in _questions(messages)[4]


def test_a_plan_of_where_the_fix_goes_gives_way_to_a_later_one_before_the_edit():
    """ "We need to modify the `pattern` rule", then "We can do this by changing the `idseqsingle` rule":
    the later plan is the one the edit carries out; the earlier is no cause."""
    messages = [
        Message("user", "<issue>\nA single-element tuple in a case fails to compile\n</issue>"),
        Message("assistant", "To fix the issue with `match`, we need to modify the `pattern` rule to handle tuples."),
        Message("user", "ok"),
        Message("assistant", "We can do this by changing the `idseqsingle` rule to allow it to be treated as a tuple."),
        Message("user", "ok"),
        _edit("e", "/w/src/parser.c", "DEF(idseqsingle);", "DEF(idseqsingle);\n  AST_NODE(TK_TUPLE);"),
        Message("tool", "The file /w/src/parser.c has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [3], _causes(messages)


def test_what_the_agent_will_do_given_a_reason_is_a_ruling_and_an_offer_is_not():
    """ "Since you are a gold member, I can offer you a certificate" rules with its reason; "If you would
    like, I can transfer you to a human agent" only offers."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "My flight HAT045 was delayed and I want compensation."),
        Message("assistant", "If you would like, I can transfer you to a human agent who may be able to help."),
        Message("user", "No, I am a gold member, please check."),
        Message("assistant", "Since you are a gold member, I can offer you a certificate for the delay."),
        Message("user", "OK, thanks ###STOP###"),
    ]
    got = _decisions(messages)
    assert [at for at, _ in got] == [4], got
    assert "would do for the customer" in _questions(messages)[4]


def test_a_booking_reported_with_its_details_listed_is_asked_as_the_sentence_that_leads_the_list():
    """tau-bench: the id the booking created sits in a list item ("Reservation ID:** HATHAT"); the
    report is the sentence leading the list, with that item beside it."""
    booked = {"reservation_id": "HATHAT", "flights": [{"flight_number": "HAT088"}]}
    messages = [
        Message("user", "Book me the direct flight from JFK to DTW on May 17."),
        Message("assistant", "", tool_calls=(ToolCall("b", "book_reservation", '{"flight": "HAT088"}'),)),
        Message("tool", json.dumps(booked), tool_call_id="b"),
        Message(
            "assistant",
            "Your booking from JFK to DTW on May 17 has been successfully completed. Here are the details:\n\n"
            "- **Reservation ID:** HATHAT\n- **Cabin:** Economy\n\nIf you need anything else, feel free to ask!",
        ),
        Message("user", "Thanks! ###STOP###"),
    ]
    got = _outcomes(messages)
    assert list(got) == [
        "Your booking from JFK to DTW on May 17 has been successfully completed. Here are the details: - "
        "**Reservation ID:** HATHAT"
    ], got
    # As the transcript states it (verbatim up to spacing), so the judge finds it in the full history.
    outcome = next(p for p in extract_probes(Transcript("t", messages)) if p.label == "outcome")
    assert DeterministicJudge().judge(outcome, messages).status == "kept"


def test_a_report_of_removing_a_scratch_script_gives_way_to_the_sentence_on_the_fix():
    """SWE-agent: the last message says it removed its reproduction script, then that the fix is done."""
    messages = [
        Message("user", "Fix the bug in pixel_array for float pixel data."),
        Message("assistant", "Edit the handler.\n```\nedit 10:10\n    return arr\nend_of_edit\n```"),
        Message("user", "File updated."),
        Message(
            "assistant",
            "The `reproduce_bug.py` script has been successfully removed. With the bug fixed and the cleanup "
            "complete, we can now submit the changes to the code base.\n```\nsubmit\n```",
        ),
    ]
    got = _outcomes(messages)
    assert "With the bug fixed and the cleanup complete, we can now submit the changes to the code base." in got, got
    assert not any("removed" in answer for answer in got), got


def test_what_the_customer_will_do_after_the_final_report_is_asked_and_closing_thanks_are_not():
    blocked = [
        Message("system", "You are an airline agent."),
        Message("user", "I want to cancel my trip, I feel unwell."),
        Message("assistant", "Please give me your reservation ID."),
        Message("user", "I don't remember it."),
        Message("assistant", "Unfortunately, I need the reservation ID to proceed with the cancellation."),
        Message("user", "Okay, I'll try to find it and contact a human agent if needed. Thanks for your help!"),
        Message("assistant", "You're welcome! Feel free to reach out."),
        Message("user", "Thank you! ###STOP###"),
    ]
    got = _outcomes(blocked)
    assert got["Okay, I'll try to find it and contact a human agent if needed."] == (
        5,
        "What did the customer say in reply to the agent's final report?",
    ), got
    closing = [*blocked[:5], Message("user", "I really appreciate your help. That's all I needed. ###STOP###")]
    assert list(_outcomes(closing)) == ["Unfortunately, I need the reservation ID to proceed with the cancellation."]


def test_the_report_is_found_behind_several_rounds_of_thanks():
    messages = [
        Message("user", "Cancel my reservation please."),
        Message("assistant", "Unfortunately, I need the reservation ID to identify and cancel your reservation."),
        Message("user", "I’ll do that and reach out as soon as I find it."),
    ]
    for _ in range(4):
        messages += [
            Message("assistant", "You're welcome! Feel free to reach out whenever you're ready."),
            Message("user", "Thanks, you too!"),
        ]
    got = _outcomes(messages)
    assert list(got) == [
        "Unfortunately, I need the reservation ID to identify and cancel your reservation.",
        "I’ll do that and reach out as soon as I find it.",
    ], got


def test_a_conversation_with_five_rulings_and_choices_asks_all_five():
    """A support conversation states more decisions than a coding run (rulings, grants, plans, the person's
    choices): five distinct ones are all asked (issue 23: a payment plan after three rulings went unasked)."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "I want to change my flight to the cheapest business round trip."),
        Message("assistant", "Unfortunately, basic economy flights cannot be modified, so the flight must stay."),
        Message("user", "Then I'd like to add 2 checked bags to reservation ZFA04Y."),
        Message("assistant", "Unfortunately, travel insurance cannot be added after booking, as you asked earlier."),
        Message("user", "I'll take the card ending in 7447 for the bags."),
        Message(
            "assistant",
            "If only one certificate can be used per reservation, we will apply the certificate with the highest "
            "balance first.",
        ),
        Message("user", "I'll go with certificate_7504069 for the second bag, then."),
        Message("assistant", "Done: 2 bags on ZFA04Y."),
        Message("user", "Thanks ###STOP###"),
    ]
    got = [at for at, _ in _decisions(messages)]
    assert len(got) == 5 and 6 in got, _decisions(messages)


def test_a_decision_to_act_after_a_finding_is_a_decision_and_a_promise_waiting_on_the_customer_is_not():
    """An agent that says what it found and then "I will proceed with canceling this reservation" has
    decided, with its reason; "Please confirm ..., and I'll proceed with the booking" waits on the person,
    and sympathy ("I understand your situation.") is no reason."""
    messages = [
        Message("system", TAU_POLICY),
        Message("user", "Cancel any of my reservations whose flights are over 3 hours long."),
        Message(
            "assistant",
            "The flights that are over 3 hours long are in the reservation with ID **S61CZX**. I will proceed with "
            "canceling this reservation. Could you please confirm?",
        ),
        Message("user", "Yes, please."),
        Message("assistant", "Flight HAT271 costs $172. Please confirm, and I'll proceed with the booking."),
        Message("user", "Hmm, not yet."),
        Message(
            "assistant", "I understand your situation. I will proceed with downgrading reservation ZFA04Y to economy."
        ),
        Message("user", "Good."),
        Message("assistant", "", tool_calls=(ToolCall("u", "update_reservation_flights", '{"cabin": "economy"}'),)),
        Message("tool", '{"reservation_id": "ZFA04Y", "cabin": "economy"}', tool_call_id="u"),
        Message("assistant", "Reservation ZFA04Y is now economy; the difference is refunded to your card."),
        Message("user", "Thanks ###STOP###"),
    ]
    got = _decisions(messages)
    assert (
        2,
        "The flights that are over 3 hours long are in the reservation with ID **S61CZX**. I will proceed with "
        "canceling this reservation.",
    ) in got, got
    assert not any(at == 4 for at, _ in got), got
    assert (6, "I will proceed with downgrading reservation ZFA04Y to economy.") in got, got


def test_a_decision_restated_many_messages_later_does_not_take_the_second_slot():
    """Agents restate a choice when they carry it out, often far past the six messages restatements are
    compared within; the second slot goes to the other decision, not to the same one said again."""
    filler = [m for _ in range(5) for m in (_bash("l", "ls"), _out("l", "a.py"))]
    messages = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        Message("assistant", "Instead of adding an early return, I should fix the division by zero in `rho12_s`."),
        Message("user", "ok"),
        Message("assistant", "I'll keep the `tau_0` term as it is, because it is already right."),
        Message("user", "ok"),
        *filler,
        Message("assistant", "As planned, instead of adding an early return I should fix the division in `rho12_s`."),
        Message("user", "ok"),
        _edit("e", "/r/iam.py", "rho12_s = a / b", "rho12_s = np.divide(a, b, where=b != 0)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    got = sorted(at for at, _ in _decisions(messages))
    assert got in ([1, 3], [3, 15]), _decisions(messages)


def test_a_run_result_naming_the_fix_is_no_decision():
    """The noun "fix" ("after the fix", "with my fix") says when a result was seen, not what the agent
    chose: "With the fix, `f` returns `0.0` instead of `nan`" is an observation; "the fix is to use X
    rather than Y" still decides."""
    messages = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        _edit("e", "/r/iam.py", "rho12_s = a / b", "rho12_s = np.divide(a, b, where=b != 0)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="e"),
        Message("assistant", "With the fix, `physical(100, n=1)` returns `0.0` instead of `nan` as expected."),
        Message("user", "ok"),
        Message("assistant", "The fix is to use `np.divide` rather than `np.where`, to avoid the warning."),
        Message("user", "ok"),
        _edit("f", "/r/iam.py", "rho12_p = c / d", "rho12_p = np.divide(c, d, where=d != 0)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="f"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _decisions(messages)] == [5], _decisions(messages)


def test_a_question_or_a_guess_is_no_decision():
    """ "Should I use X instead of Y?" asks and "Maybe we should revert ..." guesses: neither is decided.
    The agent's answer to its own question is."""
    messages = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        Message("assistant", "Should I use `np.divide` instead of `np.where` here?"),
        Message("user", "ok"),
        Message("assistant", "Maybe we should revert `rho12_s` to the old formula rather than patch it."),
        Message("user", "ok"),
        Message("assistant", "I'll use `np.divide` instead of `np.where`, because it avoids the warning."),
        Message("user", "ok"),
        _edit("f", "/r/iam.py", "rho12_p = c / d", "rho12_p = np.divide(c, d, where=d != 0)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="f"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _decisions(messages)] == [5], _decisions(messages)


def test_a_text_action_agents_last_words_are_its_report_not_the_plan_before_its_last_check():
    """SWE-agent before function calling writes its command in the text: the reply with `submit`
    is its last action, so the report is read there ("the assertions succeeded"), never from the
    plan of an earlier step ("To be certain, I'll run main.py")."""
    messages = [
        Message("system", "You are an autonomous programmer."),
        Message(
            "user", "ISSUE:\nhas_close_elements gives wrong results for unsorted input\n\nINSTRUCTIONS:\nSolve it."
        ),
        Message(
            "assistant", "The distance must be absolute.\n```\nedit 15:15\n    distance = abs(a - b)\nend_of_edit\n```"
        ),
        Message("user", "[File: /repo/main.py (23 lines total)]\nFile updated."),
        Message(
            "assistant",
            "It looks like the edit succeeded. To be certain, I'll run the main.py file since it has tests.\n"
            "```\npython main.py\n```",
        ),
        Message("user", "Your command ran successfully and did not produce any output."),
        Message(
            "assistant",
            "It looks like the assertions succeeded! The fix should work and I will now submit.\n```\nsubmit\n```",
        ),
    ]
    got = _outcomes(messages, {"format": "swe-agent"})
    assert "It looks like the assertions succeeded!" in got, got
    assert not any("To be certain" in a for a in got), got


def test_the_task_quoted_or_a_deliberation_is_no_decision():
    """ "The PR says the fix is to ..." restates the task (asked as the task already), and "let me think
    about whether X is the right approach" weighs without choosing: the agent's own choice is the decision."""
    messages = [
        Message("user", "<pr_description>\niam.physical returns nan for aoi > 90 when n = 1\n</pr_description>"),
        Message("assistant", "The PR description says the fix is to use `np.divide` instead of `np.where` there."),
        Message("user", "ok"),
        Message("assistant", "Now I need to think about whether `np.divide` is the right approach for `rho12_s`."),
        Message("user", "ok"),
        Message("assistant", "I'll use `np.divide` instead of `np.where`, because it avoids the warning."),
        Message("user", "ok"),
        _edit("f", "/r/iam.py", "rho12_p = c / d", "rho12_p = np.divide(c, d, where=d != 0)"),
        Message("tool", "The file /r/iam.py has been edited.", tool_call_id="f"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _decisions(messages)] == [5], _decisions(messages)


def test_a_hypothesis_the_agent_goes_to_check_is_no_cause_and_no_decision():
    """ "Let me check if the issue is that ..." and "let me see if there's a simpler fix" say what the agent
    will test next, not what it found or chose; a check the code makes ("the fix should be to check if
    `x` is empty") is still a statement."""
    messages = [
        Message("user", "<pr_description>\nL003 indents select targets in WITH statements wrongly\n</pr_description>"),
        Message(
            "assistant", "Actually, let me check if the issue is that `L036` creates the newline in the wrong place."
        ),
        Message("user", "ok"),
        Message("assistant", "Instead of trying to fix `L036`, let me see if there's a simpler fix in `_make_indent`."),
        Message("user", "ok"),
        Message(
            "assistant",
            "The issue is that `_make_indent` adds one space too many, so the fix should be to check if "
            "`this_indent_num` is zero instead of subtracting it.",
        ),
        Message("user", "ok"),
        _edit("e", "/r/L003.py", "num=comp_indent_num - this_indent_num", "num=comp_indent_num"),
        Message("tool", "The file /r/L003.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [5], _causes(messages)
    assert not {1, 3} & {at for at, _ in _decisions(messages)}, _decisions(messages)


def test_a_finding_that_the_code_does_what_is_wanted_is_no_cause():
    """ "Ah, I see! `x or ''` evaluates to `''`. That's actually what we want." explains a check that
    came out right, between two edits: nothing is wrong there, so it is no cause of the problem."""
    messages = [
        Message(
            "user", "<pr_description>\nChanging user's email could invalidate password reset tokens\n</pr_description>"
        ),
        Message("assistant", "The problem is that `_make_hash_value` does not include the user's email in the hash."),
        Message("user", "ok"),
        _edit("e", "/r/tokens.py", "return str(user.pk) + password", "return str(user.pk) + password + email"),
        Message("tool", "The file /r/tokens.py has been edited.", tool_call_id="e"),
        Message(
            "assistant",
            "Ah, I see! When `email = None`, the expression `getattr(user, email_field_name, '') or ''` evaluates "
            "to `''`. That's actually what we want, not the string `'None'`.",
        ),
        Message("user", "ok"),
        _edit("f", "/r/tokens.py", "+ email", "+ (email or '')"),
        Message("tool", "The file /r/tokens.py has been edited.", tool_call_id="f"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [1], _causes(messages)


def test_the_real_issue_and_an_explanation_by_because_are_causes():
    """Agents of every framework revise a finding with "the real issue is that ..." (or "the underlying
    problem", "the actual bug") and explain a behaviour with "That's because ...": both state a cause."""
    for said in (
        "Actually, I think the real issue is that `Delimited` drops segments when it returns `from_unmatched`.",
        "That's because `modpath_from_file` checks for `__init__.py` files along the path.",
    ):
        messages = [
            Message("user", "<pr_description>\nlint fails on a namespace package\n</pr_description>"),
            Message("assistant", said),
            Message("user", "ok"),
            Message("assistant", "Let me apply the change now."),
            Message("user", "ok"),
            _edit("e", "/r/grammar.py", "return MatchResult.from_unmatched(s)", "return MatchResult(s)"),
            Message("tool", "The file /r/grammar.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        assert [at for at, _ in _causes(messages)] == [1], (said, _causes(messages))


def test_an_explanation_of_the_agents_own_test_or_attempt_is_no_cause():
    """ "That's because I was creating the `IsNull` instance directly" or "the issue is that my monkey patch
    affects all `WhereNode` instances" explains the agent's own scaffolding, not the problem's cause; so do
    its own algorithm, approach, current code and debug prints."""
    for said in (
        "But wait, my test showed that `IsNull(None)` was accepted. That's because I was creating the `IsNull` "
        "instance directly, not through `build_lookup`.",
        "Actually, the issue is that my monkey patch is affecting all `WhereNode` instances of the query.",
        # the agent's own attempt or debugging (DeepSeek runs of django-11848, -13964, -15388)
        "I see the issue. My algorithm is checking if `candidate_year - current_year > 50`, but 1900 is in the past.",
        "Oh, I see the issue! The debug print shows `{self.name}`. That's because I used f-string incorrectly.",
        "But with our current code, `template_changed` returns `True` for ANY file under a template directory.",
    ):
        messages = [
            Message(
                "user", "<pr_description>\nPrevent using __isnull lookup with non-boolean value\n</pr_description>"
            ),
            Message("assistant", said),
            Message("user", "ok"),
            Message("assistant", "Let me apply the change now."),
            Message("user", "ok"),
            _edit("e", "/r/lookups.py", "prepare_rhs = False", "prepare_rhs = False\n    def check(self): pass"),
            Message("tool", "The file /r/lookups.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        assert _causes(messages) == [], (said, _causes(messages))


def test_a_cause_said_of_a_named_thing_or_as_what_is_wrong_is_a_stated_cause():
    """Agents name the thing before the verb ("The issue with `DurationField` is that ...", "The bug
    in `_cstack` is ...") or say what is wrong and why ("`_check` is wrong because ..."): causes
    stated as plainly as "the issue is that ..." (mini-swe-agent, SWE-agent and OpenHands runs alike)."""
    for cause in (
        "The issue with `DurationField` is that `[HH:[MM:]]` suggests minutes are optional, but `_parse` needs them.",
        "The bug in `_cstack` is that `cright` is filled with ones instead of the values of `right`.",
        "The current check in `_cstack` is wrong because `cright` is filled with ones, not with `right`.",
    ):
        messages = [
            Message("user", "<pr_description>\nSeparability is wrong for nested models\n</pr_description>"),
            _bash("g", "grep -n cright r/separable.py", "Let me look at the code."),
            _out("g", "245:        cright[-right.shape[0]:, -right.shape[1]:] = 1"),
            Message("assistant", cause),
            Message("user", "ok"),
            _edit("e", "/r/separable.py", "cright[-right.shape[0]:, -right.shape[1]:] = 1", "cright[...] = right"),
            Message("tool", "The file /r/separable.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        assert [at for at, _ in _causes(messages)] == [3], (cause, _causes(messages))


def test_a_weakness_or_a_named_bug_class_is_the_cause_of_a_challenge():
    """Security agents (SWE-agent's CTF demonstrations, EnIGMA) find a weakness, not "the issue": "the
    weakness ... lies within the small exponent (`e = 5`)", "`gets` offers a buffer overflow", or name it
    by the attack it opens ("This setup is ideal for applying Hastad's Broadcast Attack", "vulnerable to");
    a short code entity the task does not spell (`e = 5`) is new, though it has no name of
    three letters."""
    for cause in (
        "RSA-1024 is not factorizable, so the weakness likely lies within the small exponent (`e = 5`).",
        "The main function reads into a stack buffer using `gets`, which gives us a buffer overflow.",
        "All time capsules use the same public exponent `e = 5`. This setup is ideal for applying Hastad's "
        "Broadcast Attack, which uses the Chinese Remainder Theorem.",
        "Every capsule is encrypted with `e = 5` and a new modulus, so the scheme is vulnerable to a low exponent "
        "broadcast attack.",
    ):
        messages = [
            Message(
                "user", "We're solving this CTF challenge: Baby Time Capsule. Connect to the server and get the flag."
            ),
            _bash("c", "cat server.py", "We will start by examining the server code.\n```\ncat server.py\n```"),
            _out("c", "e = 5\nn = p * q"),
            Message("assistant", f"{cause} Let us collect some ciphertexts."),
            Message("user", "ok"),
            Message("assistant", "Flag found."),
        ]
        assert [at for at, _ in _causes(messages)] == [3], (cause, _causes(messages))
    # a plan to test for a weakness, or a guess at one, finds none
    for guess in (
        "To test for command injection vulnerabilities, I will submit the form with `; id` appended.",
        "This input could be exploitable, which gives us a command injection if it is not sanitized.",
    ):
        messages[3] = Message("assistant", guess)
        assert _causes(messages) == [], (guess, _causes(messages))


def test_in_a_run_with_no_fix_the_reading_of_code_just_shown_is_the_cause():
    """A challenge or an analysis has no source fix to explain: what the agent read off the code it
    was just shown (SWE-agent's CTF thoughts after `decompile`, observations in user messages) is what
    the run found. A lead-in ("... gives the following algorithm:1.") and a plan are not the finding."""
    messages = [
        Message("user", "We're solving this CTF challenge: Katy. Connect to the server and get the flag."),
        Message("assistant", "We will decompile the binary.\n```\ndecompile release --function_name _hash\n```"),
        Message("user", "ulong _hash(char *s) {\n  for (i = 0; s[i]; i++) local_10 += s[i] << i;\n  return local_10;"),
        Message(
            "assistant",
            "Decompilation of `_hash` gives the following algorithm:1. Go over the string.2. For each character "
            "add to `local_10` the character shifted left by its position.So the seed leaks the flag.We will "
            "continue with the next function.\n```\ndecompile release --function_name next_cypher\n```",
        ),
        Message("user", "ulong next_cypher(void) {\n  seed = seed * 0x5deece66d + 0xb & 0xffffffffffff;\n}"),
        Message("assistant", "Let me write a script that uses `pwn` to talk to the server.\n```\ncreate a.py\n```"),
        Message("user", "[File: a.py (1 lines total)]"),
        Message("assistant", "Flag found."),
    ]
    causes = _causes(messages)
    assert [at for at, _ in causes] == [3], causes
    assert "shifted left by its position" in causes[0][1], causes


def test_a_slip_in_the_agents_own_edit_is_no_cause_of_the_problem():
    """After its first edit an agent often finds what its edit broke ("The `try:` line should be
    indented", "We added the operators after the function, not inside the class", "I accidentally
    removed the `def` line"): its own slip, not the cause of the problem, which was stated before."""
    cause = "The issue is that `data_element = self[key]` is outside the `try` block in `to_json_dict`."
    for slip in (
        "I see the problem. The `try:` line should be indented, and `data_element = self[key]` too.",
        "I see the problem! We added the `__radd__` method after the `unpickle` function, not inside `LazyObject`.",
        "I see the issue! It seems that when replacing lines 206-220, I accidentally removed `def contents(self):`.",
    ):
        messages = [
            Message("user", "<pr_description>\nto_json_dict raises with suppress_invalid_tags=True\n</pr_description>"),
            _bash("g", "grep -n 'self\\[key\\]' pydicom/dataset.py", cause),
            _out("g", "2495:            data_element = self[key]"),
            _edit("e", "/r/pydicom/dataset.py", "data_element = self[key]", "try:\ndata_element = self[key]"),
            Message("tool", "The file /r/pydicom/dataset.py has been edited.", tool_call_id="e"),
            _bash("p", "python -c 'import pydicom'", slip),
            _out("p", "IndentationError: expected an indented block"),
            _edit("f", "/r/pydicom/dataset.py", "try:\ndata_element = self[key]", "try:\n    data_element = self[key]"),
            Message("tool", "The file /r/pydicom/dataset.py has been edited.", tool_call_id="f"),
            Message("assistant", "Done."),
        ]
        assert [at for at, _ in _causes(messages)] == [1], (slip, _causes(messages))


def test_a_step_with_its_reason_is_a_decision_and_a_prediction_a_check_or_an_open_alternative_is_not():
    """What the agent will do with why ("we should also fix `get_choices` for consistency", "`json_key` should be
    computed before the try block since ...", "However, since the PR ..., I should focus on ...") decides; a
    prediction with a reason ("This should work since ..."), a check to make ("I should also check if `X` should
    be updated too, since ..."), a caution ("we should be careful because ..."), a way weighed against another
    ("... Or maybe we should ...") and the issue explained ("The issue is that ... should be changed because ...")
    do not."""
    decided = [
        "But we should also fix `get_choices` for consistency.",
        "Actually, `json_key` should be computed before the try block since it's needed for the error message.",
        "However, since the PR description only mentions `get_FIELD_display`, I should focus on fixing that first.",
    ]
    not_decided = [
        "This should work since `get_choices` now calls `distinct()`.",
        "Now I should also check if `SplitArrayWidget` should be updated too, since it has the same pattern.",
        "However, we should be careful because `ValueError` is a broad exception in `path.resolve()`.",
        "I think we should return `Unknown` for consistency with `Uninferable`. Or maybe we should return `<Unknown>`.",
        "The issue is that `entity_ptr` was created with `auto_created=True`, but it should be changed to "
        "`auto_created=False` because it is now the primary key.",
    ]
    for said in decided + not_decided:
        messages = [
            Message("user", "<pr_description>\nDuplicate choices in a form field\n</pr_description>"),
            Message("assistant", said),
            Message("user", "ok"),
            _edit(
                "e",
                "/r/models.py",
                "def get_choices(f):\n    qs = qs.complex_filter(f)",
                "def get_choices(f):\n    qs = qs.complex_filter(f).distinct()",
            ),
            Message("tool", "The file /r/models.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        got = [a for _, a in _decisions(messages)]
        assert got == ([said] if said in decided else []), (said, got)


def test_a_cause_said_only_by_where_it_is_is_asked_with_what_the_message_says_after_its_code():
    """Agents say "Found it! The issue is in the `_fill_text` method of argparse's HelpFormatter. It's doing:", then
    code, then "This replaces all whitespace ...": the place alone says nothing of what is wrong; the
    sentence after the quoted code does (mini-swe-agent DeepSeek's habit)."""
    said = (
        "Found it! The issue is in the `_fill_text` method of argparse's HelpFormatter. It's doing:\n"
        "```python\ntext = self._whitespace_matcher.sub(' ', text).strip()\n```\n\n"
        "This replaces all whitespace (including newlines) with a single space, which collapses the multiline "
        "help text.\n\nLet me check if DjangoHelpFormatter overrides any of these methods:"
    )
    messages = [
        Message("user", "<pr_description>\nCustomizable management command formatters.\n</pr_description>"),
        _bash("g", "sed -n 1,40p /usr/lib/python3/argparse.py", "Let me read argparse."),
        _out("g", "    def _fill_text(self, text, width, indent):\n        text = self._ws.sub(' ', text)"),
        _bash("h", "grep -n _fill_text django/core/management/base.py", said),
        _out("h", ""),
        _edit("e", "/r/django/core/management/base.py", "class DjangoHelpFormatter:", "class DjangoHelpFormatter: x"),
        Message("tool", "The file /r/django/core/management/base.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)
    assert causes and causes[0][0] == 3, causes
    assert "replaces all whitespace (including newlines)" in causes[0][1], causes
    assert "`_fill_text`" in causes[0][1]


def test_a_cause_stated_as_the_lead_in_to_a_list_is_asked_with_its_list():
    """A lead-in "The problem is that the parent `IsNull` class's implementation for SQLite and Oracle will match
    both:" with the two cases listed under it: the lead-in states the cause, the list says what it
    matches; a lead-in to reasons ("..., but this doesn't make sense because:") argues for the fix instead."""
    said = (
        "Now let me look closer.\n\nThe problem is that the parent `IsNull` class's implementation for SQLite "
        "and Oracle will match both:\n- Objects that don't have the key (which is correct)\n- Objects that have "
        "the key with JSON null value (which is incorrect)\n\nLet me check what the parent `IsNull` class does:"
    )
    messages = [
        Message("user", "<pr_description>\n__isnull=True on a KeyTransform should not match null\n</pr_description>"),
        _bash("g", "sed -n 360,380p django/db/models/fields/json.py", "Let me read the lookup."),
        _out("g", "class KeyTransformIsNull(lookups.IsNull):\n    def as_sqlite(self, c, conn):\n        return 1"),
        _bash("h", "grep -n 'class IsNull' django/db/models/lookups.py", said),
        _out("h", "500:class IsNull(BuiltinLookup):"),
        _edit("e", "/r/django/db/models/fields/json.py", "return 1", "return 2"),
        Message("tool", "The file /r/django/db/models/fields/json.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)
    assert causes and causes[0][0] == 3, causes
    assert causes[0][1].endswith("Objects that have the key with JSON null value (which is incorrect)"), causes
    argued = said.replace("will match both:", "matches both, but this doesn't make sense because:")
    messages[3] = _bash("h", "grep -n 'class IsNull' django/db/models/lookups.py", argued)
    assert not any("Objects that" in answer for _, answer in _causes(messages)), _causes(messages)


def test_a_conclusion_a_thing_kept_a_way_given_up_and_the_fix_revised_are_decisions():
    """A conclusion drawn into a step naming the code ("So we should expand `~` in `_norm`:", a lead-in to the
    code carrying it out), what is kept as it is, a way given up, the fix revised naming the code, a test changed
    to expect the new value; not a conclusion naming nothing ("So we need to assign the result back."), a revision
    naming no way ("Let me update the fix to be more targeted:"), nor carrying on looking."""
    decided = [
        "So we should expand `~` in `_cache_normalize_path`:",
        'That\'s fine - we can keep writing uppercase "NO" in `_write_table`.',
        "Actually, this approach is getting complicated.",
        "Let me update the fix to check if `filterable` is a boolean class attribute:",
        "We need to update the test to expect `0.0` instead of `np.nan`.",
    ]
    not_decided = [
        "So we need to assign the result back.",
        "Let me update the fix to be more targeted:",
        "I'll keep looking at `_cache_normalize_path` for now.",
        "So we need to:",
    ]
    for said in decided + not_decided:
        messages = [
            Message("user", "<pr_description>\nmodutils fails on a path with ~\n</pr_description>"),
            Message("assistant", "The problem is that `_cache_normalize_path` never expands `~` in the path."),
            Message("user", "ok"),
            Message("assistant", said),
            Message("user", "ok"),
            _edit(
                "e",
                "/r/modutils.py",
                "def _cache_normalize_path(p):\n    path = os.path.realpath(p)",
                "def _cache_normalize_path(p):\n    path = os.path.realpath(os.path.expanduser(p))",
            ),
            Message("tool", "The file /r/modutils.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        got = [a for _, a in _decisions(messages)]
        assert got == ([said] if said in decided else []), (said, got)


def test_what_the_code_does_wrong_is_asked_before_a_cause_said_as_a_plan():
    """The cause said early ("The problem is that the `AddIndex` operation is created before the
    `AlterOrderWithRespectTo` operation ...") and, nearer the fix after a long search, said again as what
    to do ("The issue is that ..., we need to add those indexes after ..."): the plan is the fix, not
    what the code does wrong; the plans nearest the fix no longer push the statement out of the slots."""
    messages = [
        Message(
            "user", "<pr_description>\nAlterOrderWithRespectTo() crash when _order is in Index()\n</pr_description>"
        ),
        _bash("g", "sed -n 600,640p django/db/migrations/autodetector.py", "Let me read it."),
        _out(
            "g", "    def generate_created_models(self):\n        self.add_operation(app_label, operations.AddIndex())"
        ),
        Message(
            "assistant",
            "The problem is that the `AddIndex` operation is created before the `AlterOrderWithRespectTo` "
            "operation, which creates the `_order` field.",
        ),
        Message("user", "ok"),
        Message(
            "assistant",
            "The bug is that the timing is off, so we must postpone every `AddIndex` call.",
        ),
        Message("user", "ok"),
        Message(
            "assistant",
            "The issue is that when `order_with_respect_to` is set, we need to add each `AddIndex` after it.",
        ),
        Message("user", "ok"),
        _edit("e", "/r/django/db/migrations/autodetector.py", "operations.AddIndex()", "deferred.append(AddIndex())"),
        Message("tool", "The file /r/django/db/migrations/autodetector.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [3, 7], _causes(messages)


def test_what_a_challenges_code_does_is_asked_beside_the_weakness_stated():
    """A CTF run states the weakness ("The `gets` call offers a buffer-overflow ...") and then reads the
    next function it disassembles ("This function makes a system call that runs the command `cat
    flag.txt`."): where the exploit must jump, the second finding; a reading that is no workings of the
    code (a check of the agent's own script) still waits for a run that states nothing."""
    messages = [
        Message("user", "<task>\nWarmUp: So you want to be a pwn-er huh? Files: warmup, warmup.c\n</task>"),
        _bash("d", "decompile warmup --function_name main", "Let me disassemble the provided binary."),
        _out("d", 'void main(void) {\n  char buf[64];\n  write(1, "Warm Up", 7);\n  gets(buf);\n}'),
        _bash(
            "f",
            "decompile warmup --function_name FUN_0040060d",
            "The main function reads into a stack buffer using `gets`. The `gets` call offers a buffer-overflow "
            "vulnerability we can exploit.",
        ),
        _out("f", 'void FUN_0040060d(void) {\n  system("cat flag.txt");\n  return;\n}'),
        _edit(
            "e",
            "/r/exploit.py",
            "",
            "from pwn import *\np = remote('pwn.chal.csaw.io', 8000)",
            "This function makes a system call that runs the command `cat flag.txt`. Let me write the exploit.",
        ),
        Message("tool", "File created successfully at: /r/exploit.py", tool_call_id="e"),
        _bash("x", "python exploit.py", "Let me run the exploit."),
        _out("x", "flag{g3ts_is_d4ng3rous}"),
        Message("assistant", "The exploit printed the flag flag{g3ts_is_d4ng3rous}; I will submit it."),
    ]
    causes = _causes(messages)
    assert [at for at, _ in causes] == [3, 5], causes
    assert "runs the command `cat flag.txt`" in causes[1][1], causes
    edit = messages[5].tool_calls
    messages[5] = Message(
        "assistant", "The function `FUN_0040060d` is only defined here, with no reference to it.", tool_calls=edit
    )
    assert [at for at, _ in _causes(messages)] == [3], _causes(messages)


def test_a_way_led_in_to_a_list_is_asked_with_its_first_step():
    """ "I think the best approach is:" says the choice in the list under it: the lead-in with its first item is
    the decision, as the message spells them; not where the item goes back on it, nor a list of issues."""
    cases = {
        "Given all this, I think the best approach is:\n\n1. Add an optional `encoder` parameter to `json_script()`"
        "\n2. Keep the filter as it is": "Given all this, I think the best approach is: 1. Add an optional `encoder` "
        "parameter to `json_script()`",
        "So the fix should be:\nBut actually, we need to think about this more.\n": None,
        "The main issues to fix are:\n1. Check if `value` is `None` or not a `nodes.Const`\n": None,
    }
    for said, want in cases.items():
        messages = [
            Message("user", "<pr_description>\nAdd an encoder parameter to json_script\n</pr_description>"),
            Message("assistant", "The problem is that `json_script` hard-codes `DjangoJSONEncoder` in `html.py`."),
            Message("user", "ok"),
            Message("assistant", said),
            Message("user", "ok"),
            _edit(
                "e",
                "/r/html.py",
                "def json_script(value, element_id=None):",
                "def json_script(value, element_id=None, encoder=None):",
            ),
            Message("tool", "The file /r/html.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        got = [a for _, a in _decisions(messages)]
        assert got == ([want] if want else []), (said, got)


def test_the_tasks_words_reported_are_no_cause_the_agent_found():
    """ "Now I understand the issue. The PR description says we should "unwrap functools.partial objects"":
    what the agent was told, not what it found; "The issue is in the `__init__` method where it sets
    `self._func_path`." is the finding."""
    messages = [
        Message(
            "user", "<pr_description>\nResolverMatch.__repr__() doesn't handle functools.partial()\n</pr_description>"
        ),
        _bash("g", "sed -n 30,60p django/urls/resolvers.py", "Let me read it."),
        _out(
            "g", "class ResolverMatch:\n    def __init__(self, func, args):\n        self._func_path = func.__module__"
        ),
        Message(
            "assistant",
            'Now I understand the issue. The PR description says we should "unwrap functools.partial objects in '
            'ResolverMatch.__init__()".',
        ),
        Message("user", "ok"),
        Message("assistant", "The issue is in the `__init__` method where it sets `self._func_path`."),
        Message("user", "ok"),
        _edit("e", "/r/django/urls/resolvers.py", "self._func_path = func.__module__", "func = func.func"),
        Message("tool", "The file /r/django/urls/resolvers.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [5], _causes(messages)


def test_a_decision_not_to_use_a_thing_and_a_fix_widened_with_what_for_are_decisions():
    """Not doing something names more acts than change or touch ("they're iterable but we shouldn't iterate over
    them", "We should NOT use `or ''`."), and a fix widened says what for ("we should also fix `write_OBvalue` to
    handle MultiValue"); a check widened ("we should also check `x` to handle ...") and a prediction ("we shouldn't
    see the error") are no decisions."""
    decided = [
        "Also, we need to be careful with strings and bytes - they're iterable but we shouldn't iterate over them.",
        "We should NOT use `or ''` in `cleanse_setting`.",
        "Actually, we should also fix `write_OBvalue` and `write_OWvalue` to handle MultiValue by concatenating.",
    ]
    not_decided = [
        "We should also check `write_OBvalue` to handle MultiValue by concatenating.",
        "Now we shouldn't see the `TypeError` from `write_OBvalue` any more.",
    ]
    for said in decided + not_decided:
        messages = [
            Message("user", "<pr_description>\nwrite fails for OL elements\n</pr_description>"),
            Message("assistant", "The problem is that `value` splits every VR that is not listed in `dataelem.py`."),
            Message("user", "ok"),
            Message("assistant", said),
            Message("user", "ok"),
            _edit("e", "/r/dataelem.py", "if self.VR not in ['OB', 'OW']:", "if self.VR not in ['OB', 'OW', 'OL']:"),
            Message("tool", "The file /r/dataelem.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        got = [a for _, a in _decisions(messages)]
        assert got == ([said] if said in decided else []), (said, got)


def test_where_the_problem_is_occurring_is_no_cause():
    """SWE-agent's demonstrations open with "I will first search for the `missing_colon.py` file and open it
    since that is where the problem is occurring.": a place to look, not a cause found."""
    messages = [
        Message("user", "<issue>\nSyntaxError: invalid syntax\n</issue>"),
        Message(
            "assistant",
            "I will first search for the `missing_colon.py` file and open it since that is where the problem is "
            "occurring.",
        ),
        Message("user", "1:def division(a, b)\n2:    return a / b"),
        _edit("e", "/r/tests/missing_colon.py", "def division(a, b)", "def division(a, b):", "Adding the colon."),
        Message("tool", "The file /r/tests/missing_colon.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert 1 not in [at for at, _ in _causes(messages)], _causes(messages)


def test_what_the_code_does_wrong_said_plainly_is_a_stated_cause():
    """Agents often say what is wrong with no cause word: "`none()` returns the original queryset instead
    of an empty one", "`get_distinct()` is not called at all!", "Line 227 is missing the `handler`
    parameter", "they fail because partial objects have no `__name__`". Before the first fix each is
    the cause; what would be ("should return `1` instead of ...") is none."""
    for said in (
        "When combined, `queryset.none()` returns the original queryset instead of an empty queryset.",
        "So with a combinator, `get_distinct()` is not called at all! The distinct flag is silently dropped.",
        "Line 227 is missing the `bulk_data_uri_handler` parameter.",
        "Decorators access `func.__name__`, and they fail because `partial` objects don't have that attribute.",
    ):
        messages = [
            Message("user", "<pr_description>\nunion() then none() returns every row\n</pr_description>"),
            _bash("g", "sed -n 900,940p django/db/models/query.py", "Let me read the code."),
            _out("g", "    def none(self):\n        clone = self._chain()\n        return clone"),
            Message("assistant", said),
            Message("user", "ok"),
            _edit("e", "/r/django/db/models/query.py", "clone = self._chain()", "clone = self._chain()\nclone.x()"),
            Message("tool", "The file /r/django/db/models/query.py has been edited.", tool_call_id="e"),
            Message("assistant", "Done."),
        ]
        assert [at for at, _ in _causes(messages)] == [3], (said, _causes(messages))
    for not_said in (
        "When negated, the node should return `1` instead of an empty string.",
        "That call would fail because `partial` objects don't have `__name__`.",
    ):
        messages[3] = Message("assistant", not_said)
        assert 3 not in [at for at, _ in _causes(messages)], (not_said, _causes(messages))


def test_code_said_to_lack_something_after_the_first_fix_or_an_edit_commands_old_str_is_no_cause():
    """After its first edit, "The function is missing a `return found_spec` at the end" is what the agent's
    own edit left out; and "`PRINT_INLINE()` was not included in the previous `old_str`" says why its edit
    command failed: neither is the cause of the problem, stated before."""
    cause = "The issue is that `_has_init` returns `None` but `_spec_from_modpath` still sets `PY_SOURCE`."
    for slip in (
        "I see! The function is missing a `return found_spec` at the end for `PY_NAMESPACE` specs.",
        "The `idseqsingle` rule has `PRINT_INLINE()`, which was not included in the previous `old_str`.",
    ):
        messages = [
            Message("user", "<pr_description>\nastroid 2.9.1 breaks pylint, missing __init__.py\n</pr_description>"),
            _bash("g", "sed -n 620,640p astroid/modutils.py", cause),
            _out("g", "    if found_spec.type == spec.ModuleType.PKG_DIRECTORY:\n        location = _has_init(loc)"),
            _edit("e", "/r/astroid/modutils.py", "location = _has_init(loc)", "location = _has_init(loc) or loc"),
            Message("tool", "The file /r/astroid/modutils.py has been edited.", tool_call_id="e"),
            _bash("p", "python debug_issue.py", slip),
            _out("p", "AttributeError: 'NoneType' object has no attribute 'name'"),
            _edit("f", "/r/astroid/modutils.py", "or loc", "or loc\n    return found_spec"),
            Message("tool", "The file /r/astroid/modutils.py has been edited.", tool_call_id="f"),
            Message("assistant", "Done."),
        ]
        assert [at for at, _ in _causes(messages)] == [1], (slip, _causes(messages))


def test_an_error_said_to_be_due_to_something_is_a_stated_cause_but_a_likely_one_is_a_guess():
    """GPT-4 SWE-agent runs state a cause as "X is due to Y"; "X is likely due to Y", before the agent has
    read the code, is a guess."""
    messages = [
        Message("user", "<issue>\nSerializing a TimeDelta of 345 ms gives 344\n</issue>"),
        _bash("g", "sed -n 1470,1480p src/marshmallow/fields.py", "The `TimeDelta` result is likely due to rounding."),
        _out("g", "        return int(value.total_seconds() / base_unit.total_seconds())"),
        Message(
            "assistant",
            "The wrong value is due to `int()` truncating `value.total_seconds() / base_unit.total_seconds()`.",
        ),
        _edit("e", "/r/src/marshmallow/fields.py", "return int(", "return int(round("),
        Message("tool", "The file /r/src/marshmallow/fields.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [at for at, _ in _causes(messages)] == [3], _causes(messages)


def test_a_reading_is_asked_with_the_command_whose_output_the_agent_read():
    """A challenge run's readings all asked "What did the agent find to be the cause of the problem?"
    have several right answers; each is asked with the command that showed the code it read (a fenced
    SWE-agent action, or the tool call answered), as test results name their command."""
    messages = [
        Message("user", "We're solving this CTF challenge: Katy. Connect to the server and get the flag."),
        Message("assistant", "We will decompile the binary.\n```\ndecompile release --function_name _hash\n```"),
        Message("user", "ulong _hash(char *s) {\n  for (i = 0; s[i]; i++) local_10 += s[i] << i;\n  return local_10;"),
        Message(
            "assistant", "For each character `_hash` adds to `local_10` the character shifted left by its position."
        ),
        Message("user", "ok"),
        Message("assistant", "Flag found."),
    ]
    probes = [p for p in extract_probes(Transcript("t", messages)) if p.label == "root_cause"]
    assert [p.question for p in probes] == [
        "What did the agent conclude from what `decompile release --function_name _hash` showed?"
    ], probes
    tool_run = [
        messages[0],
        _bash("d", "decompile release --function_name _hash", "We will decompile the binary."),
        _out("d", messages[2].content),
        *messages[3:],
    ]
    questions = [p.question for p in extract_probes(Transcript("t", tool_run)) if p.label == "root_cause"]
    assert questions == ["What did the agent conclude from what `decompile release --function_name _hash` showed?"]


def test_a_cause_found_and_said_in_words_without_code_is_a_stated_cause():
    """A cause said as "I found the issue! In Python, a function definition needs to end with a colon ..."
    (a model in mini-swe-agent on SWE-agent's test repository) names no code, yet states the cause; an
    announcement with only a plan after it, or the task's own words again, is none."""
    task = Message("user", "Please solve this issue: SyntaxError: invalid syntax in missing_colon.py")
    fix = [
        _edit("e", "/r/tests/missing_colon.py", "def division(a, b)", "def division(a, b):"),
        Message("tool", "The file /r/tests/missing_colon.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    found = "In Python, a function definition needs to end with a colon before the function body."
    messages = [task, Message("assistant", f"I found the issue! {found}\n\nLet me fix the file:"), *fix]
    assert [a for _, a in _causes(messages)] == [f"I found the issue! {found}"], _causes(messages)
    plan = [task, Message("assistant", "I found the issue! Now I will open the file again and look at it."), *fix]
    restated = [task, Message("assistant", "I found the issue! There is a syntax error: invalid syntax in it."), *fix]
    assert _causes(plan) == [] and _causes(restated) == [], (_causes(plan), _causes(restated))


def test_a_sentence_that_this_explains_the_symptom_is_a_cause():
    """A sentence "This explains why <the symptom>" says the one before it is the cause (astropy-12907, DeepSeek):
    the two are asked together."""
    wrong = "The right side should also copy the values from `right`, not set them all to 1."
    said = f"{wrong} This explains why nested compound models have incorrect matrices."
    messages = [
        Message("user", "<pr_description>\nseparability_matrix is wrong for nested CompoundModels\n</pr_description>"),
        Message("assistant", f"{said}\n\nLet me fix it:"),
        _edit("e", "/r/separable.py", "cright[-right.shape[0]:, -right.shape[1]:] = 1", "cright[...] = right"),
        Message("tool", "The file /r/separable.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _causes(messages)] == [said], _causes(messages)


def test_a_problem_said_to_be_clear_names_its_cause_outright():
    """A sentence "The problem is clear: <cause>" (django-11283 on DeepSeek) names the cause outright, in words
    and a version number only."""
    cause = (
        "The problem is clear: when the migration moves permissions to the proxy content type, if they already "
        "exist there (which happens for models recreated after Django 2.2), we get a duplicate key violation."
    )
    messages = [
        Message("user", "<pr_description>\nMigration auth.0011_update_proxy_permissions fails\n</pr_description>"),
        Message("assistant", f"Perfect! I've reproduced it. {cause}\n\nNow I need to fix the migration."),
        _edit("e", "/r/0011_update_proxy_permissions.py", "update(content_type=new)", "exclude(...).update(...)"),
        Message("tool", "The file /r/0011_update_proxy_permissions.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    assert [a for _, a in _causes(messages)] == [cause], _causes(messages)


def test_a_value_checked_correct_is_no_decision_but_code_judged_right_is():
    """ "So `f` returning `True` is correct." keeps code as it is; "So `pos - 1` gives us 8, which is correct."
    checks a value the agent worked out (a blind spot check on non-gold runs labelled it wrong as a decision)."""
    said = [
        Message("assistant", "So `f` returning `True` for a missing key is correct."),
        Message("assistant", "So `working_line_pos - 1` gives us 8, which is correct."),
    ]
    got = StatementReader(said, "", None, None).statements("decision", DECISION, needs_code=False)
    assert [f.message_index for f in got] == [0], got


def _report(thought: str) -> list[str]:
    """The final-report answers of a mini-swe-agent run whose last call says ``thought``."""
    messages = [
        *MINI_SWE_AGENT_END[:-1],
        _bash("d", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt", thought),
    ]
    last = len(messages) - 1
    return [a for a, (at, _) in _outcomes(messages).items() if at == last]


def test_a_report_says_what_the_change_does_not_what_the_diff_shows_or_what_it_imports():
    """The sentences of a final report about the diff as shown ("It shows the change ...", "Good, we only
    modified `x.py`": which file changed is asked apart) are not the report, and an import the change added
    gives way to what the change does; "It changes X to Y" says more than a verdict naming the task's error."""
    assert _report(
        "Good! The patch looks correct. It changes the bulk update to a per-permission update that checks for "
        "duplicates before updating. This prevents the duplicate key error described in the PR.\n\n"
        "Now let me submit the patch:"
    ) == ["It changes the bulk update to a per-permission update that checks for duplicates before updating."]
    assert (
        _report(
            "The patch looks good. It shows the change from the old hardcoded logic to the new RFC 7231 compliant "
            "logic. Now let me submit the patch:"
        )
        == []
    )
    assert _report("Good, we only modified `src/cookie.py`.\n\nNow let me submit:") == []
    assert _report(
        "The patch contains:\n1. Import of `sync_to_async` from `asgiref.sync`\n"
        "2. An async `get_response_async` method that wraps `serve` with `sync_to_async`\n\nNow let me submit:"
    ) == ["An async `get_response_async` method that wraps `serve` with `sync_to_async`"]
    # a sentence about the diff that goes on to say the change after a colon is the report
    said = "The patch shows exactly the change we made: changing `= 1` to `= right` on line 245."
    assert _report(said + "\n\nNow let me submit:") == [said]


MARSHMALLOW_TASK = "<issue>\nTimeDelta serialization precision: 345 ms comes back as 344\n</issue>"
TRUNCATING = "return int(value.total_seconds() / base_unit.total_seconds())"
ROUNDING = "return int(round(value.total_seconds() / base_unit.total_seconds()))"


def _fix_said(thought: str) -> list[Message]:
    """A run whose agent says ``thought`` as it makes the fix (SWE-agent's default demonstration's shape)."""
    return [
        Message("user", MARSHMALLOW_TASK),
        _bash("o", "open src/marshmallow/fields.py 1474", "Let me look at the serialization."),
        _out("o", f"1474:        base_unit = dt.timedelta(**{{self.precision: 1}})\n1475:        {TRUNCATING}"),
        _edit("e", "/r/src/marshmallow/fields.py", TRUNCATING, ROUNDING, thought),
        Message("tool", "The file /r/src/marshmallow/fields.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]


def test_what_the_current_code_does_with_its_consequence_is_a_cause():
    """SWE-agent's default demonstration, which its GPT-4 runs copy, states the cause as what the current code
    does and what that leads to ("The current implementation uses integer division, which truncates ..."),
    naming no code; a sentence run into the next where a line break was lost ("line 1475.To fix") is two."""
    cause = "The current implementation uses integer division, which truncates the decimal part on line 1475."
    for glue in (" ", ""):
        said = f"We are now looking at the relevant section. {cause}{glue}To fix this issue, we should round it."
        causes = _causes(_fix_said(said))
        assert [at for at, _ in causes] == [3] and causes[0][1].startswith(cause), (glue, causes)
    for plain in (
        "The current implementation uses integer division on line 1475.",  # no consequence said
        "The current implementation is correct, which leads to 344 only on this input.",  # judged right
    ):
        assert _causes(_fix_said(plain)) == [], plain


def test_the_explanation_is_read_from_the_first_try_of_an_edit_the_editor_refused():
    """An edit the editor refused (a syntax check) is retried with words about the retry ("Oh no! My edit
    command did not use the proper indentation"): the explanation of the edit is in the first try's message."""
    refused = "Your proposed edit has introduced new syntax error(s). Please read this error message carefully."
    messages = [
        Message("user", MARSHMALLOW_TASK),
        _edit(
            "x",
            "/r/src/marshmallow/fields.py",
            TRUNCATING,
            ROUNDING.strip(),
            "`_serialize` only divides by `base_unit` and `int()` drops the fraction, so 344.99 becomes 344.",
        ),
        Message("tool", refused, tool_call_id="x"),
        _edit(
            "e",
            "/r/src/marshmallow/fields.py",
            TRUNCATING,
            ROUNDING,
            "Oh no! My edit command did not use the proper indentation, let's fix that this time.",
        ),
        Message("tool", "The file /r/src/marshmallow/fields.py has been edited.", tool_call_id="e"),
        Message("assistant", "Done."),
    ]
    causes = _causes(messages)
    assert [at for at, _ in causes] == [1] and "only divides by `base_unit`" in causes[0][1], causes


def test_a_way_chosen_by_following_existing_code_for_consistency_is_a_decision():
    """mini-swe-agent DeepSeek picks between two working ways by the precedent in the code base: "Since
    `CheckboxSelectMultiple` uses empty string `''`, let me follow that pattern for consistency." (a tune-half
    non-gold run). "let me" is no modal REASONED reads; following a pattern to look at something is no way chosen."""
    decided = ["Since `CheckboxSelectMultiple` uses empty string `''`, let me follow that pattern for consistency."]
    not_decided = ["Let me follow the pattern in `CheckboxSelectMultiple` to see how it renders labels."]
    for said in decided + not_decided:
        messages = [
            Message(
                "user",
                "<pr_description>\nLabel for ReadOnlyPasswordHashWidget points to non-labelable element\n"
                "</pr_description>",
            ),
            Message("assistant", said),
            Message("user", "ok"),
            _edit(
                "e",
                "/r/django/contrib/auth/forms.py",
                "    read_only = True\n",
                "    read_only = True\n\n    def id_for_label(self, id_):\n        return ''\n",
            ),
            Message("tool", "The file /r/django/contrib/auth/forms.py has been edited.", tool_call_id="e"),
            # submitted as a diff: the precedent names code the fix copies, not code it touches
            _bash("d", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff", "Now let me submit:"),
            _out(
                "d",
                "diff --git a/django/contrib/auth/forms.py b/django/contrib/auth/forms.py\n"
                "+    def id_for_label(self, id_):\n+        return ''",
            ),
        ]
        got = [a for _, a in _decisions(messages)]
        assert got == ([said] if said in decided else []), (said, got)


def test_other_code_found_to_need_no_change_after_the_last_fix_is_a_decision():
    """mini-swe-agent DeepSeek checks other code after its edit and says why it leaves it alone, as a finding
    rather than as "I'll ...": "Only the base class has this method, so our fix ... should cover all database
    backends", "So we don't need `__rand__` ...", "The test failure is unrelated to our changes" (tune-half non-gold
    runs). "our fix" there is what other code is measured against, not the fix judged ("Our fix is correct");
    a pointer naming nothing ("This is a separate issue.") is asked with the sentence before it, or not at all."""
    decided = [
        "Only the base class has this method, so our fix in `base/creation.py` should cover all database backends.",
        "So we don't need `__rand__` and `__ror__` in `Q`.",
        "There's one test failure, but it's unrelated to our change (it's about `get_extra_radiation`, not `reindl`).",
    ]
    not_decided = [
        "Our fix in `base/creation.py` is correct.",
        "Let me run the tests again.\n\nThis is a separate issue.",
    ]
    for said in decided + not_decided:
        messages = [
            Message("user", "<pr_description>\nserialized_rollback fails on foreign keys\n</pr_description>"),
            Message("assistant", "Let me look at `deserialize_db_from_string`."),
            Message("user", "ok"),
            _edit(
                "e",
                "/r/django/db/backends/base/creation.py",
                "        for obj in serializers.deserialize('json', data):\n",
                "        with transaction.atomic():\n            for obj in serializers.deserialize('json', data):\n",
            ),
            Message("tool", "The file /r/django/db/backends/base/creation.py has been edited.", tool_call_id="e"),
            Message("assistant", said),
            Message("user", "ok"),
            _bash("r", "python tests/runtests.py backends", "Let me run the backend tests."),
            _out("r", "Ran 12 tests in 0.2s\n\nOK"),
            Message("assistant", "Done."),
        ]
        got = [a for _, a in _decisions(messages)]
        assert got == ([said] if said in decided else []), (said, got)
    # "that" is what the sentence before named
    messages = [
        Message("user", "<pr_description>\nNDDataRef mask propagation fails when one operand has no mask\n"),
        _edit("e", "/r/ndarithmetic.py", "        else:\n", "        elif operand.mask is None:\n"),
        Message("tool", "The file /r/ndarithmetic.py has been edited.", tool_call_id="e"),
        Message(
            "assistant",
            "The `_arithmetic_meta` method just calls `handle_meta` with both metas. That could have the same issue "
            "if `handle_meta` is a callable that doesn't handle `None` values. But that's not part of the reported "
            "issue, so the mask fix stays as it is.",
        ),
        Message("user", "ok"),
        _bash("r", "python -m pytest astropy/nddata", "Let me run the tests."),
        _out("r", "12 passed"),
        Message("assistant", "Done."),
    ]
    got = [a for _, a in _decisions(messages)]
    assert any(a.startswith("That could have the same issue") for a in got), got
