"""Crafted WorkBench rows: each is bad input naming file, row and field (never a traceback), and a fuzzer of
`full_response` / `function_calls` text finds no other exception."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.errors import BadInputError
from toolshift.traces.workbench import convert_workbench_csv

GOOD = (
    "{'input': 'q', 'output': 'done', 'intermediate_steps': [(AgentAction(tool='email.search_emails', "
    "tool_input={'query': 'x'}, log='Thought: search'), [{'id': '1'}])]}"
)


def _csv(tmp_path: Path, full_response: str, function_calls: str = "[]") -> Path:
    folder = tmp_path / "results" / "email"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gpt-4_all_2024-03-21_15-21-12.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["query", "function_calls", "full_response", "error"])
        writer.writeheader()
        writer.writerow({"query": "find x", "function_calls": "[]", "full_response": GOOD, "error": ""})
        writer.writerow(
            {"query": "q2", "function_calls": function_calls, "full_response": full_response, "error": ""}
        )
    return path


CASES = {
    "a log that is an integer": (
        GOOD.replace("log='Thought: search'", "log=5"),
        "[]",
        "intermediate_steps[0][0].log",
    ),
    "an unhashable set in function_calls": (GOOD, "{[1], [2]}", "function_calls"),
    "an unhashable key in tool_input": (GOOD.replace("{'query': 'x'}", "{[1]: 2}"), "[]", None),
    "a 100,000-term operator chain": (
        "{'input': 'q', 'output': " + "1+" * 100_000 + "1}",
        "[]",
        "full_response",
    ),
    "nesting 100,000 deep": ("{'input': " + "[" * 100_000 + "]" * 100_000 + "}", "[]", "full_response"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_crafted_row_is_bad_input_or_converted(tmp_path, case):
    text, calls, field = CASES[case]
    path = _csv(tmp_path, text, calls)
    if field is None:  # an unhashable key: the row converts, its call flagged and kept as written (issue 56)
        conv = convert_workbench_csv(path)
        conv.note_unknown_tools()
        assert conv.kept == 2 and conv.malformed_calls == 1
        flagged = [c for e in conv.episodes for m in e.messages for c in m.tool_calls or [] if c.malformed]
        assert flagged[0].arguments == {"_raw": "{[1]: 2}"}  # never rewritten to {"[1]": 2}
        return
    with pytest.raises(BadInputError) as err:
        convert_workbench_csv(path)
    assert err.value.source == str(path) and err.value.record == 1 and field in (err.value.field or "")
    conv = convert_workbench_csv(path, skip_bad=True)
    assert conv.kept == 1 and sum(conv.skipped.values()) == 1


_atoms = st.sampled_from(
    ["1", "'s'", "None", "nan", "[1]", "{1}", "{[1]: 2}", "array([1])", "x.y", "1+1", "()"]
)
_fragments = st.lists(_atoms | st.text(max_size=8), max_size=12).map(" ".join)


@settings(
    deadline=None,
    max_examples=120,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    tool=_fragments,
    tool_input=_fragments,
    log=_fragments,
    observation=_fragments,
    calls=_fragments,
    depth=st.integers(0, 3000),
)
def test_any_full_response_is_converted_or_bad_input(
    tmp_path_factory, tool, tool_input, log, observation, calls, depth
):
    text = (
        f"{{'input': 'q', 'output': {'[' * depth}1{']' * depth}, 'intermediate_steps': [(AgentAction(tool={tool}, "
        f"tool_input={tool_input}, log={log}), {observation})]}}"
    )
    path = _csv(tmp_path_factory.mktemp("wb"), text, calls)
    try:
        conv = convert_workbench_csv(path)
    except BadInputError as exc:
        assert exc.record == 1 and "\n" not in str(exc)
        return
    assert conv.kept == 2
