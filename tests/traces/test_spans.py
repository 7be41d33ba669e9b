"""Spans of a conversation: the values an argument could copy from the user's words and from tool results."""

from __future__ import annotations

from toolshift.traces.spans import (
    ConversationSpans,
    capitalised_runs,
    clauses,
    is_content_span,
    key_prefix,
    shape_of,
    spans_of,
    word_spans,
)


def test_shapes_of_identifiers():
    assert shape_of("APT-00003") == "key"
    assert shape_of("mia_li_3668") == "key"
    assert shape_of("ana@new.example") == "email"
    assert shape_of("2026-06-11") == "date"
    assert shape_of("2026-07-16T10:00") == "datetime"
    assert shape_of("29059.94") == "number"
    assert shape_of("Aisha Patel") == "words"
    assert key_prefix("LE-0150") == "LE-" and key_prefix("12345") is None


def test_spans_stay_inside_a_clause_and_lose_edge_punctuation():
    text = "My employee full name is Aisha Patel. My last working day is 2026-06-11."
    assert clauses(text) == [
        ["My", "employee", "full", "name", "is", "Aisha", "Patel"],
        ["My", "last", "working", "day", "is", "2026-06-11"],
    ]
    spans = list(word_spans(text))
    assert "Aisha Patel" in spans and "2026-06-11" in spans
    assert "Patel My" not in spans  # never across a sentence's end
    assert all(1 <= len(s.split()) <= 6 for s in spans)
    assert is_content_span("Aisha Patel") and not is_content_span("is Aisha")


def test_capitalised_runs_are_names_not_sentence_openings():
    assert list(capitalised_runs("Please cancel my appointment.")) == []
    assert list(capitalised_runs("You want to terminate Aisha Patel (last day: 2026-06-11).")) == [
        "Aisha Patel",
        "2026-06-11",
    ]
    assert list(capitalised_runs("Redwood Partners sent it")) == ["Redwood Partners"]


def test_conversation_values_by_shape_and_recency():
    spans = spans_of(
        [
            {"role": "system", "content": "policy APT-99999"},
            {"role": "user", "content": "Please cancel appointment APT-00003."},
            {
                "role": "tool",
                "content": '{"appointment_id": "APT-00003", "patient_id": "PAT-00161", "amount": 12.5}',
            },
            {"role": "user", "content": "Oh, and appointment APT-00007 too."},
        ]
    )
    keys = [c.value for c in spans.of_shape("key")]
    assert keys == ["APT-00003", "PAT-00161", "APT-00007"]  # by when each was last seen
    assert "APT-99999" not in keys  # the system prompt is not the conversation
    assert [c.value for c in spans.of_shape("key", user_only=True)] == ["APT-00003", "APT-00007"]
    assert "patient_id" in next(c for c in spans.of_shape("key") if c.value == "PAT-00161").fields
    assert 12.5 in [c.value for c in spans.of_shape("number")]


def test_deep_or_odd_results_do_not_break_the_reader():
    spans = ConversationSpans()
    deep: object = "x-1"
    for _ in range(100):
        deep = [deep]
    spans.add_result(deep)
    spans.add_result("error: tool call timed out after 30 s")
    spans.add_result({"flag": True, "note": "a" * 500, "n": None})
    assert [c.value for c in spans.of_shape("number")] == [30]
