"""Decoding that copies: which values each argument may take this turn, and the grammar that admits them."""

from __future__ import annotations

import json
import re

import pytest

from toolshift.agents.chat import ToolDef
from toolshift.agents.copying import (
    action_grammar,
    arg_kind,
    earlier_calls,
    failed,
    gave_values,
    key_prefixes,
    only_call,
    repeat_of,
    tool_choice,
)
from toolshift.traces.spans import spans_of
from toolshift.world import World


@pytest.fixture(scope="module")
def clinic() -> dict[str, ToolDef]:
    world = World.load("clinic")
    try:
        return {
            t.name: ToolDef(t.name, t.description, t.input_schema, t.effect == "read") for t in world.tools
        }
    finally:
        world.close()


def _props(tool: ToolDef) -> dict:
    return tool.input_schema["properties"]


def test_argument_kinds_from_the_schema(clinic):
    kinds = {n: arg_kind(n, p) for n, p in _props(clinic["create_appointment"]).items()}
    assert kinds == {"patient_id": "key", "doctor_id": "key", "starts_at": "datetime", "reason": "text",
                     "status": "enum"}  # fmt: skip
    search = {n: arg_kind(n, p) for n, p in _props(clinic["search_patients"]).items()}
    assert search["full_name"] == "words" and search["email"] == "email" and search["date_of_birth"] == "date"
    assert search["limit"] == "skip" and search["offset"] == "skip"


def test_a_key_is_offered_only_once_someone_named_it(clinic):
    cancel = clinic["cancel_appointment"]
    prefixes = key_prefixes(list(clinic.values()))
    assert prefixes["appointment"] == "APT-" and prefixes["patient_id"] == "PAT-"
    opening = spans_of([{"role": "user", "content": "I need to cancel my appointment."}])
    assert tool_choice(cancel, opening, prefixes=prefixes) is None  # nothing to copy: not callable
    named = spans_of([{"role": "user", "content": "Please cancel appointment APT-00003, I am PAT-00001."}])
    choice = tool_choice(cancel, named, prefixes=prefixes)
    assert choice is not None and choice.args[0].literals == ('"APT-00003"',)  # the patient's key is not one


def test_the_rule_keeps_only_the_most_recent_span(clinic):
    messages = [
        {"role": "user", "content": "Cancel APT-00003. No wait, APT-00007."},
        {"role": "tool", "content": '{"appointment_id": "APT-00005"}'},
    ]
    prefixes = key_prefixes(list(clinic.values()))
    model = tool_choice(clinic["cancel_appointment"], spans_of(messages), "model", prefixes=prefixes)
    rule = tool_choice(clinic["cancel_appointment"], spans_of(messages), "recent", prefixes=prefixes)
    assert model.args[0].literals == ('"APT-00003"', '"APT-00007"', '"APT-00005"')
    assert rule.args[0].literals == ('"APT-00005"',)


def test_a_write_copies_names_and_dates_from_the_user_not_from_records(clinic):
    messages = [
        {"role": "user", "content": "Please change my email to ana@new.example, I am PAT-00001."},
        {
            "role": "tool",
            "content": '{"patient_id": "PAT-00001", "email": "ana@old.example", "full_name": "Ana Abbott"}',
        },
    ]
    choice = tool_choice(
        clinic["update_patient"], spans_of(messages), prefixes=key_prefixes(list(clinic.values()))
    )
    by_name = {a.name: a for a in choice.args}
    assert by_name["email"].literals == ('"ana@new.example"',)
    assert '"Ana Abbott"' not in by_name["full_name"].literals
    search = tool_choice(clinic["search_patients"], spans_of(messages))
    assert search.needs_one and '"Ana Abbott"' in {a.name: a for a in search.args}["full_name"].literals


def test_a_search_must_be_narrowed(clinic):
    quiet = spans_of([{"role": "user", "content": "hello"}])
    choice = tool_choice(clinic["search_appointments"], quiet)
    assert choice is not None and choice.needs_one  # a status filter (an enum) is always at hand
    grammar = action_grammar([choice], can_reply=False)
    assert '"{\\"tool\\":\\"search_appointments\\",\\"arguments\\":{" (' in grammar.text
    assert "(a appointment" not in grammar.text


def test_the_grammar_bounds_its_longest_output(clinic):
    messages = [{"role": "user", "content": "Book PAT-00001 with DOC-001 at 2026-07-16T10:00 please."}]
    choice = tool_choice(
        clinic["create_appointment"], spans_of(messages), prefixes=key_prefixes(list(clinic.values()))
    )
    grammar = action_grammar([choice], can_reply=True, reply_chars=50)
    longest = json.dumps({"tool": "create_appointment", "arguments": {"patient_id": "PAT-00001",
                          "doctor_id": "DOC-001", "starts_at": "2026-07-16T10:00", "reason": "x" * 120,
                          "status": "no_show"}}, separators=(",", ":"))  # fmt: skip
    assert len(longest.encode()) <= grammar.max_bytes
    assert grammar.max_bytes < 400  # sized from the schema and the spans, not a fixed cut
    assert re.search(r"\{0,120\}", grammar.text)  # the free reason, capped


def test_the_conversation_as_the_planner_reads_it():
    messages = [
        {"role": "user", "content": "Cancel APT-00003"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "get_appointment",
                                                          "arguments": '{"appointment_id": "APT-00003"}'}}]},
        {"role": "tool", "content": '{"code": "not_found", "message": "no appointment APT-00003"}'},
    ]  # fmt: skip
    made = earlier_calls(messages)
    assert (
        repeat_of('{"tool":"get_appointment","arguments":{"appointment_id":"APT-00003"}}', made)
        == "get_appointment"
    )
    assert repeat_of('{"tool":"get_appointment","arguments":{"appointment_id":"APT-00004"}}', made) is None
    assert (
        failed(messages[-1]["content"])
        and failed("error: unknown tool")
        and not failed('{"code": "x", "n": 1}')
    )
    assert (
        gave_values("It is APT-00003.")
        and gave_values("I am Aisha Patel")
        and not gave_values("Can you help?")
    )
    spans = spans_of(messages[:1])
    one = tool_choice(ToolDef("get_appointment", "", {"type": "object", "properties": {"appointment_id": {
        "type": "string", "description": "The appointment's key, e.g. APT-00001."}}, "required": ["appointment_id"]}), spans)  # fmt: skip
    assert only_call(one) in made


def test_a_date_or_an_email_never_fills_a_name(clinic):
    batch = ToolDef(
        "ap_create_payment_batch",
        "Create a payment batch.",
        {
            "type": "object",
            "required": ["batch_number", "scheduled_date"],
            "properties": {
                "batch_number": {"type": "string"},
                "scheduled_date": {"type": "string", "format": "date"},
            },
        },
        False,
    )
    said = spans_of([{"role": "user", "content": "My scheduled date is 2026-06-02."}])
    assert arg_kind("batch_number", batch.input_schema["properties"]["batch_number"]) == "words"
    by_name = {a.name: a for a in tool_choice(batch, said).args}
    assert '"2026-06-02"' not in by_name["batch_number"].literals  # a batch number, not the date
    assert by_name["scheduled_date"].literals == ('"2026-06-02"',)
    said = spans_of([{"role": "user", "content": "Change my email to ana@new.example."}])
    search = tool_choice(clinic["search_patients"], said)
    by_name = {a.name: a for a in search.args}
    assert by_name["email"].literals == ('"ana@new.example"',)
    assert '"ana@new.example"' not in by_name["full_name"].literals
