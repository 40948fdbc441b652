"""Tool-API agents (tau-bench's customer service): what a state-changing call did, read from the
call and what the tool returned."""

from __future__ import annotations

import json

from ctxbench.probes.extract import extract_probes
from ctxbench.transcripts.model import Message, ToolCall, Transcript

POLICY = "# Airline Agent Policy\nYou can help users book, modify, or cancel flight reservations."


def _reservation(history: list[dict[str, object]], **extra: object) -> str:
    return json.dumps({"reservation_id": "MSJ4OA", "cabin": "economy", "payment_history": history, **extra})


def _changes(messages: list[Message]) -> dict[str, str]:
    return {p.answer: p.question for p in extract_probes(Transcript("t", messages)) if p.label == "change"}


BOOKED = {"payment_id": "gift_card_1647044", "amount": 984}
REFUND = {"payment_id": "gift_card_1647044", "amount": -984}


def test_a_call_that_moves_money_is_asked_with_its_arguments_and_the_payment_it_recorded():
    """The refund a cancellation recorded (the entry the reservation's payment history gained), one
    right answer; the question names the call and the reservation it acted on."""
    messages = [
        Message("system", POLICY),
        Message("user", "I would like to cancel my flight to San Francisco, I have travel insurance."),
        Message(
            "assistant", "", tool_calls=(ToolCall("g", "get_reservation_details", '{"reservation_id": "MSJ4OA"}'),)
        ),
        Message("tool", _reservation([BOOKED]), tool_call_id="g"),
        Message("assistant", "", tool_calls=(ToolCall("c", "cancel_reservation", '{"reservation_id": "MSJ4OA"}'),)),
        Message("tool", _reservation([BOOKED, REFUND], status="cancelled"), tool_call_id="c"),
        Message("assistant", "Reservation MSJ4OA is cancelled; $984 goes back to your gift card."),
        Message("user", "Thanks! ###STOP###"),
    ]
    got = _changes(messages)
    assert list(got) == [json.dumps(REFUND)], got
    assert "`cancel_reservation MSJ4OA`" in got[json.dumps(REFUND)]


def test_a_call_that_recorded_no_new_payment_is_asked_which_record_it_acted_on():
    """Adding free bags leaves the payment history as an earlier view showed it: the entry already
    there is not what the call did."""
    messages = [
        Message("system", POLICY),
        Message("user", "Please add two checked bags to my reservation MSJ4OA."),
        Message(
            "assistant", "", tool_calls=(ToolCall("g", "get_reservation_details", '{"reservation_id": "MSJ4OA"}'),)
        ),
        Message("tool", _reservation([BOOKED]), tool_call_id="g"),
        Message(
            "assistant",
            "",
            tool_calls=(
                ToolCall("b", "update_reservation_baggages", '{"reservation_id": "MSJ4OA", "total_baggages": 2}'),
            ),
        ),
        Message("tool", _reservation([BOOKED], total_baggages=2), tool_call_id="b"),
        Message("assistant", "Two bags are on MSJ4OA now, at no cost."),
        Message("user", "Thanks! ###STOP###"),
    ]
    got = _changes(messages)
    assert list(got) == ["MSJ4OA"], got


def test_a_call_that_recorded_no_payment_is_asked_what_it_changed_in_the_record():
    """Bags added at no cost: the fields the result gained over the earlier view of the same
    record are what the call did (as the tool printed them), asked with the call and its ID."""
    messages = [
        Message("system", POLICY),
        Message("user", "Please add two checked bags to my reservation MSJ4OA."),
        Message(
            "assistant", "", tool_calls=(ToolCall("g", "get_reservation_details", '{"reservation_id": "MSJ4OA"}'),)
        ),
        Message("tool", _reservation([BOOKED], total_baggages=0, nonfree_baggages=0), tool_call_id="g"),
        Message(
            "assistant",
            "",
            tool_calls=(
                ToolCall("b", "update_reservation_baggages", '{"reservation_id": "MSJ4OA", "total_baggages": 2}'),
            ),
        ),
        Message("tool", _reservation([BOOKED], total_baggages=2, nonfree_baggages=0), tool_call_id="b"),
        Message("assistant", "Two bags are on MSJ4OA now, at no cost."),
        Message("user", "Thanks! ###STOP###"),
    ]
    got = _changes(messages)
    assert list(got) == ['"total_baggages": 2'], got
    # asked like a code change: the call, its ID and the value before
    assert got['"total_baggages": 2'] == (
        'What did the agent\'s call `update_reservation_baggages MSJ4OA` change `"total_baggages": 0` to?'
    )


def test_a_booking_is_asked_which_record_it_created():
    """The new reservation's ID is what the booking returned: the answer, never the question's context."""
    messages = [
        Message("system", POLICY),
        Message("user", "I want to fly from DFW to SFO on May 22 in economy."),
        Message("assistant", "", tool_calls=(ToolCall("b", "book_reservation", '{"user_id": "amelia_davis_8890"}'),)),
        Message("tool", _reservation([BOOKED]), tool_call_id="b"),
        Message("assistant", "Booked: your reservation ID is MSJ4OA."),
        Message("user", "Thanks! ###STOP###"),
    ]
    assert list(_changes(messages)) == ["MSJ4OA"]


def test_an_id_a_change_question_names_is_not_asked_again_as_an_identifier():
    """The reservation the user gave is the context of the cancellation's question: asking which
    identifier the agent reused would ask the same fact twice."""
    messages = [
        Message("system", POLICY),
        Message("user", "I would like to cancel my flight to San Francisco."),
        Message("assistant", "Sure. What is your reservation ID?"),
        Message("user", "It is MSJ4OA, and I have travel insurance."),
        Message(
            "assistant", "", tool_calls=(ToolCall("g", "get_reservation_details", '{"reservation_id": "MSJ4OA"}'),)
        ),
        Message("tool", _reservation([BOOKED]), tool_call_id="g"),
        Message("assistant", "", tool_calls=(ToolCall("c", "cancel_reservation", '{"reservation_id": "MSJ4OA"}'),)),
        Message("tool", _reservation([BOOKED, REFUND], status="cancelled"), tool_call_id="c"),
        Message("assistant", "Reservation MSJ4OA is cancelled; $984 goes back to your gift card."),
        Message("user", "Thanks! ###STOP###"),
    ]
    probes = extract_probes(Transcript("t", messages))
    assert any(p.label == "change" and "MSJ4OA" in p.question for p in probes), probes
    assert not [p for p in probes if p.label == "identifier" and p.answer == "MSJ4OA"], probes


def _tasks(messages: list[Message]) -> dict[str, str]:
    return {p.answer: p.question for p in extract_probes(Transcript("t", messages)) if p.label == "task"}


def test_a_second_request_later_in_the_conversation_is_a_task_of_its_own():
    """A customer asks for one thing, then for another ("Also, can you upgrade ..."): both are what
    the agent works on; a confirmation of the agent's proposal is no new request."""
    messages = [
        Message("system", POLICY),
        Message("user", "I would like to cancel my reservation MSJ4OA, I have travel insurance."),
        Message("assistant", "I can cancel MSJ4OA with a full refund of $984. Shall I proceed?"),
        Message("user", "Yes, please cancel it."),
        Message("assistant", "", tool_calls=(ToolCall("c", "cancel_reservation", '{"reservation_id": "MSJ4OA"}'),)),
        Message("tool", _reservation([BOOKED, REFUND], status="cancelled"), tool_call_id="c"),
        Message("assistant", "MSJ4OA is cancelled. Is there anything else I can help you with?"),
        Message("user", "Thanks. Also, could you upgrade my other reservation M20IZO to business class?"),
        Message("assistant", "The upgrade of M20IZO costs $1194. Shall I charge your card ending in 7334?"),
        Message("user", "Yes, go ahead. ###STOP###"),
    ]
    got = _tasks(messages)
    later = "Also, could you upgrade my other reservation M20IZO to business class?"
    assert set(got) == {"I would like to cancel my reservation MSJ4OA, I have travel insurance", later}, got
    assert "later" in got[later]


def _identifiers(messages: list[Message]) -> dict[str, str]:
    return {p.answer: p.question for p in extract_probes(Transcript("t", messages)) if p.label == "identifier"}


PROFILE = json.dumps(
    {
        "name": {"first_name": "Mei", "last_name": "Brown"},
        "payment_methods": {"gift_card_8987598": {"source": "gift_card", "id": "gift_card_8987598"}},
        "membership": "regular",
        "reservations": ["DB1Y70", "MUGYUB", "3JA7XV"],
    }
)


def test_the_ids_a_profile_lists_are_asked_as_the_list_and_a_passed_id_with_its_tool():
    """The reservations a user's record lists, as the tool printed them, with the call that returned
    them (the user ID the question names is not asked again); an ID the agent passed to a tool is
    asked with the tool and the argument, in order when it passed several; a word is no ID."""
    messages = [
        Message("system", POLICY),
        Message("user", "My flight HAT045 was delayed and I am a Gold member. My user id is mei_brown_7075."),
        Message("assistant", "", tool_calls=(ToolCall("u", "get_user_details", '{"user_id": "mei_brown_7075"}'),)),
        Message("tool", PROFILE, tool_call_id="u"),
        Message(
            "assistant", "", tool_calls=(ToolCall("g", "get_reservation_details", '{"reservation_id": "3JA7XV"}'),)
        ),
        Message("tool", _reservation([BOOKED], reservation_id="3JA7XV"), tool_call_id="g"),
        Message("assistant", "I see 3JA7XV. Would you like a certificate, paid like your MasterCard booking?"),
        Message("user", "Yes, send it to gift_card_8987598 please, not my MasterCard."),
        Message(
            "assistant",
            "",
            tool_calls=(
                ToolCall("c", "send_certificate", '{"user_id": "mei_brown_7075", "payment_id": "gift_card_8987598"}'),
            ),
        ),
        Message("tool", "Certificate sent to gift_card_8987598.", tool_call_id="c"),
        Message("assistant", "Done: the certificate went to gift_card_8987598."),
        Message("user", "Thanks! ###STOP###"),
    ]
    got = _identifiers(messages)
    listed = '"DB1Y70", "MUGYUB", "3JA7XV"'
    assert got[listed] == "Which reservations did `get_user_details mei_brown_7075` list?", got
    assert got["gift_card_8987598"] == "Which payment id did the agent pass to `send_certificate`?", got
    assert "3JA7XV" not in got and "MasterCard" not in got, got


def test_the_one_listed_id_the_agent_looked_up_is_asked_with_its_lookup():
    """The list says which reservations exist; the one the agent then looked up alone is which of
    them is the customer's trip (a non-gold tau-bench run, task 12, lost it to the list)."""
    messages = [
        Message("system", POLICY),
        Message("user", "I need to cancel my flights from PHX to SEA. My user id is mei_brown_7075."),
        Message("assistant", "", tool_calls=(ToolCall("u", "get_user_details", '{"user_id": "mei_brown_7075"}'),)),
        Message("tool", PROFILE, tool_call_id="u"),
        Message(
            "assistant", "", tool_calls=(ToolCall("g", "get_reservation_details", '{"reservation_id": "3JA7XV"}'),)
        ),
        Message("tool", _reservation([BOOKED], reservation_id="3JA7XV"), tool_call_id="g"),
        Message("assistant", "I found 3JA7XV, basic economy without insurance: it cannot be refunded."),
        Message("user", "Then transfer me please. ###STOP###"),
    ]
    got = _identifiers(messages)
    assert got["3JA7XV"] == "Which reservation id did the agent pass to `get_reservation_details`?", got


def _constraints(messages: list[Message]) -> list[str]:
    return [p.answer for p in extract_probes(Transcript("t", messages)) if p.label == "constraint"]


def test_a_question_with_a_weak_cue_or_a_repeated_request_is_no_constraint():
    messages = [
        Message("system", POLICY),
        Message("user", "I need to downgrade all my upcoming business flights to economy."),
        Message("assistant", "I can help. What is your reservation ID?"),
        Message(
            "user",
            "I don't have it. Can anything be done without it? "
            "I just want all my upcoming business flights downgraded to economy.",
        ),
        Message("assistant", "I need the reservation ID to proceed."),
        Message("user", "Fine. Please make sure the seats stay together, and I don't want travel insurance."),
        Message("assistant", "Noted."),
        Message("user", "Thanks! ###STOP###"),
    ]
    got = _constraints(messages)
    assert "Can anything be done without it?" not in got, got
    assert not any("downgraded" in c for c in got), got
    assert "Please make sure the seats stay together, and I don't want travel insurance." in got, got


def test_a_plea_or_the_persons_own_promise_is_no_constraint():
    """ "There must be something you can do" pleads, "I'll make sure to find my user ID" is what the person
    will do, and "just to make sure, how many ...?" asks: none is a rule for the agent. "Please make sure the
    seats stay together" is one."""
    messages = [
        Message("system", POLICY),
        Message("user", "I need to downgrade all my upcoming business flights to economy."),
        Message("assistant", "Basic economy reservations cannot be changed."),
        Message("user", "I understand the policy, but given the circumstances, there must be something you can do."),
        Message("assistant", "I am sorry, I cannot. What is your user ID?"),
        Message("user", "I'll make sure to find my user ID and get back to you as soon as possible."),
        Message("assistant", "Thank you."),
        Message("user", "That sounds good, but just to make sure, how many passengers were in that reservation?"),
        Message("assistant", "One passenger."),
        Message("user", "Fine. Please make sure the seats stay together."),
        Message("assistant", "Noted."),
        Message("user", "Thanks! ###STOP###"),
    ]
    assert _constraints(messages) == ["Please make sure the seats stay together."], _constraints(messages)


def test_an_opening_that_only_asks_for_help_gives_way_to_the_first_request_that_names_something():
    """ "I need to make a few changes to my reservation" says nothing a continuing agent can act on;
    the first later sentence asking for something it names is the task (not the one giving an ID,
    not a yes to the agent's proposal)."""
    messages = [
        Message("system", POLICY),
        Message("user", "Hi there! I need to make a few changes to my upcoming flight reservation."),
        Message("assistant", "Sure. What are your user ID and reservation ID?"),
        Message("user", "Sure! My user ID is chen_lee_6825, and the reservation ID is YAX4DR."),
        Message("assistant", "Thanks. What would you like to change?"),
        Message("user", "I'd like to upgrade both Chen Lee and Noah Hernandez to business, please."),
        Message("assistant", "The upgrade costs $1200. Shall I proceed?"),
        Message("user", "Yes, please go ahead with the upgrade for Noah Hernandez."),
        Message("assistant", "Done."),
        Message("user", "Thanks! ###STOP###"),
    ]
    assert list(_tasks(messages)) == ["I'd like to upgrade both Chen Lee and Noah Hernandez to business, please"]


def test_a_first_message_that_says_what_after_its_opener_gives_that_sentence():
    messages = [
        Message("system", POLICY),
        Message("user", "Hi! I need some help with my upcoming travel plans. Can you help me cancel two reservations?"),
        Message("assistant", "Sure."),
        Message("user", "Thanks! ###STOP###"),
    ]
    assert list(_tasks(messages)) == ["Can you help me cancel two reservations"]
