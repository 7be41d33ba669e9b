"""BFCL multi-turn worlds against bfcl-eval itself: its classes, data, possible answers and multi_turn_checker."""

from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")

from toolshift.errors import BadInputError
from toolshift.models import covers
from toolshift.world.external import Transcript, bfcl, export_tasks, judge_task
from toolshift.world.external.objects import ObjectWorld, view_changes

# The one possible answer BFCL ships that breaks its own function doc: close_ticket(ticket_id='ticket_001')
# where the doc says integer (entry 173 of every category). BFCL's harness runs it as written, so do we.
SCHEMA_BREAKING = [f"multi_turn_{c}_173" for c in ("base", "long_context", "miss_func", "miss_param")]


def _gold_transcript(task):
    turns = [[[(g.tool, g.arguments)] for g in path] for path in task.turn_paths()]
    return Transcript(turns=turns, calls=[(g.tool, g.arguments) for g in task.gold_path], final_text="")


@pytest.fixture(scope="module")
def all_tasks():
    return export_tasks("bfcl")


def test_every_possible_answer_gets_full_marks_from_bfcls_checker(all_tasks):
    """All 800 entries of the four categories: exported (gold replayed on our world) and judged by BFCL."""
    report = all_tasks
    assert report.failed == []
    assert len(report.tasks) == 800
    exported = {t.id: t for t in report.tasks}
    for task_id in SCHEMA_BREAKING:
        assert any(g.tool == "close_ticket" and g.arguments == {"ticket_id": "ticket_001"}
                   for g in exported[task_id].gold_path)  # fmt: skip
    verdicts = {t.id: judge_task(t, _gold_transcript(t)) for t in report.tasks}
    wrong = {k: v for k, v in verdicts.items() if not v["success"]}
    assert wrong == {}
    # Δgold is what the checker's state comparison sees: a task that changes state has a non-empty diff.
    assert sum(1 for t in report.tasks if t.expected_changes) > 700


def test_a_wrong_call_fails_bfcls_state_check_and_a_missing_turn_is_force_terminated():
    task = export_tasks("bfcl", subsets=["base"], limit=1).tasks[0]
    gold = _gold_transcript(task)
    wrong = [list(map(list, turn)) for turn in gold.turns]
    wrong[0][2] = [("mv", {"source": "final_report.pdf", "destination": "archive"})]
    verdict = judge_task(task, Transcript(turns=wrong, calls=[], final_text=""))
    assert (
        verdict["success"] is False and verdict["info"]["error_type"] == "multi_turn:instance_state_mismatch"
    )
    short = judge_task(task, Transcript(turns=gold.turns[:-1], calls=[], final_text=""))
    assert short["info"]["error_type"] == "multi_turn:force_terminated"


def test_calls_that_cannot_be_written_safely_never_reach_the_checker():
    task = export_tasks("bfcl", subsets=["base"], limit=1).tasks[0]
    gold = _gold_transcript(task)
    # The last one the world refuses to store, so the agent was told it failed: never judged either.
    hostile = [("__import__", {"name": "os"}), ("open", {"file": "/etc/passwd"}), ("ls", {"a-b": 1}),
               ("ls", {"__class__": 1}), ("ls", "not an object"), ("mkdir", {"dir_name": "x" * 15_000})]  # fmt: skip
    turns = [list(t) for t in gold.turns]
    turns[0] = [*turns[0], hostile]
    verdict = judge_task(task, Transcript(turns=turns, calls=[], final_text=""))
    assert verdict["info"]["dropped"] == len(hostile)
    assert verdict["success"] is True  # the rest is still the possible answer
    methods = bfcl._methods(tuple(bfcl.entry(task.id).involved_classes))
    assert bfcl.call_string("ls", {"a": True}, methods) == "ls(a=True)"
    assert bfcl.call_string("echo", {"content": "x'); import os; ('", "file_name": "f"}, methods) == (
        """echo(content="x'); import os; ('",file_name='f')"""
    )


def test_possible_answers_are_read_with_ast_never_evaluated():
    e = bfcl.entry("multi_turn_base_0")
    assert bfcl.parse_call("sort('final_report.pdf')", e) == ("sort", {"file_name": "final_report.pdf"})
    for text in (
        "__import__('os').system('true')",
        "ls(a=print('x'))",
        "ls(**{'a': 1})",
        "x = 1",
        "ls(a=[i for i in ()])",
    ):
        with pytest.raises(ValueError):
            bfcl.parse_call(text, e)


def test_world_state_is_bfcls_public_attributes_and_diffs_are_leaf_changes():
    world = ObjectWorld(bfcl.load_domain("multi_turn_base_0"))
    names = {t.name for t in world.tools}
    assert {"ls", "cd", "mv", "post_tweet"} <= names and len(names) == 32
    before = world.snapshot()
    assert world.call("cd", {"folder": "document"}).changes == []  # the current directory is private state
    made = world.call("mkdir", {"dir_name": "temp"})
    assert made.ok and {(c.table, c.key, c.field, c.op) for c in made.changes} == {
        ("GorillaFileSystem", "root", "/contents/document/contents/temp/name", "insert"),
        ("GorillaFileSystem", "root", "/contents/document/contents/temp/contents", "insert"),
    }
    assert world.changes_since(before) == made.changes
    fork = world.fork()
    assert fork.call("ls", {}).result == {
        "current_directory_content": ["final_report.pdf", "previous_report.pdf", "temp"]
    }
    world.restore(before)
    assert world.changes_since(before) == [] and world.call("ls", {}).result["current_directory_content"] == [
        "document",
        "archive",
    ]
    assert covers(fork.changes_since(before), made.changes)


def test_bad_arguments_and_unknown_tools_are_errors_not_crashes():
    world = ObjectWorld(bfcl.load_domain("multi_turn_base_0"))
    # Types, required and unknown arguments are BFCL's methods' business, as in BFCL's harness.
    for args, says in (({"folder": 3}, "AttributeError"), ({}, "missing 1 required"), ({"folder": "document", "x": 1}, "unexpected keyword")):  # fmt: skip
        result = world.call("cd", args)
        assert (
            not result.ok
            and result.error["message"].startswith("Error during execution")
            and says in result.error["message"]
        )
    assert world.call("nope", {}).error["code"] == "unknown_tool"
    assert world.call("cd", {"folder": "x" * 20_000}).error["code"] == "invalid_arguments"  # sizes are ours
    assert world.call("cd", {"folder": float("nan")}).error["code"] == "invalid_arguments"
    assert world.call("pwd", {}).result == {"current_working_directory": "/workspace"}  # nothing moved
    with pytest.raises(BadInputError, match="not a BFCL multi-turn entry"):
        bfcl.entry("simple_python_0")


def test_no_gold_call_of_a_tool_labelled_read_changes_state(all_tasks):
    for task in all_tasks.tasks:
        world = ObjectWorld(bfcl.load_domain(task.id))
        effects = {t.name: t.effect for t in world.tools}
        for g in task.gold_path:
            result = world.call(g.tool, g.arguments)
            if effects[g.tool] == "read":
                assert result.changes == [], (task.id, g.tool)


def test_view_changes_tell_types_apart():
    assert view_changes({"A": {"x": 1}}, {"A": {"x": True}})[0].op == "update"
    assert view_changes({"A": {"x": {"a": 1}}}, {"A": {"x": {}}}) != []
