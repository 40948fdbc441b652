"""What the agent said: the root cause it stated, decisions stated with a reason, choices the
user made (tau-bench style conversations), and what it reported at the end. Read from the agent's
own messages, sentence by sentence; kept apart from the reading of its actions (``work``) and of
its runs' outputs (``runs``) so that each can change alone."""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable, Iterator

from ctxbench.probes.actions import Action, call_arguments
from ctxbench.probes.facts import Fact, clip, named
from ctxbench.probes.runs import VALUE_WORDS, VERDICT
from ctxbench.transcripts.model import Message

# A weakness named by the attack it opens ("This setup is ideal for applying Hastad's Broadcast Attack",
# "vulnerable to a padding oracle"): a security agent's cause, named outright. ("can be exploited to
# overwrite the return address" is the way the exploit goes, not what is weak.)
OPENED = r"(?:vulnerable|susceptible) to|(?:ideal|perfect|suitable) for (?:applying |using |an? )?[^.!?]{0,40}?\battack"
# "the real issue is that ..." revises a finding; "That's because ..." explains a behaviour (every framework's models).
ROOT_CAUSE = re.compile(
    r"\b(?:the (?:(?:root|real|actual|underlying|core|fundamental) )?(?:cause|problem|issue|bug) "
    r"(?:is|was|lies|seems to be|appears to be|here is)(?! occurring| happening)|(?:this|that)(?:'s| is) because|"
    r"root cause|this (?:happens|occurs|fails) because|(?:is|are) (?:indeed |actually )?caused by|"
    r"the reason (?:is|was)|"
    r"the (?:problem|issue|bug) (?:is|was) (?:in|that|with)|"
    r"the (?:problem|issue|bug) (?:with|in) [^.!?]{1,60}? (?:is|was) (?:that|in|because)|"
    r"(?:is|are|was|were) (?:wrong|incorrect|broken) because|"
    r"i (?:can |now |finally )?(?:found|see|understand) the (?:issue|problem|bug)|"
    r"i(?:'ve| have) (?:found|identified|located|spotted|pinpointed) the (?:issue|problem|bug|cause|root cause)|"
    r"(?:issue|problem|bug) (?:occurs|happens|arises) because|that'?s (?:why|the (?:bug|problem|issue))|"
    r"this is (?:the|a) (?:bug|problem|issue|root cause)|here'?s the (?:bug|problem|issue)|which (?:causes|is why)|"
    r"(?:so|now) (?:the (?:issue|problem|bug)|i see)|that'?s it|found it|this (?:leads|led) to|which (?:leads|led) to|"
    r"(?:is|was) (?:never|not being|wrongly|incorrectly) \w+|evaluates to|falls? through|the culprit|"
    r"(?:error|exception|crash|failure|segfault) (?:occurs|happens|is raised|arises) (?:because|when)|"
    r"(?:is|was) the reason|(?:does ?n[o']t|never|fails to) (?:handle|account for|check for|consider)|"
    # "The syntax error ... is due to the missing colon" (SWE-agent's GPT-4 runs); "is likely due to" is a guess
    r"(?:is|are|was|were) (?:indeed |actually |simply )?due to|"
    # a weakness found (security agents' causes) and the classic bug classes named
    r"(?:weakness|vulnerabilit(?:y|ies)|flaw)\b[^.!?]{0,40}?\b(?:is|lies|comes|in)|"
    r"(?:offers|gives|allows|has|contains|introduces|causes|leads to|results in) (?:us )?(?:an? )?(?:classic )?"
    r"(?:buffer[- ]overflow|format[- ]string|(?:sql|command|code) injection|integer overflow|use[- ]after[- ]free|"
    r"race condition|off[- ]by[- ]one)|" + OPENED + r")\b",
    re.IGNORECASE,
)
# What harm code does: a consequence word.
CONSEQUENCE = (
    r"(?:truncat\w*|fail\w*|los(?:e|es|ing|t)|drop(?:s|ped|ping)?|break(?:s|ing)?|ignor\w*|skip\w*|discard\w*|"
    r"overwrit\w*|crash\w*|rais(?:e|es|ing)|caus(?:e|es|ing)|lead(?:s|ing)? to|result(?:s|ing)? in|wrong\w*|"
    r"incorrect\w*|does ?n[o']t work)"
)
# What the current code does, with what that leads to ("The current implementation uses integer division, which
# truncates the decimal part", "But the current code accepts lists and creates MultiValue, which then fails when
# writing"): SWE-agent's default demonstration states its cause so, and agents of other frameworks do too.
CURRENT_DOES = (
    r"^(?:(?:but|so|however|and),? )?(?:the|this) current (?:implementation|code|logic|version|behaviou?r)\b"
    r"(?! (?:is|seems|looks) (?:correct|fine|right))[^\n]{3,160}?(?:,|\s-)\s*(?:which|so|and|but)\b[^\n]{0,100}?"
    r"\b" + CONSEQUENCE + r"\b"
)
# What the code does wrong, said plainly ("`none()` returns the original queryset instead of an empty one",
# "`get_distinct()` is not called at all!", "Line 227 is missing the `bulk_data_uri_handler` parameter"):
# a cause before the first fix; after it, mostly what the agent's own edit left out.
PLAIN_CAUSE = re.compile(
    CURRENT_DOES + r"|"
    r"(?<!should )(?<!would )(?<!will )(?<!to )(?<!now )(?<!still )\breturns? [^.!?]{1,80}? instead of\b|"
    r"\b(?:is|are|was|were)(?:n't| not) (?:handling|checking|passing|calling|called|passed|handled|checked|"
    r"propagated|forwarded|included|preserved|applied|respected|considered|updated|reset)\b|"
    r"\b(?:is|are) missing (?:the|from|an?)\b|"
    r"(?<!would )(?<!will )(?<!could )\b(?:fail(?:s|ed)?|crash(?:es|ed)?|breaks?|errors? out|gets? an error) because\b",
    re.IGNORECASE,
)
CURRENT_DOES_RE = re.compile(CURRENT_DOES, re.IGNORECASE)
# Where the fix goes, stated as the agent's plan ("we need to modify the `make_pattern_type` function"):
# the code entity the fix changes, the other reading of a root cause.
FIX_PLACE = re.compile(
    r"\b(?:need|have|want|going) to (?:modify|change|update|fix|adjust|patch)\b|"
    r"\bby (?:changing|modifying|updating|patching)\b|\bthe fix (?:is|belongs|goes) in\b",
    re.IGNORECASE,
)
# A cause named outright ("This is the bug!", "the root cause"), not guessed ("the issue seems to be").
EXPLICIT_CAUSE = re.compile(
    r"\b(?:root cause|this is (?:the|a) (?:bug|problem|issue)|that'?s (?:the (?:bug|problem|issue|key\w*)|why)|"
    r"here'?s the (?:bug|problem|issue)|the (?:bug|problem|issue) (?:is|was) (?:in|that|with)|"
    r"the (?:problem|issue|bug) (?:with|in) [^.!?]{1,60}? (?:is|was) (?:that|in|because)|"
    r"(?:is|are|was|were) (?:wrong|incorrect|broken) because|"
    r"(?:found|see|understand|identified|located|pinpointed) the (?:bug|issue|problem)|"
    r"the reason (?:is|was)|(?:happens|occurs|fails) because|the (?:bug|problem|issue) is (?:now )?clear|"
    r"(?:is|are) (?:indeed |actually )?caused by|(?:is|are|was|were) (?:indeed |actually |simply )?due to|found it|"
    + OPENED
    + r")\b",
    re.IGNORECASE,
)
ROOT_CAUSE_OR_PLACE = re.compile(f"{ROOT_CAUSE.pattern}|{FIX_PLACE.pattern}|{PLAIN_CAUSE.pattern}", re.IGNORECASE)
# How the code behaves, said as agents explain right before they edit ("`_check` only looks at the
# first item", "never sets", "returns `None`", "is being modified by `f`").
BEHAVIOUR = re.compile(
    r"\b(?:only|never|always|instead|returns?|missing|does ?n[o']t|is ?n[o']t|are ?n[o']t|"
    r"without|ignor\w+|assum\w+|treat(?:s|ed|ing)?|(?:is|are) being \w+ed)\b",
    re.IGNORECASE,
)
# The agent's intent in words ("let me", "we should", "I'll").
INTENT_WORDS = re.compile(
    r"\blet'?s\b|\blet me\b|\b(?:i|we)(?:'ll|'d| will| would| should| need| can| must| want)\b", re.IGNORECASE
)
# A sentence that says what the agent is about to do or chose, not how the code behaves.
PLAN = re.compile(r"^(?:now|next|first|then|to fix|this (?:should|will))\b|" + INTENT_WORDS.pattern, re.IGNORECASE)
# A sentence that starts the agent's next step ("Let me look.", "Now I'll run it").
NEXT_STEP = re.compile(r"^(?:(?:now|so|ok(?:ay)?|first|next),? )?(?:let'?s|let me|(?:i|we)(?:'ll| will))\b", re.I)
ROOT_CAUSE_QUESTION = "What did the agent find to be the cause of the problem?"
# What the agent read off a run after the fix ("Now `x.pk.auto_created` is `False` instead of `True`"):
# a check's result in its words, where the output printed values and no verdict.
CHECKED = re.compile(
    r"^(?:now|still)\b.{0,100}?\b(?:returns?|gives?|shows?|prints?|is|are|raises?|evaluates to)\b", re.IGNORECASE
)
SHOWN_VALUE = re.compile(r"`[^`\n]{1,40}`|\b(?:True|False|None|nan|NaN|\d+(?:\.\d+)?)\b")
# An announcement of the cause in the sentence after it ("That's it! If the format ...", "Now I see the
# issue! `make_bytes` is being called with integers"): it names nothing itself. ("That's the bug!" and
# "This is a bug!" point back instead: ``_with_neighbour`` reaches back for a short sentence.)
DISCOVERY = re.compile(
    r"(?:(?:ah|oh|aha|ok(?:ay)?|yes|great|wait)\b[!,.]*\s*)*(?:(?:now|so|ok(?:ay)?),?\s+)?"
    r"(?:(?:i|we) (?:can |now |finally )?(?:see|found|get|understand)"
    r"(?: it| the (?:issue|problem|bug|cause|culprit|difference))?"
    r"(?: (?:clearly|completely|fully|better))?|"
    r"(?:i|we)(?:'ve| have) (?:found|identified|located|spotted|pinpointed) "
    r"(?:it|the (?:issue|problem|bug|cause|culprit))|"
    r"(?:that'?s|this is) (?:it|the key(?: \w+)?)|here'?s (?:the|a) (?:key(?: \w+)?|issue|problem|bug|culprit)|"
    r"found (?:it|the (?:issue|problem|bug|cause|culprit))|got it|aha)(?: now)?\s*[!.:]*$",
    re.IGNORECASE,
)
# A short sentence that points back at the cause just stated ("This is a bug!", "That's the problem.").
ANNOUNCEMENT = re.compile(
    r"(?:so,? )?(?:this|that)(?: i|')s (?:the|a|our) (?:real |actual )?"
    r"(?:bug|problem|issue|culprit|root cause)\s*[!.]*$",
    re.IGNORECASE,
)
# What the code does against what it should ("X includes 'PixelRepresentation' as required. However,
# 'PixelRepresentation' should not be required for ..."): the contrast is the cause, with the sentence
# before it; not the agent's own plan ("But we should not ...").
SHOULD_INSTEAD = re.compile(
    r"^(?:however|but)\b(?!,? wait\b)(?!.*\b(?:i|we|you) (?:should|must)\b).*\b(?:should(?:n'?t| not)?|must not|"
    r"(?:is|are) (?:supposed|expected|meant) to)\s+(?:be|have|return|raise|include|contain|accept|work|give|produce)\b",
    re.IGNORECASE,
)
# The agent's own scaffolding ("That's because I was creating it directly", "my monkey patch affects ..."):
# why its test or attempt behaved so, not the cause of the problem.
OWN_WORK = re.compile(
    r"\b(?:my|our) (?:own |current |first |new )?(?:test|script|check|patch|monkey ?patch|fix|change|"
    r"implementation|code|reproduction|algorithm|approach|attempt|solution|logic|debug\w*)s?\b|"
    r"\bdebug(?:ging)? (?:print|output|line)s?\b|"
    r"\bi(?:'m| am| was)\b|\baccidentally\b|\b(?:i|we) (?:added|inserted|put|placed|removed|deleted|replaced|used)\b|"
    r"\bold_str\b",  # the editor's argument: why the agent's own edit command failed
    re.IGNORECASE,
)
# What the agent's own edit broke, found after it ("The `try:` line should be indented"): a slip, not the
# problem's cause (before the first edit, indentation may be what the task is about).
SLIP = re.compile(
    r"\bshould (?:also )?be indented\b|"
    r"\b(?:do ?n[o']t|does ?n[o']t|lacks?|without) (?:have )?(?:proper|correct|the right) indentation\b|"
    r"\bindentation (?:issue|error|problem)\b|\bindented (?:wrong|incorrectly)\b",
    re.IGNORECASE,
)
# A line of code: an assignment, a block or a definition, or a call (a `name(` with a `)` after it), not a file
# listing or a table. Read a line at a time: a `\s*` run across lines was retried from every line's start, and
# 50,000 blank lines took 6 s.
CODE_MARK = re.compile(r"\w\s*=\s*\S|[{};]\s*$|^\s*(?:def|return|if|for|while)\b")
CALL_OPEN = re.compile(r"\w\(")


def code_lines(text: str, enough: int) -> int:
    """How many of ``text``'s lines are code, counted up to ``enough`` (linear in the text's length)."""
    count = 0
    for line in text.split("\n"):
        call = CALL_OPEN.search(line)
        if CODE_MARK.search(line) or (call is not None and ")" in line[call.end() :]):
            count += 1
            if count >= enough:
                break
    return count


# What code does, as an agent reads it off ("encrypts ... by multiplying", "seeds the generator", "calls").
WORKINGS = re.compile(
    r"\b(?:calculat|comput|encrypt|decrypt|encod|decod|multipl|add(?:s|ed|ing)?\b|subtract|xor|shift|hash|seed|"
    r"call(?:s|ed|ing)?\b|reads?\b|writes?\b|generat|produc|check|compar|convert|pass(?:es|ed)?\b|loop|iterat|"
    r"overflow|execut|runs?\b|prints?\b|leaks?\b)",
    re.IGNORECASE,
)
# Exploring, not reading code ("It looks like there is a main.py file", "Look at line 245", "Good, so ...").
LOOKING = re.compile(r"(?:it (?:looks|seems) like|look at|good|great|ok(?:ay)?|now)\b", re.IGNORECASE)
# A sentence in words: starts with a word or quoted code and runs five words or more.
PROSE = re.compile(r"[A-Za-z`][^\s]*(?:\s+\S+){4,}")
# A lead-in to a list ("... gives the following algorithm:", "...:1." where the list is run together).
LEAD_IN = re.compile(r":\s*(?:\d+\.)?\s*$")
# Sentences run together where line breaks were lost ("...hex dump.In order to ...", "...string.2. For").
GLUED = re.compile(r"(?<=[a-z)`'\"][.!?])(?=[A-Z])|(?<=[a-z)`'\"][.:])(?=\d+\.\s)")


# A command written in a fenced block (SWE-agent's text actions).
FENCED = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)


def _glued(sentence: str) -> list[str]:
    return [p.strip() for p in GLUED.split(sentence) if p.strip()]


# An explanation of the sentence before ("`str(node)` returns `'X'`. That's because ...", "... not set them
# all to 1. This explains why nested compound models ..."): asked with it.
BECAUSE = re.compile(r"(?:this|that)(?:'s| is) because\b|(?:this|that) explains why\b", re.IGNORECASE)
# A statement that the problem is gone, or a step after it: not a cause.
RESOLVED = re.compile(r"\b(?:is|was|has been|now) (?:resolved|fixed|solved|gone)\b|\bclean ?up\b|\bworks now\b", re.I)
# A finding that the code does what is wanted ("That's actually what we want", "which is correct"): a check
# that came out right, no cause of the problem.
AS_WANTED = re.compile(
    r"\b(?:(?:that|this|which)(?:'s| is) (?:actually |exactly )?(?:what we want|correct|expected|fine|the right \w+)|"
    r"as expected)\b",
    re.IGNORECASE,
)
# A guess or a question ("Maybe the issue is that ...?"), or the problem's status ("the issue is still
# there"): no statement of a cause.
# What the agent goes to test next ("Let me check if the issue is that ...", "let's see if there's a simpler
# fix"): a hypothesis, not a finding nor a choice (a check the code makes, "the fix is to check if", is neither).
TO_CHECK = (
    r"\b(?:let me|let'?s|i'll|we'll|(?:i|we) (?:will|should|need to|must)) (?:first |now |also )*"
    r"(?:check|see|verify|test|find out) (?:if|whether)\b"
)
NOT_A_CAUSE = re.compile(
    r"\b(?:maybe|perhaps|possibly|might|i wonder)\b|(?<!which )\b(?:could|may) be\b|"
    r"\bit(?:'s| is) (?:also )?possible\b|\?\s*$|" + TO_CHECK + r"|^to (?:further )?(?:test|check|look|probe) for\b|"
    r"\b(?:issue|problem|bug|error)s? (?:is |are )?(?:still|persists?)\b",
    re.IGNORECASE,
)
# A decision not to do something, the agent's own ("we shouldn't change existing behavior", "So we don't need
# to change the type hints", "no need to modify the tests"); not a claim about code ("This shouldn't change").
NOT_DOING = (
    r"\b(?:(?:we|i) (?:do ?n[o']t need to|should ?n[o']t|should not|wo ?n[o']t|will not|must not|need not|"
    r"do ?n[o']t want to)|no need to) (?:also )?(?:change|modify|touch|break|alter|fix|update|remove|add|"
    r"handle|edit|rewrite|use|call|override|raise|catch|split|iterate|include|convert|import|expose|rely)\b"
)
# The reason first, then what the agent will do ("Since I need to test my fix, I should include it in the patch").
WHY_FIRST = (
    r"^(?:(?:however|but|so|and|also|actually|now),?\s+)?(?:since|because|given that)\b[^.!?]{5,160},\s*"
    r"(?:i|we) (?:should|will|'ll|need to|must|have to)\b"
)
# Steps that are no choice of a way: looking, checking, finding, opening, running, taking care.
LOOK_VERB = (
    r"(?:also |first |still |just )?(?:be careful|be sure|make sure|check|verify|test|see|look|consider|think|"
    r"search|find|locate|open|run|explore|examine|inspect|read)\b"
)
# A way taken from the code's precedent ("let me follow that pattern for consistency"): "let me" is a plan
# only with that reason, else it leads in to a step. It names the code it copies, not code the fix touches.
PRECEDENT = (
    r"\blet me (?:follow|mirror|match|reuse) (?:that|this|the same|its|their) (?:pattern|convention|approach|style)\b"
    r"[^.!?]*\bfor consistency\b"
)
# What the agent will do, with why ("But we should also fix `get_choices` for consistency", "`json_key` should
# be computed before the try block since it's needed for the error message"): its own modal or a prescription
# for the code ("should be <done>"), not a prediction ("this should work since ..."), then a reason.
REASONED = (
    r"(?:\b(?:i|we) (?:should|must|need to|have to|will)|\b(?:i|we)'ll|\bshould (?:also )?be \w+ed)\b"
    r"(?! " + LOOK_VERB + ")"
    r"[^.!?]*\b(?:since|because|for (?:consistency|completeness|safety|simplicity|clarity|robustness)|so that|"
    r"to avoid)\b|"
    # the fix widened, with what for ("we should also fix `write_OBvalue` ... to handle MultiValue")
    r"\b(?:i|we) (?:should|will|need to|must) also (?!"
    + LOOK_VERB
    + r")\w+\b[^.!?]*\bto (?:handle|support|cover)\b|"
    + PRECEDENT
)
REASONED_ONLY = re.compile(REASONED, re.IGNORECASE)
# A conclusion drawn into what to do, naming the code ("So we should expand `~` in `_cache_normalize_path`:";
# "So we need to assign the result back" says no more than that a fix follows), what is kept as it is
# ("That's fine - we can keep writing uppercase "NO""), a way given up ("Actually, this approach is getting
# complicated."), the fix revised ("Let me update the fix to check if `filterable` is a boolean class attribute:").
CONCLUDED = r"^(?:so|therefore|thus|hence),? (?:i|we) (?:should|need to|must|will)\b(?! " + LOOK_VERB + r")[^.!?:]*`"
KEPT = (
    r"\b(?:i|we)(?:'ll| can| will| should) (?:just |simply )?keep\b"
    r"(?! (?:looking|trying|searching|exploring|going|reading))"
)
GIVEN_UP = (
    r"\b(?:this|that|the|my|our) (?:approach|fix|solution|way) (?:is|gets|seems) (?:getting |becoming )?"
    r"(?:too |very |overly |quite )?(?:complicated|complex|hacky|fragile|convoluted)\b"
)
REVISED = r"\b(?:update|change|revise|rewrite|simplify|refine|improve) (?:the|my|our) (?:fix|approach|solution) to\b"
# Where the agent draws the line of its change, across agents and tasks: out of scope, a separate issue, a
# known limitation ("This is a known limitation, not a bug in our fix", "But that's outside the scope of this PR").
SCOPED = (
    r"\b(?:outside|beyond) (?:the |our )?scope\b|\bnot part of (?:the |this )?(?:reported |original )?"
    r"(?:issue|pr|task|fix|problem)\b|\b(?:a|is|as) separate (?:issue|concern|problem)\b|\bknown limitation\b|"
    r"\bfocus on (?:what|fixing|the (?:reported|original|specific))\b|"
    r"\b(?:not related|unrelated) to (?:our|the|this|my) (?:fix|change|issue|pr|task)(?:e?s)?\b"
)
# Other code found to need no change, said as a finding, not as "I'll ...": the place fixed is the only one
# ("Only the base class has this method, so our fix ... should cover all database backends"), or the agent needs
# none of it ("So we don't need `__rand__` and `__ror__` in `Q`"). Not changed by design: not to be redone.
FOUND_ALONE = (
    r"\b(?:is|are) the only (?:one|place|class|method|function|caller|call|file|handler|occurrence|usage)s?\b|"
    r"\bonly the base class\b|\bthe only place\b|"
    r"\b(?:we|i|`[^`\n]+`) (?:do|does|will) ?n[o']t (?:really |actually )?need (?:the |an? )?`"
)
# A way weighed by what it costs or risks ("But changing that would be a bigger change.", "This is actually a
# breaking change!", "to keep backward compatibility", "the minimal change").
COSTLY = (
    r"\b(?:would|will) be (?:a )?(?:much )?(?:bigger|larger|breaking|riskier|more invasive) change\b|"
    r"\bis (?:actually |also )?a breaking change\b|\b(?:minimal|smallest) (?:change|fix|diff)\b|"
    r"\b(?:to (?:keep|preserve|maintain)|for) backwards?[- ]compat\w*"
)
# Code left as it is, judged right, with why or as a conclusion ("So `f` returning `True` is correct.",
# "that's fine because we should always expand `~` first", "that's consistent with how Django models work").
KEPT_AS_IS = (
    r"\b(?:that|this|which|it)(?:'s| is) (?:fine|acceptable|reasonable)\b(?=[^.!?]*\b(?:because|since)\b)|"
    # a consequence accepted ("it's reasonable to break existing tokens")
    r"\bit(?:'s| is) (?:reasonable|acceptable|fine|ok(?:ay)?) to (?!" + LOOK_VERB + r")\w+|"
    r"\b(?:is|are|that'?s) consistent with how\b|"
    # the code itself judged, not a value worked out from it ("`pos - 1` gives us 8, which is correct": no comma)
    r"^(?:so|therefore|thus),? [^.!?]*`[^.!?,]*\b(?:is|are) (?:correct|fine|acceptable|intended)\s*[.!]?$"
)
# A way concluded in so many words, naming the code it changes ("I think I should override `__init__` to
# validate the value after calling `super().__init__()`").
THOUGHT_OUT = r"\bi think (?:i|we) (?:should|need to)\b(?! (?:first |also |now )?" + LOOK_VERB + r")[^.!?]*`"
# A guard added to be safe ("But to be safe, we should handle the case.").
GUARDED = r"\b(?:to be (?:safe|defensive)|just in case)\b"
WAYS_JUDGED = "|".join((COSTLY, KEPT_AS_IS, GUARDED, THOUGHT_OUT))
JUDGEMENTS = "|".join((SCOPED, WAYS_JUDGED, FOUND_ALONE))
# A cost or a limit said alone: what is done instead is the plan said next, often leading in to its code.
WEIGHED_ONLY = re.compile(f"{SCOPED}|{COSTLY}", re.IGNORECASE)
# A decision leading in to the code or list that carries it out: the way named, a conclusion or the fix revised
# naming the code ("Let me update the fix to be more targeted:" names no way).
WAY_LEAD_IN = re.compile(
    r"\b(?:fix|approach|solution|way) (?:is|would be|will be) to \w+ \S+ \w+|"
    + CONCLUDED
    + "|"
    + REVISED
    + r"[^.!?:]*`",
    re.IGNORECASE,
)
# A sentence that opens by stating the issue ("The issue is that ..., but it should be changed to `x` because
# ..."): the cause explained, a decision only if it names a way chosen, not by a reason alone.
ISSUE_STATED = re.compile(r"^(?:so,? )?the (?:real |actual |root )?(?:issue|problem|bug|cause) (?:is|was)\b", re.I)
# A decision is the agent's: a modal, a plan or a choice word ("I should ... instead of"), not a result
# ("returns `0.0` instead of `nan`").
# The nouns "fix", "solution", "approach" after a determiner ("with the fix, `f` returns ...") say when
# a result was seen, not what was chosen; "the fix is to ..." still states the choice.
INTENT = re.compile(
    r"\b(?:let'?s|let me|should|will|'ll|shall|better|best|prefer\w*|decid\w*|choos\w*|chose|go(?:ing)? with|"
    r"stick|plan|safer|simplest|cleanest|(?:fix|solution|approach) (?:is|should be|would be|will be) to|"
    r"(?<!\bthe )(?<!\bthis )(?<!\bthat )(?<!\bmy )(?<!\bour )(?<!\bits )(?:approach|fix|solution))\b|"
    + NOT_DOING
    + "|"
    + WHY_FIRST
    + r"|\b(?:i|we) (?:need|have) to (?:update|change|adjust|fix) (?:the|this|that|these|those) tests?\b|"
    + "|".join((CONCLUDED, KEPT, GIVEN_UP, REVISED, JUDGEMENTS)),
    re.IGNORECASE,
)
# A question the agent asks itself, a guess ("Should I ...?", "Maybe we should revert ..."), a
# deliberation ("let me think about whether ..."), or the task's words reported ("The PR says the fix is
# to ...", "the user also mentions ..."): nothing the agent decided.
UNDECIDED = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|i wonder|think(?:ing)? about|whether)\b|\?\s*$|"
    r"\b(?:pr|issue|task|ticket|user|description|report|docs?|documentation)(?: description)?,? (?:also )?"
    r"(?:says|said|mentions|mentioned|suggests|suggested|states|asks|wants)\b|^it says\b|"
    r"\baccording to the (?:pr|issue|task|ticket|description)\b|" + TO_CHECK,
    re.IGNORECASE,
)
# A way weighed against another ("Or it should return `None`", "... for consistency with `Uninferable`. Or maybe
# we should return `"<Unknown>"` ..."): still open, not decided.
OPEN_ALTERNATIVE = re.compile(r"^or\b", re.IGNORECASE)
# A decision against a way or to leave code as it is: it names code the fix does not touch by design.
LEFT_ALONE = re.compile(
    "|".join((NOT_DOING, KEPT, SCOPED, KEPT_AS_IS, COSTLY, GIVEN_UP, FOUND_ALONE))
    + r"|\b(?:stick with|abandon\w*|revert\w*|undo|too (?:complex|complicated|risky|hacky))\b|"
    + PRECEDENT,
    re.IGNORECASE,
)
# How many of its own decisions an agent working alone is asked: a third is often the way the fix goes,
# said before the choices and decisions not to act that rank first; a conversation's rulings and a
# person's choices are asked beside them.
AGENT_DECISIONS = 3
# Tactical steps are no decisions: installing, retrying a tool, fixing a typo, navigating.
TACTICAL = re.compile(r"\b(?:install|pip|apt|typo|retry|view command|navigate|scroll|open the file|look at)\b", re.I)
WAY_CHOSEN = re.compile(
    r"\b(?:the (?:best|correct|right|simplest|cleanest|proper|minimal|safest|better) (?:fix|approach|solution|way)|"
    r"the (?:fix|solution) (?:is|should be|would be|will be) to|instead of|rather than|i(?:'ll| will) go with|"
    r"i(?:'ve| have)? decided|(?:is|gets?|getting) too (?:complex|complicated|risky|broad)|stick with|"
    r"(?:should|will|'ll) (?:not|avoid|keep)\b[^.]*\bbecause|(?:abandon|revert|undo)\w*|"
    # the better way named ("a better approach is", "option 1 is the cleanest", "This is more targeted and safer")
    r"(?:the|a) (?:better|cleaner|safer|simpler|more robust) (?:fix|approach|solution|way|option) (?:is|would be)|"
    r"(?:this|that|it) (?:is|would be|seems) (?:much |also )?"
    r"(?:safer|cleaner|simpler|more (?:targeted|robust|general))|"
    # what it will do instead, as its own plan ("So we should catch inference errors and raise X instead.")
    r"(?:should|must|need to)\b[^.!?]*\binstead(?=\s*[.!:]*$))\b|"
    + NOT_DOING
    + "|"
    + "|".join((WHY_FIRST, REASONED, CONCLUDED, KEPT, GIVEN_UP, REVISED, WAYS_JUDGED)),
    re.IGNORECASE,
)
# A decision: a way chosen, or the line drawn around the change (code out of its scope or found to need none).
OTHER_CODE = f"{SCOPED}|{FOUND_ALONE}"
DECISION = re.compile(f"{WAY_CHOSEN.pattern}|{OTHER_CODE}", re.IGNORECASE)
# The agent judging its own fix after making it ("Our fix for `X` is the right fix", "my change should work").
JUDGED = re.compile(
    r"\b(?:our|my|the|this) (?:fix|change|patch|implementation|solution|approach)(?:es|s)?\b(?! is to\b)", re.I
)
# A choice between two ways: the decisions an engineer must not re-litigate.
CHOICE = re.compile(
    r"\b(?:instead of|rather than|too (?:complex|complicated|risky)|stick with|abandon\w*|revert\w*)\b", re.I
)
# A sentence ends at . ! ? before a space and a capital (or a quote, a backtick), or at a line end:
# "the `Foo.bar()` method" stays one sentence.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])|\n+")
CODE_ENTITY = re.compile(r"`[^`\n]{2,60}`|\b\w+\(\)|\b[a-z]+_[a-z_]+\b|\b[A-Z][a-z]+[A-Z]\w+\b|\b\w+\.\w+\b")
# Tools an agent thinks aloud with (OpenHands `think`, MCP `sequentialthinking`): the thought is a
# call argument, in every later context like the message's text.
THINK_TOOL = re.compile(r"think", re.IGNORECASE)


def _decided_beyond_reason(sentence: str) -> bool:
    """The sentence is a decision by more than a reason given (a way named, a choice, a decision not to act)."""
    return any(DECISION.search(part) for part in REASONED_ONLY.split(sentence))


# A sentence that ends in a number run into the next where a line break was lost ("... on line 1475.To fix this
# issue, we should ..."; SWE-agent's default demonstration): not a name's dot (`test1.Outer`), not a version.
GLUED_AFTER_NUMBER = re.compile(r"(?<![\w.])(\d+[.!?])(?=[A-Z][a-z]*\s)")


def sentences_of(text: str) -> Iterator[str]:
    """The prose sentences of a message (code blocks apart), list markers and THOUGHT: stripped."""
    prose = GLUED_AFTER_NUMBER.sub("\\1\n", re.sub(r"```.*?```", "\n", text, flags=re.DOTALL))
    for part in SENTENCE_BREAK.split(prose):
        sentence = part.strip().lstrip("#*->0123456789.) ").removeprefix("THOUGHT:").strip()
        if sentence:
            yield sentence


# Words any statement of a cause uses: what is left says what the cause is.
PLAIN_WORDS = {
    "issue", "problem", "cause", "current", "currently", "implementation", "code", "function", "method",
    "does", "doesn", "isn", "aren", "actually", "clearly", "because", "when", "that", "this", "with",
}  # fmt: skip


# How many words of its own (not the task's) a cause naming only the task's code explains itself in.
OWN_WORDS = 8
# A "sentence" longer than this is a dump without a full stop (an answer is clipped to 300 characters anyway).
STATEMENT_MAX = 1000


class StatementReader:
    """Reads one transcript's statements once; each method yields facts of one type, best first.
    ``first_fix`` and ``last_fix``: the first and last edit of a source file the fix keeps;
    ``fix_text``: the code the final fix touches (its changed lines, hunk headers and paths);
    ``edited``: the text of the edits of the files the fix kept (old and new, whole); ``fix_edits``: the
    messages of those edits; ``rejected``: the messages of edits of those files the editor refused."""

    def __init__(
        self,
        messages: list[Message],
        task: str,
        first_fix: int | None,
        last_fix: int | None,
        fix_text: str = "",
        patched: bool = False,
        edited: str = "",
        fix_edits: tuple[int, ...] = (),
        rejected: tuple[int, ...] = (),
    ) -> None:
        self.messages = messages
        self.patched = patched
        self.task = task
        self.first_fix = first_fix
        self.last_fix = last_fix
        self.fix_names = _code_names(fix_text)
        self.fix_edits = fix_edits
        self.rejected = set(rejected)
        # code the fix's edits had or wrote, whole (``edited``: the kept files' edits): where the fix went
        self.fix_place = self.fix_names | _code_names(edited) | self._shown_with(fix_text)

    def _shown_with(self, fix_text: str) -> set[str]:
        """The names of every output that showed a line of the fix (a view of the function it changed, whose
        name a diff's hunk header need not spell: git names a method's class, not the method)."""
        lines = [x.strip() for x in fix_text.splitlines() if len(x.strip()) >= 20][:40]
        shown = (m.content for m in self.messages if m.role in ("tool", "user") and m is not self.messages[0])
        return {n for text in shown if any(x in text for x in lines) for n in _code_names(text)}

    def names_fix(self, fact: Fact) -> bool:
        """The statement names code the final fix touches (a function, attribute or file its changed
        lines or hunk headers spell): about what the fix changes, not a guess or a side note."""
        return any(_code_names(e) & self.fix_names for e in CODE_ENTITY.findall(fact.answer))

    def statements(self, label: str, pattern: re.Pattern[str], needs_code: bool = True) -> Iterator[Fact]:
        """What the agent said in its own messages, matching ``pattern``: the sentence and the one
        after it (a cause is often stated in two: "The problem is in X. When ..., Y happens."),
        verbatim; naming code the task did not already name (``needs_code``)."""
        task_names = _task_names(self.task)
        for i, m in enumerate(self.messages):
            if m.role != "assistant":
                continue
            for text in _prose(m):
                yield from self._statements_in(text, i, label, pattern, needs_code, task_names)

    def _statements_in(
        self,
        text: str,
        i: int,
        label: str,
        pattern: re.Pattern[str],
        needs_code: bool,
        task_names: tuple[set[str], set[str]],
    ) -> Iterator[Fact]:
        said = list(sentences_of(text))
        for k, sentence in enumerate(said):
            contrast = (
                label == "root_cause" and k > 0 and bool(SHOULD_INSTEAD.match(sentence) or BECAUSE.match(sentence))
            )
            if DISCOVERY.match(sentence) and k + 1 < len(said):
                sentence = _with_next(text, sentence, said[k + 1])  # "That's it! <the cause>"
            elif contrast:  # "X does A. However, A should not ..." or "That's because ...", within one paragraph
                joined = _with_next(text, said[k - 1], sentence)
                contrast = joined != said[k - 1]
                sentence = joined if contrast else sentence
            if len(sentence) > STATEMENT_MAX:
                continue  # no statement: the patterns below scan to its end from each modal ("I'll ... because")
            if label == "decision" and WAY_THEN_LIST.search(sentence):
                way = _with_first_item(text, sentence)  # "I think the best approach is:\n1. Add an optional ..."
                if way is not None and not UNDECIDED.search(sentence):
                    yield Fact(label, way, i, "What did the agent decide, and why?")
                continue
            # a decision is read past the dots of the code it names ("I'll use `os.path.normpath` because ...")
            read = _code_masked(sentence) if label == "decision" else sentence
            if len(sentence) < 12 or not (contrast or pattern.search(read)) or RESOLVED.search(sentence):
                continue
            if label == "decision" and (
                TACTICAL.search(read)
                or not INTENT.search(read)
                or UNDECIDED.search(read)
                or any(OPEN_ALTERNATIVE.match(x) for x in said[k : k + 2])
                or (ISSUE_STATED.match(read) and not _decided_beyond_reason(read))
            ):
                continue
            if label == "root_cause" and NOT_A_CAUSE.search(sentence):
                continue
            lead_in = sentence
            if label == "root_cause" and LOCATED.search(sentence):
                # "The issue is in the `_fill_text` method. It's doing: <code> This replaces all whitespace ..."
                sentence = _with_explanation(text, sentence)
            elif label == "root_cause" and sentence == said[k] and _claims(sentence):
                sentence = _with_list(text, sentence)  # "The problem is that X will match both:\n- ...\n- ..."
            if sentence.rstrip().endswith(":") and not (label == "decision" and WAY_LEAD_IN.search(sentence)):
                continue  # a lead-in ("The issue is that config.py:"): its list says it, not this
            joined = _with_neighbour(text, sentence)
            if (
                label == "decision"
                and POINTER.match(sentence)
                and not CODE_ENTITY.search(sentence)
                and re.search(OTHER_CODE, _code_masked(sentence), re.IGNORECASE)
            ):
                # "But that's not part of the reported issue.": what "that" is, the sentence before says
                before = _with_before(text, sentence)
                reached_back = joined != sentence and joined.endswith(sentence)
                joined = before if before != sentence and not reached_back else joined
                if not CODE_ENTITY.search(joined):
                    continue  # "This is a separate issue.": of what, it does not say
            if label == "decision" and WEIGHED_ONLY.search(sentence):
                if joined == sentence:
                    joined = _with_plan_after(text, sentence)  # "... a bigger change. For now, let me fix `x`:"
                elif joined.endswith(sentence) and UNDECIDED.search(joined):
                    continue  # "This should probably fail, but it doesn't. That's a separate issue.": a guess set aside
            sentence = joined
            # a list's items may say which half is right ("(which is correct)"): its lead-in says what is wrong
            listed = lead_in.endswith(":") and sentence != lead_in
            wanted = AS_WANTED.search(lead_in if listed else sentence)
            if label == "root_cause" and (wanted or OWN_WORK.search(sentence) or _reported(sentence)):
                continue
            entities = [e.strip("`").lower() for e in CODE_ENTITY.findall(sentence)]
            # names nothing the task did not already say (names compare whole); a short quoted value the task
            # does not spell (`e = 5`) is said of a cause, though it has no name. A name the task spells only
            # inside a dotted one (`json_script` of `django.utils.html.json_script()`) is the task's too, unless
            # the cause explains itself in words of its own
            whole, parts = task_names
            if needs_code and all(set(_names(e)) <= parts for e in entities):
                in_whole = all(set(_names(e)) <= whole for e in entities)
                if label != "root_cause":
                    if in_whole:
                        continue
                elif not (self._new_short_code(sentence) or self._said_outright(sentence)) and (
                    in_whole or not self._own_words(sentence)
                ):
                    continue
            question = {
                "root_cause": ROOT_CAUSE_QUESTION,
                "decision": "What did the agent decide, and why?",
            }[label]
            yield Fact(label, clip(sentence, 300), i, question)

    def _said_outright(self, cause: str) -> bool:
        """A cause announced as found or named outright, then said in words of its own ("I found the issue!
        In Python, a function definition needs to end with a colon"), or what the current code does with its
        consequence ("The current implementation uses integer division, which truncates the decimal part"): a
        finding though it names no code (SWE-agent's and DeepSeek's models say causes so); not a plan, a short
        one, or the task again (most of its words the task's: "The current implementation doesn't strip leading
        and trailing dashes")."""
        if not (_announced(cause) or EXPLICIT_CAUSE.search(cause) or CURRENT_DOES_RE.match(cause)):
            return False
        said = [s for s in sentences_of(cause) if not DISCOVERY.match(s)]
        if (
            not said
            or PLAN.search(said[0])
            or any(e.startswith("`") or _names(e) for e in CODE_ENTITY.findall(said[0]))
        ):
            return False  # a plan, or code quoted or named (the task's: the caller found nothing new in it)
        words = [w for w in re.findall(r"[a-z]{4,}", said[0].lower()) if w not in PLAIN_WORDS]
        task_words = set(re.findall(r"[a-z]{4,}", self.task.lower()))
        return len(words) >= 5 and sum(w not in task_words for w in words) * 2 > len(words)

    def _own_words(self, cause: str) -> bool:
        """A cause explained in words the task does not hold, OWN_WORDS of them or more ("when a child class
        overrides a field with choices, the `get_FOO_display` method from the parent class still references the
        parent's field object"), not the request said back ("The current `json_script` function doesn't accept
        an `encoder` parameter.")."""
        said = " ".join(s for s in sentences_of(cause) if not DISCOVERY.match(s))
        task_words = set(re.findall(r"[a-z]{4,}", self.task.lower()))
        words = re.findall(r"[a-z]{4,}", said.lower())
        return sum(w not in PLAIN_WORDS and w not in task_words for w in words) >= OWN_WORDS

    def _new_short_code(self, sentence: str) -> bool:
        """A backquoted bit of code with no name of three letters (`e = 5`, `x[0]`) the task does not hold."""
        task = self.task.lower()
        return any(
            not _names(q) and re.search(r"\d|[=<>\[\]()+*/%$^]", q) and q.lower() not in task
            for q in re.findall(r"`([^`\n]{1,20})`", sentence)
        )

    def root_causes(self) -> Iterator[Fact]:
        """Statements of the cause, and of where the fix goes, before the last fix (after it the
        agent explains its checks): those made by the first fix first, a cause named outright
        ("This is the bug!") before one guessed or a plan, one naming the code the fix changes
        before one naming none of it, what the code does wrong before what to do about it ("we need
        to ..."), then the closest to the fix."""
        last = self.last_fix if self.last_fix is not None else len(self.messages)
        fix = self.first_fix
        stated = [
            f
            for f in self.statements("root_cause", ROOT_CAUSE_OR_PLACE)
            if f.message_index <= last and not (fix is not None and f.message_index > fix and _after_fix_slip(f.answer))
        ]
        said = _distinct(stated)
        # where the fix goes, said twice before the first fix ("modify the `pattern` rule", then "change the
        # `idseqsingle` rule"): the later plan is the one the edit carries out
        plans = [f for f in said if not _causal(f.answer) and (fix is None or f.message_index <= fix)]
        said = [f for f in said if f not in plans[:-1]]

        def rank(f: Fact) -> tuple[bool, bool, bool, bool, bool, int]:
            if fix is None:  # no source edit: in the order stated
                said = not _announced(f.answer), not _explicit(f.answer)
                return False, *said, False, _planned(f.answer), f.message_index
            # then one naming the code the fix changes before one naming none of it (a guess, a side note)
            return (
                f.message_index > fix,
                not _announced(f.answer),
                not _explicit(f.answer),
                not self.names_fix(f),
                _planned(f.answer),
                abs(fix - f.message_index),
            )

        ordered = sorted(said, key=rank)
        # a fix redone: a cause announced between the first and the last fix ("Ah! Now I see the issue!"
        # after the first attempt failed) is a new finding, asked second, before restatements of the first
        found_later = [f for f in stated if fix is not None and fix < f.message_index < last and _announces(f.answer)]
        if ordered and found_later and found_later[-1] is not ordered[0]:
            ordered = [ordered[0], found_later[-1], *(f for f in ordered[1:] if f is not found_later[-1])]
        seen: set[int] = set()
        for fact in ordered:
            if fact.message_index not in seen:  # one per message: its other sentences restate it
                seen.add(fact.message_index)
                yield fact
        if not seen:  # no statement of a cause: the explanation before the first edit of the fixed file
            explained = list(self.explained())
            yield from explained or self.readings()
        else:  # what the agent read the code it was shown to do (a challenge's workings), after what it stated
            yield from (f for f in self.readings() if f.message_index not in seen and WORKINGS.search(f.answer))

    def readings(self) -> Iterator[Fact]:
        """What the agent read off code it was just shown, up to its first fix (a CTF challenge's
        exploit, an analysis): in a message right after an observation, the first sentence naming
        code that observation holds, mostly in words the task does not use; not a lead-in to a list,
        a plan, a guess or a question. Where no cause is stated, this is what the run found."""
        if self.patched:  # a submitted patch: the fix is what the run found, explained before it
            return
        end = self.first_fix if self.first_fix is not None else len(self.messages) - 1
        task_words = set(re.findall(r"[a-z]{4,}", self.task.lower()))
        first_user = next((i for i, m in enumerate(self.messages) if m.role == "user"), 0)
        for i in range(first_user + 2, min(end, len(self.messages) - 1) + 1):
            m, shown = self.messages[i], self.messages[i - 1]
            if m.role != "assistant" or shown.role not in ("tool", "user") or code_lines(shown.content, 2) < 2:
                continue  # code was shown, not a listing or a table
            shown_names = _code_names(shown.content)
            for sentence in (part for text in _prose(m) for s in sentences_of(text) for part in _glued(s)):
                if self._reads(sentence, shown_names, task_words):
                    shown_by = self._command_of(i - 1)
                    asked = f"What did the agent conclude from what `{named(shown_by)}` showed?" if shown_by else ""
                    yield Fact("root_cause", clip(sentence, 300), i, asked or ROOT_CAUSE_QUESTION)
                    break

    @staticmethod
    def _reads(sentence: str, shown_names: set[str], task_words: set[str]) -> bool:
        if len(sentence) < 30 or LEAD_IN.search(sentence) or PLAN.search(sentence) or LOOKING.match(sentence):
            return False
        if not PROSE.match(sentence) or "|" in sentence:
            return False  # a table row or a fragment of markup, no reading in words
        if not (BEHAVIOUR.search(sentence) or WORKINGS.search(sentence)):
            return False
        if NOT_A_CAUSE.search(sentence) or RESOLVED.search(sentence):
            return False
        if not any(_code_names(e) & shown_names for e in CODE_ENTITY.findall(sentence)):
            return False
        words = re.findall(r"[a-z]{4,}", sentence.lower())
        return sum(w not in task_words for w in words) * 2 > len(words)  # mostly not the task's words

    def explained(self) -> Iterator[Fact]:
        """How the agent said the code behaves in the message of its first edit of a file the fix
        keeps (or, if that message says nothing, in its message before): the first sentence there
        that states a behaviour of named code ("`_hash` only adds each character's code"), not a
        plan ("Let me edit `x`"), a guess or a question. An edit retried after the editor refused it
        ("Oh no! My edit command did not use the proper indentation") is read from the first try."""
        at = self.first_fix
        if at is None:
            return
        while True:  # back over the retries: the refused edit before each is the same edit, explained there
            before = next((i for i in range(at - 1, -1, -1) if self.messages[i].role == "assistant"), None)
            if before is None or before not in self.rejected:
                break
            at = before
        task_names = _task_names(self.task)[0]
        for i in (at, *range(at - 1, max(at - 3, -1), -1)):
            m = self.messages[i]
            if m.role != "assistant":
                continue
            texts = [t for t in _prose(m) if t.strip()]
            for text in texts:
                for sentence in sentences_of(text):
                    if self._explains(sentence, task_names):
                        yield Fact("root_cause", clip(sentence, 300), i, ROOT_CAUSE_QUESTION)
                        return
            if texts:
                return  # the agent's last words before the edit: an earlier message explains something else

    @staticmethod
    def _explains(sentence: str, task_names: set[str]) -> bool:
        if len(sentence) < 20 or sentence.endswith(":") or PLAN.search(sentence) or not BEHAVIOUR.search(sentence):
            return False
        if NOT_A_CAUSE.search(sentence) or RESOLVED.search(sentence):
            return False
        entities = [e.strip("`").lower() for e in CODE_ENTITY.findall(sentence)]
        return bool(entities) and not all(set(_names(e)) <= task_names for e in entities)  # code the task did not name

    def checks_read(self) -> Iterator[Fact]:
        """What the agent said its runs after the fix showed: in its message right after a run's
        output, the first sentence saying what code now does, with a value ("Now `f` returns
        `0.0` instead of `nan`"); not a plan, a guess or a question. Last first: the final state."""
        if self.first_fix is None:
            return
        found: list[Fact] = []
        for i in range(self.first_fix + 1, len(self.messages)):
            m = self.messages[i]
            if m.role != "assistant" or self.messages[i - 1].role != "tool":
                continue
            for sentence in (s for text in _prose(m) for s in sentences_of(text)):
                if (
                    20 <= len(sentence) <= 240
                    and CHECKED.search(sentence)
                    and CODE_ENTITY.search(sentence)
                    and SHOWN_VALUE.search(sentence)
                    and not INTENT_WORDS.search(sentence)
                    and not NOT_A_CAUSE.search(sentence)
                ):
                    run = self._run_before(i)
                    question = (
                        f"What did the agent say `{named(run)}` showed after the change?"
                        if run
                        else "What did the agent say its check after the change showed?"
                    )
                    found.append(Fact("test_result", sentence, i, question))
                    break
        yield from reversed(found)

    def _command_of(self, observation: int) -> str | None:
        """The command whose output message ``observation`` is: the call answered (a shell command, or
        a tool call's arguments), else the command an agent wrote in a fenced block (SWE-agent)."""
        command = self._run_before(observation + 1)
        if command:
            return command
        before = self.messages[observation - 1] if observation > 0 else None
        if before is None or before.role != "assistant":
            return None
        for call in before.tool_calls:
            return f"{call.name} {' '.join(str(v) for v in call_arguments(call.arguments).values())}".strip()
        blocks = FENCED.findall(before.content)
        return (blocks[-1].strip() or None) if blocks else None

    def _run_before(self, i: int) -> str | None:
        """The shell command whose output message ``i`` answers (the call of the message before it)."""
        result = self.messages[i - 1]
        for m in reversed(self.messages[max(i - 3, 0) : i - 1]):
            for call in m.tool_calls:
                if result.tool_call_id in (None, call.id):
                    command = call_arguments(call.arguments).get("command")
                    if isinstance(command, str) and command.strip():
                        return command
        return None

    def decisions(self) -> Iterator[Fact]:
        """Choices between two ways first (later ones first: they override), then the rest."""
        last = self.last_fix if self.last_fix is not None else len(self.messages)
        # a decision restated when carried out may come many messages later: compared over the whole run;
        # after the last fix, what is decided about the tests or the patch, not the fix judged ("Our fix is right")
        stated = (
            f
            for f in self.statements("decision", DECISION, needs_code=False)
            if f.message_index <= last or not JUDGED.search(f.answer) or self._left_by_design(f)
        )
        # ranked where the choice was first made: a revision takes the place of what it revised
        said = [(f, at) for f, at in _revised(stated, self.fix_edits) if not self._abandoned(f, last)]
        # code found to need no change ranks after the ways chosen: it fills the slots they leave
        said.sort(key=lambda x: (not CHOICE.search(x[0].answer), self._found_alone(x[0]), -x[1]))
        facts = [f for f, _ in said]
        for fact in facts[:AGENT_DECISIONS]:
            yield self._asked_about(fact)

    @staticmethod
    def _left_by_design(fact: Fact) -> bool:
        """Code other than the fix, judged to need no change or out of the change's scope, naming it: "our fix"
        is what it is measured against ("not related to our fix", "so our fix ... should cover all")."""
        read = _code_masked(fact.answer)
        return bool(re.search(OTHER_CODE, read, re.IGNORECASE) and CODE_ENTITY.search(fact.answer))

    @staticmethod
    def _found_alone(fact: Fact) -> bool:
        """Other code found to need no change or out of scope, with no way chosen."""
        read = _code_masked(fact.answer)
        return bool(re.search(OTHER_CODE, read, re.IGNORECASE)) and not WAY_CHOSEN.search(read)

    def _abandoned(self, fact: Fact, last: int) -> bool:
        """A way of fixing the code planned before the last fix that the submitted fix did not take: the
        plan names code ("we should fix it in `ForwardManyToOneDescriptor.__set__`") and none of it is
        code the fix touches, its edits wrote or an output showing a line of it held. Not a decision
        against a way (given up, too complex, reverted), to leave something as it is, to keep it or of
        the change's scope: those name code the fix leaves alone by design."""
        if not self.patched or fact.message_index > last:  # the fix known whole only from a submitted diff
            return False
        read = _code_masked(fact.answer)
        if LEFT_ALONE.search(read):
            return False
        said = next(sentences_of(fact.answer), "")  # the decision, not the reason said after it
        named = [_code_names(q) for q in re.findall(r"`([^`\n]+)`", said)]
        named = [n for n in named if n]
        return bool(named) and not any(n & self.fix_place for n in named)

    def _asked_about(self, fact: Fact) -> Fact:
        """The decision asked about the code it names (the code the fix touches first), so that of a
        run's several decisions the question has one answer: "What did the agent decide about `x`?"."""
        # every quoted span in order ("`Q` objects ... `WhereNode`": `Q` too, so no span runs between two)
        quoted = [q for q in re.findall(r"`([^`\n]+)`", fact.answer) if len(q) <= 60 and _names(q)]
        if not quoted:
            return fact
        about = next((q for q in quoted if _code_names(q) & self.fix_names), quoted[0])
        return Fact(fact.label, fact.answer, fact.message_index, f"What did the agent decide about `{about}`, and why?")


def _with_a_person(messages: list[Message]) -> bool:
    """Whether a person answers the agent (a user turn after an agent's reply that is no tool's
    result): a conversation, where the agent rules for someone."""
    return any(
        m.role == "assistant" and not m.tool_calls and n.role == "user" and not n.tool_call_id
        and "<returncode>" not in n.content
        for m, n in zip(messages, messages[1:])
    )  # fmt: skip


# A shell command that submits the run (mini-swe-agent's `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`,
# older `MINI_SWE_AGENT_FINAL_OUTPUT`): a marker word the framework watches for.
SUBMIT_MARK = re.compile(r"\b[A-Z][A-Z_]*(?:SUBMIT|FINAL_OUTPUT)[A-Z_]*\b")
PRINTED_FILE = re.compile(r"\bcat\s+([^\s;&|<>]+)")
# Words to the user that report nothing: thanks, offers of more help.
PLEASANTRY = re.compile(
    r"\b(?:feel free|let me know|if you (?:have|need)|any (?:other|further|more) questions|happy to help|"
    r"you'?re welcome|thank(?:s| you)|have a (?:great|nice|good)|safe travels)\b",
    re.IGNORECASE,
)
# How many of its last replies the agent's report is looked for in: conversations end with rounds of
# thanks and offers of more help after the report (five on the gold set's longest).
REPLIES_BACK = 6
# tau-bench's simulated customer ends the conversation with this mark.
STOP_MARK = re.compile(r"#{3}STOP#{3}")
# A person's words that close a chat and say nothing of its end ("That's all I needed", "I appreciate it").
CLOSING = re.compile(r"\b(?:appreciate|that'?s all|all set|nothing else)\b", re.IGNORECASE)
# What the person says they will do ("I'll look for it", "I'll hold off", "I won't be able to proceed").
OWN_INTENT = re.compile(r"\b(?:i[’']ll|i will|i won[’']?t|i[’']m going to|let me)\b", re.IGNORECASE)
# A report of removing a scratch file ("The `reproduce.py` script has been removed"): housekeeping, not the outcome.
HOUSEKEEPING = re.compile(
    r"\b(?:removed|deleted|clean(?:ed)? up)\b.*\b(?:scripts?|test files?|temporary|scratch|reproduc\w*)\b|"
    r"\b(?:scripts?|test files?|temporary|scratch|reproduc\w*)\b.*\b(?:removed|deleted|cleaned up)\b",
    re.IGNORECASE,
)
# What a command printed, or that it printed nothing ("rm doesn't have any output when it deletes successfully"):
# about the tool, not how the run ended.
NO_OUTPUT = re.compile(
    r"\b(?:does ?n[o']?t|did ?n[o']?t|does not|did not) (?:have|produce|print|give|return) any output\b|"
    r"\b(?:produced|printed|prints|gave|gives|has|had) no output\b",
    re.IGNORECASE,
)
# The agent saying it submits ("Let's submit the changes using the `submit` command."): the act, not what it
# reports ("With the bug fixed and the cleanup complete, we can now submit" says the state it submits in).
SUBMITTING = re.compile(r"^(?:(?:now|so|okay|ok),? )?(?:let'?s|let me|i(?:'ll| will)) (?:now )?submit\b", re.I)
# A detail of a list ("Reservation ID:** HATHAT"): it holds a value, the sentence leading the list says what happened.
KEY_VALUE = re.compile(r"^[\w ]{2,30}\**:\**\s")
# What the end leaves undone: what a continuing engineer needs first.
CAVEAT = re.compile(
    r"\b(?:could ?n[o']t|cannot|can'?t|unable|not (?:been )?(?:verified|tested|built|compiled|run|able|possible)|"
    r"still (?:fail\w*|broken|missing|open)|however|untested|partial(?:ly)?|remain(?:s|ing)? (?:to|open|unfixed)|"
    r"unfortunately|not (?:eligible|allowed|permitted)|non-?refundable)\b",
    re.IGNORECASE,
)


def final_report(messages: list[Message], actions: list[Action]) -> Iterator[Fact]:
    """How the run ended, best first: what it submitted, read from before the last call (the
    command that wrote the file the submission prints); what the agent reported at the end (its
    finish/submit message, the prose of its last call, its last words to the user), a caveat
    first; else, for a run that stopped without submitting, what it was doing. The last call's
    reply is in the end checkpoint's context, so these are asked; stated within the last two rounds,
    the metrics class them trivial (kept by every strategy) and the headline never counts them."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
    if last is None or any(m.role == "user" for m in messages[last + 1 : last + 2]) and last < len(messages) - 2:
        return  # the user went on after the agent's last words: the run did not end there
    at_end = [a for a in actions if a.message_index == last]
    answer = next((a for a in at_end if a.op == "answer"), None)
    submit = next((a for a in at_end if a.op == "shell" and SUBMIT_MARK.search(a.command)), None)
    if submit is not None:
        yield from _submitted(submit, actions)
    message = messages[last]
    if answer is None and submit is None and message.tool_calls:
        said = _call_prose(message)
        report = clip(said[1], 400) if said else None  # a summary written for whoever takes over: all of it
        shell = next((a for a in at_end if a.op == "shell"), None)
        question = "What was the agent doing when the run ended (it had not submitted)?"
        stated = [x for x in sentences_of(message.content) if len(x) >= 20 and not x.endswith(":")]
        intent = stated[-1] if stated else None  # the sentence right before the call says what it does
        if said and report:  # a last call that says how it ends (tau-bench's transfer to a human, with a summary)
            yield Fact("outcome", report, last, f"What did the agent's last call, `{said[0]}`, say?")
        elif shell is not None:  # the run stopped mid-work: its last step is where it stood
            yield Fact("outcome", shell.value, last, question)
        elif intent is not None:  # stopped at another tool's call: what it said it was doing
            yield Fact("outcome", clip(intent, 240), last, question)
        return
    if answer is not None and answer.value.strip():
        value = answer.value.strip()
        if len(value.split()) < 3 and re.search(r"[\d{}_]", value):  # a flag, a number: the answer itself
            yield Fact("outcome", value, last, "What did the agent submit at the end?")
            return
        said_at = [(last, value)]
    else:  # its last words; back over (a few) replies that only thank or offer more help, to its last action
        said_at = []
        acted = {a.message_index for a in actions}  # tool calls, and commands written in the text
        for i in range(last, -1, -1):
            m = messages[i]
            if m.role == "assistant":
                said_at.append((i, m.content))
                if m.tool_calls or i in acted or len(said_at) == REPLIES_BACK:
                    break
    new = _new_words(messages, last)
    for at, text in said_at:
        report = _report_sentence(text, new)
        if report:
            yield Fact("outcome", report, at, "What did the agent report when it finished?")
            reply = _customer_reply(messages, at) if _with_a_person(messages) else None
            if reply:
                yield Fact("outcome", reply, at + 1, "What did the customer say in reply to the agent's final report?")
            return


def _customer_reply(messages: list[Message], at: int) -> str | None:
    """The person's answer to the agent's final report, when it says more than thanks: what they
    will do next or what they still lack ("I'll look for the reservation ID and call back"), the
    end a continuing agent picks up from; not a question (the agent would have answered it)."""
    if at + 1 >= len(messages) or messages[at + 1].role != "user" or messages[at + 1].tool_call_id:
        return None
    text = STOP_MARK.sub(" ", messages[at + 1].content)
    said = [
        s
        for s in sentences_of(text)
        if len(s) >= 20 and not PLEASANTRY.search(s) and not CLOSING.search(s) and not s.endswith("?")
    ]
    return clip(" ".join(said), 240) if any(OWN_INTENT.search(s) for s in said) else None


def _call_prose(message: Message) -> tuple[str, str] | None:
    """A tool call's prose argument (a summary, a message to a person): its name and the text."""
    for call in message.tool_calls:
        for value in call_arguments(call.arguments).values():
            if isinstance(value, str) and len(value.split()) >= 5 and "\n" not in value.strip():
                return call.name, value
    return None


def _submitted(submit: Action, actions: list[Action]) -> Iterator[Fact]:
    """A submission that prints a file: the last command before it that wrote that file."""
    for printed in PRINTED_FILE.findall(submit.command):
        writes = [
            a
            for a in actions
            if a.op == "edit" and a.message_index < submit.message_index and _base(a.path) == _base(printed)
        ]
        command = next(
            (a.value for a in actions if writes and a.op == "shell" and a.message_index == writes[-1].message_index),
            None,
        )
        if command and len(command) <= 200:
            question = f"What did the agent submit at the end (`{named(submit.command)}`)?"
            yield Fact("outcome", command, writes[-1].message_index, question)
            return


# A sentence about the diff as shown, not about the change ("It shows the change from the old logic to the new",
# "Good, we only modified `x.py`", "The patch file contains only the change to `x.py`"): which file changed is
# asked apart; one that goes on after a colon to say the change ("the change we made: changing `= 1` to `= right`")
# is not.
ABOUT_THE_DIFF = re.compile(
    r"^(?:good[,!.]?\s+)?(?:the|this|our) (?:patch|diff)(?: file)? (?:only )?(?:shows|contains|includes|looks)\b[^:]*$|"
    r"^it (?:only )?(?:shows|contains) the (?:exact )?changes?\b[^:]*$|"
    r"^[^:]*\bonly (?:modified|changed|touched|modifies|changes|touches) `?[\w/.-]+`?\.?$",
    re.IGNORECASE,
)
# A sentence that says what the change does to the code ("It changes the bulk update to a per-permission update").
SAYS_CHANGE = re.compile(
    r"^(?:it|this|the (?:fix|patch|change))\s+(?:now\s+|also\s+|only\s+)?(?:changes|adds|removes|moves|wraps|replaces|"
    r"converts|calls|unwraps|initiali[sz]es|checks)\b",
    re.IGNORECASE,
)
# An import the change added: the least of what a change does.
IMPORT_NOTE = re.compile(r"\bimport(?:s|ed)?\b", re.IGNORECASE)


def _report_sentence(text: str, new: set[str]) -> str | None:
    """The sentence of a final report that says most: a caveat (what is still not done) first, then
    one holding a value the last tool result first showed (the reservation the booking created),
    then one naming code, a value or a verdict; never a lead-in ("Now let me submit:"), a
    pleasantry, or a list item that is only code. ``new``: words the last tool result showed first (``_new_words``)."""
    best, best_rank = None, (False,) * 6
    detail = None  # the list item holding a value the last result showed first
    for sentence in sentences_of(text):
        shows_new = bool(new & set(re.findall(r"\w{4,}", sentence)))
        if KEY_VALUE.match(sentence):
            detail = detail or (sentence if shows_new else None)
            shows_new = False
        if len(sentence) < 20 or sentence.endswith((":", "?")) or PLEASANTRY.search(sentence) or sentence[0] in "`(":
            continue  # too short, a lead-in, a question, a pleasantry, a list item that is only code
        caveat = bool(CAVEAT.search(sentence))
        if (
            ABOUT_THE_DIFF.search(sentence) or NO_OUTPUT.search(sentence) or SUBMITTING.search(sentence)
        ) and not caveat:
            continue  # the diff as shown, not what it changes; what a command printed; the submission itself
        says_change = bool(SAYS_CHANGE.search(sentence))
        specific = bool(CODE_ENTITY.search(sentence) or re.search(r"\d", sentence))
        valued = bool(specific or says_change or VALUE_WORDS.search(sentence) or VERDICT.search(sentence))
        # what the change does over an import it added
        imports = bool(IMPORT_NOTE.search(sentence))
        rank = (caveat, not HOUSEKEEPING.search(sentence), shows_new, valued, not imports, says_change)
        if (caveat or shows_new or valued) and rank > best_rank:
            best, best_rank = sentence, rank
    if best and detail and not best_rank[2] and detail not in best:
        best = _through(text, best, detail) or best
    return clip(best, 240) if best else None


def _through(text: str, lead: str, detail: str) -> str | None:
    """The report verbatim from the sentence leading a list to the list item that holds the value, when
    the item follows it within 240 characters: a gold the transcript states as it is (the judge looks
    for it as written), not the two put together."""
    start = text.find(lead)
    end = text.find(detail, start + len(lead)) if start >= 0 else -1
    if end < 0 or end + len(detail) - start > 240:
        return None
    return text[start : end + len(detail)]


def _new_words(messages: list[Message], at: int) -> set[str]:
    """Words the last tool result before ``at`` showed first (an ID the action created)."""
    result = next((i for i in range(at - 1, -1, -1) if messages[i].role == "tool"), None)
    if result is None:
        return set()
    new = {w for w in re.findall(r"\w{4,}", messages[result].content) if not w.isdigit()}
    for m in messages[:result]:  # one result's words against the run's: no set of every word kept
        new.difference_update(re.findall(r"\w{4,}", m.content))
        if not new:
            break
    return new


def _explicit(cause: str) -> bool:
    """A cause named outright, or announced ("Now I see! <the cause>")."""
    return bool(EXPLICIT_CAUSE.search(cause) or DISCOVERY.match(next(sentences_of(cause), "")))


# What the agent will do, said in a cause's sentence ("The issue is that ..., we need to add those indexes
# after `X`", "The fix is to implement ..."): a plan, asked after a statement of what the code does wrong.
PLANNED = re.compile(
    r"\b(?:(?:we|i) (?:need|have|want) to|(?:we|i)(?:'ll| will| should| must| can)|let'?s|let me|"
    r"the (?:fix|solution|approach) (?:is|should be|would be|will be) to|"
    r"one (?:approach|option|way) (?:is|would be))\b",
    re.IGNORECASE,
)


def _planned(cause: str) -> bool:
    """The cause's first sentence after any announcement holds a plan ("we need to ...", "The fix is to")."""
    said = [s for s in sentences_of(cause) if not DISCOVERY.match(s)]
    own = re.sub(r"`[^`]*`|\"[^\"]*\"|“[^”]*”", "", said[0]) if said else ""  # not what it quotes
    return bool(PLANNED.search(own))


def _causal(sentence: str) -> bool:
    """A statement of a cause (named or said plainly), not only of where the fix goes."""
    return bool(ROOT_CAUSE.search(sentence) or PLAIN_CAUSE.search(sentence))


def _after_fix_slip(answer: str) -> bool:
    """Said after the first fix: a slip in the agent's own edit, or code said plainly to lack something
    with no cause word (what its own edit left out, "The function is missing a `return`")."""
    cause_word = ROOT_CAUSE.search(answer) or FIX_PLACE.search(answer)
    return bool(SLIP.search(answer) or (PLAIN_CAUSE.search(answer) and not cause_word))


def _announced(cause: str) -> bool:
    """A cause the agent announced as found ("Ah! That's the key difference! ...", "Now I see the
    issue! ..."): the moment of diagnosis, where "the issue is in X" is said of plans and guesses too."""
    return bool(DISCOVERY.match(next(sentences_of(cause), "")))


def _announces(cause: str) -> bool:
    """Any sentence of the cause announces it ("Now I see the issue!", "This is a bug!")."""
    return any(DISCOVERY.match(s) or ANNOUNCEMENT.match(s) for s in sentences_of(cause))


def _base(path: str | None) -> str:
    return (path or "").rstrip("/").rsplit("/", 1)[-1]


def _with_next(text: str, sentence: str, following: str) -> str:
    """A sentence with the one after it, as the text spells them (not across a paragraph)."""
    at = text.find(sentence)
    end = text.find(following, at + len(sentence)) if at >= 0 else -1
    if end < 0 or "\n\n" in text[at:end]:
        return sentence
    return " ".join(text[at : end + len(following)].split())


# Words every piece of code spells (keywords, builtins): naming one names no part of the fix.
COMMON_CODE = {w.lower() for w in (*keyword.kwlist, *dir(builtins), "self", "cls", "this", "null", "nil")}


def _code_names(text: str) -> set[str]:
    """The names a piece of code spells, dotted names by their parts (``obj.extra_tags``: ``obj``,
    ``extra_tags``), a file by its name and stem (``iam.py``, ``iam``); lowercase, three characters
    or more, keywords and builtins left out."""
    names = {n.lower() for n in re.findall(r"[A-Za-z_]\w*", text)}
    names |= {f.lower() for f in re.findall(r"(?<![\w-])[\w-]+\.[A-Za-z]{1,4}\b", text)}
    return {n for n in names if len(n) >= 3 and n not in COMMON_CODE}


def _names(text: str) -> list[str]:
    """The identifiers of a text (``obj.extra_tags``, ``PersonName3``), three characters or more."""
    return [n for n in re.findall(r"[A-Za-z_][\w.]*\w", text) if len(n) >= 3]


def _task_names(task: str) -> tuple[set[str], set[str]]:
    """The names the task spells whole, and those with each part of a dotted one (a task asking to change
    ``django.utils.html.json_script()`` names ``json_script`` too)."""
    names = set(_names(task.lower()))
    return names, names | {part for n in names for part in n.split(".") if len(part) >= 3}


def _prose(message: Message) -> list[str]:
    """An assistant message's own words: its text, and the thoughts of its think-tool calls.
    Never its reasoning kept apart (``metadata["reasoning"]``, DeepSeek-reasoner's reasoning_content):
    the provider resends it within a tool loop, but it is mostly thinking aloud (read by these
    rules, 5 or 6 of 21 probes from it were informative on 10 reasoner runs: docs/retention.md), and the
    judges read the context's text and calls the same way."""
    out = [message.content] if message.content else []
    for call in message.tool_calls:
        if THINK_TOOL.search(call.name):
            out += [v for v in call_arguments(call.arguments).values() if isinstance(v, str) and v.strip()]
    return out


def _distinct(facts: Iterable[Fact], window: int | None = 6) -> list[Fact]:
    """Facts that say something new: one restating a kept one (most of its words, within ``window``
    messages, or anywhere before with None) is left out. Facts arrive in message order, so only the
    last few kept are compared."""
    kept: list[tuple[Fact, set[str]]] = []
    for fact in facts:
        words = set(re.findall(r"\w{3,}", fact.answer.lower()))
        if _restates(fact, words, kept, window):
            continue
        kept.append((fact, words))
    return [f for f, _ in kept]


def _revised(facts: Iterable[Fact], edits: tuple[int, ...]) -> list[tuple[Fact, int]]:
    """Decisions that say something new (as ``_distinct`` over the whole run), where one said again after
    an edit of the fix in between takes the earlier one's place: the agent tried the way and revised it ("only
    check `filterable` if it is a class attribute", an edit, then "check if `filterable` is a boolean class
    attribute"), so its later word holds. Said again with no edit between, the first statement stays: it
    carries the reasoning, the restatement at the edit only what the change shows. Each with the message
    where the choice was first stated."""
    kept: list[tuple[Fact, set[str], int]] = []
    for fact in facts:
        words = set(re.findall(r"\w{3,}", fact.answer.lower()))
        at = next((k for k, (_, seen, _) in enumerate(kept) if len(words & seen) >= 0.5 * max(1, len(words))), None)
        if at is None:
            kept.append((fact, words, fact.message_index))
        elif any(kept[at][0].message_index < e < fact.message_index for e in edits):
            kept[at] = (fact, words, kept[at][2])
    return [(f, first) for f, _, first in kept]


def _restates(fact: Fact, words: set[str], kept: list[tuple[Fact, set[str]]], window: int | None) -> bool:
    for earlier, seen in reversed(kept):
        if window is not None and fact.message_index - earlier.message_index > window:
            return False
        if len(words & seen) >= 0.5 * max(1, len(words)):
            return True
    return False


# Where the cause is, with nothing of what it is ("The issue is in the `_fill_text` method of argparse's
# HelpFormatter."): what follows says it, often after a lead-in and the code it quotes.
LOCATED = re.compile(
    r"\bthe (?:root cause|(?:real |actual )?(?:bug|problem|issue)) (?:is|lies|was) (?:in|at|on) "
    r"(?:`[^`\n]{1,60}`|[^,;:.!?`\n]){1,100}[.!:]?$",
    re.IGNORECASE,
)
# A lead-in naming the way the fix goes, its steps listed under it ("Given all this analysis, I think the best
# approach is:", "So the fix should be to:", "So our fix is:", "I think the simplest and most robust approach is:").
WAY_THEN_LIST = re.compile(
    r"\b(?:the|my|our|this|a)(?: \w+){0,4} (?:fix|approach|solution|way|plan) "
    r"(?:is|would be|should be|will be)(?: to)?:$",
    re.IGNORECASE,
)
# The first line under a lead-in, a list item or not (not a code block).
FIRST_ITEM = re.compile(r"(?:[ \t]*\n)+[ \t]*(?:(?:[-*\u2022]|\d+[.)])[ \t]+)?(?:\*\*)?([^\n`\s][^\n]{10,})")
# An item that goes back on the lead-in.
BACK_ON_IT = re.compile(r"(?:but|however|actually|wait|hmm)\b", re.IGNORECASE)
# A list under a lead-in, as agents write one: items marked "-", "*" or "1." on lines of their own.
LISTED = re.compile(r"(?:[ \t]*\n)+((?:[ \t]*(?:[-*\u2022]|\d+[.)])[ \t]+[^\n]+(?:\n|$))+)")
# A short lead-in, the code it quotes in one block, then the first sentence of the next paragraph.
CODE_THEN_PROSE = re.compile(r"(?:\s*[^\n`]{0,60}:)?\s*```[^`]{0,240}```\s*\n\s*([^\n]+)")


def _with_explanation(content: str, sentence: str) -> str:
    """A cause said only by where it is, with what the message says of it after the code it quotes
    (the whole span as the message spells it, if it fits a probe); else the sentence alone."""
    at = content.find(sentence)
    if at < 0:
        return sentence
    end = at + len(sentence)
    shown = CODE_THEN_PROSE.match(content, end)
    if shown is None:
        return sentence
    first = next(sentences_of(shown.group(1)), "")
    if len(first) < 20 or PLAN.search(first) or NOT_A_CAUSE.search(first) or first.endswith(":"):
        return sentence  # a next step, a guess or another lead-in: no statement of what is wrong
    whole = " ".join(content[at : shown.start(1) + shown.group(1).find(first) + len(first)].split())
    return whole if len(whole) <= 300 else f"{sentence} {first}"


# The task's words reported ("The PR description says the hint is wrong ...", "According to the PR, ..."):
# what the agent was told, not what it found.
REPORTED = re.compile(
    r"^(?:so,? )?(?:(?:the|this) (?:pr|issue|task|ticket)(?: description| text)?,? (?:also |clearly )?"
    r"(?:says|said|mentions|mentioned|states|stated|suggests|suggested|asks|wants|describes)\b|"
    r"according to the (?:pr|issue|task|ticket|description)\b)",
    re.IGNORECASE,
)


def _reported(cause: str) -> bool:
    """The cause's first sentence after any announcement reports the task's words."""
    said = [s for s in sentences_of(cause) if not DISCOVERY.match(s)]
    return bool(said) and bool(REPORTED.match(said[0]))


def _claims(lead_in: str) -> bool:
    """A lead-in to a list that states a cause itself: a cause's words, then five words or more of what
    is wrong ("The problem is that the parent `IsNull` class's implementation ... will match both:"); not
    an announcement ("Now I see the issue! Looking at the code:") or a bare "The problem is that:"."""
    cue = ROOT_CAUSE.search(lead_in)
    if not lead_in.endswith(":") or cue is None or re.search(r"\b(?:because|why|since):$", lead_in, re.I):
        return False  # "..., but this doesn't make sense because:": its list argues for the fix
    return len(re.findall(r"\w+", lead_in[cue.end() :])) >= 5


def _with_first_item(content: str, lead_in: str) -> str | None:
    """A lead-in naming the way ("The fix should be to:") with the first item under it, as the message
    spells them: the step chosen; none where that item goes back on it ("But actually, we need to think
    about this more.") or there is none (code follows)."""
    at = content.find(lead_in)
    item = FIRST_ITEM.match(content, at + len(lead_in)) if at >= 0 else None
    if item is None or BACK_ON_IT.match(item.group(1)) or UNDECIDED.search(item.group(1)):
        return None
    return clip(" ".join(content[at : item.end(1)].split()), 300)


def _with_list(content: str, sentence: str) -> str:
    """A lead-in that states a cause ("The problem is that the parent `IsNull` ... will match both:") with
    the list under it, as the message spells them (up to a probe's length); else the lead-in alone."""
    at = content.find(sentence)
    listed = LISTED.match(content, at + len(sentence)) if at >= 0 else None
    if listed is None:
        return sentence
    return clip(" ".join(content[at : listed.end(1)].split()), 300)


def _code_masked(sentence: str) -> str:
    """The sentence with the dots and marks inside code (`os.path.normpath`, dataelem.py, 2.9.1) made
    word characters, so patterns that stop at a sentence's end read past them."""
    quoted = re.sub(r"`[^`\n]*`", lambda m: re.sub(r"[.!?]", "_", m.group(0)), sentence)
    return re.sub(r"(?<=\w)\.(?=\w)", "_", quoted)


def _with_plan_after(content: str, sentence: str) -> str:
    """A reason said alone ("But changing that would be a bigger change.") with the agent's plan right
    after it on the same line, a lead-in to its code included ("For now, let me fix `x`:"), when that
    plan names code; else the sentence."""
    at = content.find(sentence)
    line = content[at + len(sentence) :].split("\n", 1)[0].strip() if at >= 0 else ""
    plan = SENTENCE_BREAK.split(line, maxsplit=1)[0].strip() if line else ""
    if not plan or not INTENT_WORDS.search(plan) or not CODE_ENTITY.search(plan):
        return sentence
    return f"{sentence} {plan.rstrip(':')}"


# A sentence about what the one before named ("That's not related to our fix.", "However, this is a separate issue").
POINTER = re.compile(r"^(?:(?:but|however|and|so|again|also),? )?(?:this|that|these|those|it)\b", re.IGNORECASE)


def _with_before(content: str, sentence: str) -> str:
    """The sentence with the one before it in its paragraph, when that one names code; else the sentence."""
    at = content.find(sentence)
    head = content[:at].rstrip() if at >= 0 else ""
    breaks = list(SENTENCE_BREAK.finditer(head))
    start = breaks[-1].end() if breaks else 0
    before = head[start:]
    if not before or "\n\n" in content[start:at] or "```" in before or not CODE_ENTITY.search(before):
        return sentence
    return " ".join(content[start : at + len(sentence)].split())


def _with_neighbour(content: str, sentence: str) -> str:
    """The sentence with the next one of its paragraph (or, for a short one such as "This is the
    bug!", the one before), as the message spells them."""
    at = content.find(sentence)
    if at < 0:
        return sentence
    end = at + len(sentence)
    tail = content[end:]
    nxt = SENTENCE_BREAK.search(tail[1:] if tail[:1] in ".!?" else tail)
    para_end = tail.find("\n\n")
    if len(sentence) < 40:  # reach back instead
        head = content[:at]
        breaks = list(SENTENCE_BREAK.finditer(head.rstrip()))
        start = breaks[-1].end() if breaks else 0
        if "\n\n" not in head[start:] and "```" not in head[start:]:
            return " ".join(content[start : end + (1 if tail[:1] in ".!?" else 0)].split())
        return sentence
    # the next break ends the next sentence; with none, the rest of the text is the last sentence
    stop = nxt.start() + (1 if tail[:1] in ".!?" else 0) if nxt is not None else len(tail.rstrip())
    following = tail[:stop].strip(" .!?")
    bare_step = NEXT_STEP.match(following) and not CODE_ENTITY.search(following) and not re.search(r"\d", following)
    if not following or bare_step or PLEASANTRY.search(following) or tail[:stop].rstrip().endswith("?"):
        return sentence  # nothing, a next step naming nothing ("Let me look."), a courtesy, a question
    if (para_end >= 0 and para_end < stop) or "```" in tail[:stop] or tail[:stop].rstrip().endswith(":"):
        return sentence  # not across a paragraph or code, nor a lead-in to a list ("When it processes imports:")
    return " ".join(content[at : end + stop].split())
