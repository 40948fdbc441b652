"""A conversation's decisions (tau-bench style, an agent serving a person): the agent's rulings by
policy, what it offered after a failed call, what it decided to do for the person, and the person's
choices and later requests. Read from the turns, apart from an agent's statements about its own work
(``statements``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import zip_longest

from ctxbench.probes.facts import Fact, clip
from ctxbench.probes.statements import (
    KEY_VALUE,
    PLEASANTRY,
    _prose,
    _with_a_person,
    _with_neighbour,
    _with_next,
    sentences_of,
)
from ctxbench.transcripts.model import Message

# What a user chose or asked for after the task (tau-bench style conversations).
# Customers type a curly apostrophe as often as a straight one ("I’d like to go with Option 1").
USER_CHOICE = re.compile(
    r"\b(?:i['’]?ll (?:go with|take|use|pay with)|i['’]?d (?:like|prefer)|i (?:want|choose|prefer)|let['’]?s go with|"
    r"let['’]?s (?:proceed|go ahead) with|(?:please )?use my|"
    # a request that is a choice ("Could you please use Gift Card 6276644", "Yes, please use the credit card ...")
    r"(?:could|can|would) you (?:please )?(?:use|apply|charge|upgrade|downgrade|book|cancel)|"
    r"(?:please|yes,? please) (?:use|apply|charge)|"
    r"(?:yes|ok(?:ay)?),? (?:please )?(?:proceed|go ahead|do it|book|cancel|change|downgrade|upgrade))\b",
    re.IGNORECASE,
)
# What a customer's choice names in words: a way to pay, a cabin, a kind of flight ("I'll use the credit card
# on file", "use any certificates first, then any gift cards", "proceed with upgrading to economy class").
CHOSEN_OBJECT = re.compile(
    r"\b(?:gift ?cards?|certificates?|credit ?cards?|master ?card|visa|paypal|economy|business class|first class|"
    r"checked bags?|travel insurance|cheapest|fastest|shortest|earliest|nonstop|non-stop|direct flight|one-stop)\b",
    re.IGNORECASE,
)


def user_choices(messages: list[Message], first_user: int | None) -> Iterator[Fact]:
    """Choices the user made after the task ("I'll go with the first option, Flight HAT136"): what
    the agent acts on next."""
    for i, m in enumerate(messages):
        if m.role != "user" or i == first_user or m.tool_call_id or "<returncode>" in m.content:
            continue
        asked = _asked_before(messages, i)
        question = (
            f'The agent asked: "{asked}" What did the user choose or ask for?'
            if asked
            else "What did the user choose or ask for at this point?"
        )
        for sentence in sentences_of(m.content):
            if _added_request(sentence):
                continue  # a request added to the first, asked as a task of its own (``later_requests``)
            if 15 <= len(sentence) <= 200 and USER_CHOICE.search(sentence) and _specific(sentence):
                yield Fact("decision", sentence, i, question)


def _asked_before(messages: list[Message], at: int) -> str | None:
    """The question the agent's reply right before a person's turn ends on ("How would you like to
    pay?"): the context that makes the person's choice the one answer; short ones only."""
    before = messages[at - 1] if at > 0 else None
    if before is None or before.role != "assistant" or before.tool_calls:
        return None
    said = [x for x in sentences_of(before.content) if x.endswith("?")]
    return said[-1] if said and len(said[-1]) <= 120 else None


# A request added to the first ("Also, could you upgrade ...", "I'd also like to add a bag"): a task of its own.
ADDED = re.compile(r"\b(?:also|additionally|as well|in addition|one more thing|another (?:thing|request))\b", re.I)
REQUEST = re.compile(
    r"\b(?:i(?:['’]d| would) (?:also )?like|i (?:also )?(?:want|need)|(?:can|could|would) you|please)\b", re.I
)


def later_requests(messages: list[Message], first_user: int | None) -> Iterator[Fact]:
    """What a person asked for after the first request: a sentence of a later user message that adds
    a request (an "also" with a request form and a verb acting on something), not a confirmation."""
    if first_user is None:
        return
    for i, m in enumerate(messages):
        if i <= first_user or m.role != "user" or m.tool_call_id or "<returncode>" in m.content:
            continue
        for sentence in sentences_of(m.content):
            if 15 <= len(sentence) <= 200 and _added_request(sentence):
                yield Fact("task", sentence, i, "What did the user ask for later, after the first request?")


def _added_request(sentence: str) -> bool:
    """An "also" with a request form and a verb acting on something: a task of its own."""
    return bool(ADDED.search(sentence) and REQUEST.search(sentence) and ACTION_ON.search(sentence))


def _specific(choice: str) -> bool:
    """A choice that names what: an ID or a number, or an action on an object ("downgrade all of them
    to economy class"), not a bare "yes, go ahead" nor one on only "a few of them"."""
    if re.search(r"[A-Z0-9]{3,}|\d", choice) or CHOSEN_OBJECT.search(choice):
        return True
    action = ACTION_ON.search(choice)
    if action is None or len(choice.split()) < 6:
        return False
    return any(w.lower() not in NO_OBJECT for w in re.findall(r"[A-Za-z']+", choice[action.end() :]))


# Words that name no object of an action ("modify a few of them").
NO_OBJECT = {
    "a", "an", "the", "all", "any", "both", "each", "every", "few", "some", "several", "many", "more", "most", "of",
    "them", "it", "its", "this", "that", "these", "those", "one", "ones", "my", "your", "our", "their", "me", "us",
    "you", "to", "for", "please", "too", "as", "well", "also", "then", "now", "here", "there", "so", "just",
}  # fmt: skip


ACTION_ON = re.compile(
    r"(?<!the )\b(?:book|cancel|change|downgrade|upgrade|modify|remove|add|refund|exchange|return)\b", re.I
)  # a verb ("downgrade all of them"), not a noun ("go ahead with the change")
# A customer-service refusal or requirement, by policy ("Unfortunately, I need the reservation ID to
# proceed", "basic economy tickets are non-refundable").
# A ruling in the policy's own impersonal words ("basic economy cannot be modified", "exceeds your
# budget of $600"): a ruling also where the agent goes on to its next call, or thinks it.
POLICY = re.compile(
    r"\b(?:(?:is|are) not (?:eligible|allowed|permitted|possible|refundable)|non-?refundable|"
    r"(?:against|according to|per) (?:our |the )?polic\w+|"
    r"cannot be (?:modified|changed|cancell?ed|refunded|upgraded|downgraded|added|removed)|"
    r"exceed(?:s|ed)? (?:your|the) (?:budget|limit|maximum)|(?:over|above) (?:your|the) budget)\b",
    re.IGNORECASE,
)
REFUSAL = re.compile(
    r"\b(?:unfortunately|i(?:'m| am) (?:unable|not able)|i can(?:no|')t|i'?m sorry, but|"
    r"i need (?:the|your) [\w ]{2,30}? to (?:proceed|continue))\b|" + POLICY.pattern,
    re.IGNORECASE,
)


# A ruling the other way: what the policy lets the customer do ("Since you have travel insurance, you
# are eligible to cancel"); not the agent asking itself whether ("to determine if you're eligible").
GRANT = re.compile(
    r"\b(?:(?:you are|you'?re|it is|it'?s|is|are) (?:eligible|entitled) (?:for|to)|"
    r"i can (?:assist|help) you (?:with )?\w+ing\b(?=[^.]*\b(?:since|because|given)\b))",
    re.IGNORECASE,
)
# What the agent will do for the person, with the reason or the condition first ("Since you are a gold
# member, I can offer you a certificate", "If only one certificate can be used per reservation, we will
# apply the certificate with the highest balance first"); not an offer ("If you would like, I can ...").
REASONED = re.compile(
    r"^(?:(?:since|given that)\b[^.]{5,160},\s*(?:i|we) (?:can|will|'ll|would) (?:only |also )?|"
    r"if\b[^.]{5,160},\s*(?:i|we) (?:will|'ll) )"
    r"(?:offer|provide|issue|refund|waive|apply|cancel|upgrade|change|modify|proceed|add|book|use)\b",
    re.IGNORECASE,
)
WHETHER = re.compile(r"\b(?:determine|check|verify|see|whether|if)\b[^.]*\b(?:eligible|entitled)\b", re.IGNORECASE)
# The agent's decision to act, said to the person as a sentence of its own after what it found ("The flights
# over 3 hours are in reservation S61CZX. I will proceed with canceling this reservation."); not a promise
# that waits on the person ("Please confirm ..., and I'll proceed with the booking": that starts otherwise).
PROCEED = re.compile(
    r"^(?:(?:therefore|so|thus|then|now|accordingly),?\s+)?(?:i|we)(?:'ll| will| am going to) (?:now )?"
    r"(?:proceed (?:with|to)|go ahead (?:and|with))\b",
    re.IGNORECASE,
)


def refusals(messages: list[Message]) -> Iterator[Fact]:
    """What the agent ruled by policy for a person, with its reason: its replies to a user (no tool
    call, no action block, a user's turn next) that refuse or require, or grant ("you are eligible
    to cancel"), in the order stated, one per reply; a ruling repeated (most of the shorter one's
    words) is asked once."""
    said: list[set[str]] = []
    for fact in _proposals_after_failures(messages):
        said.append(set(re.findall(r"\w{3,}", fact.answer.lower())))
        yield fact
    conversation = _with_a_person(messages)
    for i, m in enumerate(messages[:-1]):
        if m.role != "assistant" or "```" in m.content:
            continue
        reply = not m.tool_calls and messages[i + 1].role == "user"
        if not reply and not conversation:
            continue
        # before a call, only the policy's own words: "I can't find the file" rules on nothing
        ruling = REFUSAL if reply else POLICY
        previous = ""
        for text, sentence in ((t, x) for t in (_prose(m) if not reply else [m.content]) for x in sentences_of(t)):
            before, previous = previous, sentence
            if len(sentence) < 20 or PLEASANTRY.search(sentence) or sentence.endswith(":"):
                continue
            refused = bool(ruling.search(sentence))
            reasoned = reply and bool(REASONED.search(sentence))
            if reply and conversation and not refused and not reasoned and PROCEED.match(sentence):
                yield from _proceeding(text, before, sentence, i, said)
                break
            if not refused and not reasoned and not (GRANT.search(sentence) and not WHETHER.search(sentence)):
                continue
            words = set(re.findall(r"\w{3,}", sentence.lower()))
            if not any(len(words & w) >= 0.5 * min(len(words), len(w)) for w in said):
                said.append(words)
                answer = clip(_with_neighbour(text, sentence), 300)
                question = (
                    "What did the agent refuse or require, and why?"
                    if refused
                    else "What did the agent say it would do for the customer, and why?"
                    if reasoned
                    else "What did the agent find the customer eligible for, and why?"
                )
                yield Fact("decision", answer, i, question)
            break


# Words of sympathy before a decision ("I understand your situation."): no reason for it.
SYMPATHY = re.compile(r"(?:i (?:understand|see)|i'?m (?:so )?sorry|i apologi[sz]e)\b", re.IGNORECASE)


PROCEED_WORDS = {"will", "proceed", "with", "the", "this", "that", "your", "you", "for", "and", "are", "now"}


def _proceeding(text: str, before: str, sentence: str, i: int, said: list[set[str]]) -> Iterator[Fact]:
    """A decision to act (``PROCEED``) with the sentence before it when that says why (a finding or a
    ruling of the same paragraph, not a list's detail, a question or a courtesy); once, as rulings are."""
    why = (
        before
        and len(before) >= 20
        and not before.endswith(("?", ":"))
        and not KEY_VALUE.match(before)
        and not PLEASANTRY.search(before)
        and not SYMPATHY.match(before)
    )
    answer = _with_next(text, before, sentence) if why else sentence
    answer = answer if answer != before else sentence  # not across a paragraph
    # the words of what is decided: "I will proceed with" starts every such sentence and says nothing apart
    words = set(re.findall(r"\w{3,}", answer.lower())) - PROCEED_WORDS
    if words and not any(len(words & w) >= 0.5 * min(len(words), len(w)) for w in said):
        said.append(words)
        yield Fact("decision", clip(answer, 300), i, "What did the agent decide to do for the customer, and why?")


# A tool's result that reports a failure ("Error: not enough seats on flight HAT139").
FAILED = re.compile(r"\s*(?:error|exception|failed)\b", re.IGNORECASE)
# The way the agent offers instead ("Let's consider the next available option, flight HAT271", "You can
# use a combination of payment methods", "I recommend contacting a human agent").
PROPOSAL = re.compile(
    r"\b(?:let'?s (?:consider|try|go with|use|book|look at)|"
    r"(?:you|we) (?:can|could) (?:use|choose|try|consider|book|opt)|"
    r"i (?:recommend|suggest)|instead\b|(?:an|another) (?:alternative|option)|next available)",
    re.IGNORECASE,
)


def _proposals_after_failures(messages: list[Message]) -> Iterator[Fact]:
    """What the agent offered a person instead after a call failed: in its reply right after the
    failed result, the first sentence that proposes another way, with the one before it (why)."""
    for i, m in enumerate(messages[1:-1], 1):
        before, after = messages[i - 1], messages[i + 1]
        if m.role != "assistant" or m.tool_calls or before.role != "tool" or after.role != "user":
            continue
        if not FAILED.match(before.content):
            continue
        said = [x for x in sentences_of(m.content) if not PLEASANTRY.search(x)]
        k = next((k for k, x in enumerate(said) if PROPOSAL.search(x) and not x.endswith(":")), None)
        if k is not None:
            joined = _with_next(m.content, said[k - 1], said[k]) if k > 0 else said[k]
            answer = joined if k == 0 or joined != said[k - 1] else said[k]  # not across a paragraph
            yield Fact(
                "decision", clip(answer, 300), i, "What did the agent offer instead after the failed call, and why?"
            )


def conversation_decisions(messages: list[Message], first_user: int | None) -> Iterator[Fact]:
    """A conversation's decisions, by turns: the agent's rulings and the person's choices, each in
    the order stated, so that a run of one kind leaves slots for the other."""
    for pair in zip_longest(refusals(messages), user_choices(messages, first_user)):
        yield from (f for f in pair if f is not None)
