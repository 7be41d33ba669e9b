"""A read call changes nothing (D147): the world's SQLite authorizer denies every statement that could, also one
sqlite3 had cached from an earlier write, a pragma that would lift the guard, a transaction and an ATTACH."""

from __future__ import annotations

from typing import Any

import pytest

from toolshift.world import Tool, World, load_domain

UPDATE = 'UPDATE "patient" SET "phone" = ? WHERE "patient_id" = ?'


def _world_with(sql: str, params: tuple[Any, ...] = ()) -> World:
    world = World(load_domain("clinic"))

    def sneaky(rt: Any, args: dict[str, Any]) -> Any:
        rt.conn.execute(sql, params)
        return {"done": True}

    def honest(rt: Any, args: dict[str, Any]) -> Any:
        rt.conn.execute(UPDATE, ("555-0000", "PAT-00001"))
        return {"done": True}

    world.add_tool(Tool("sneaky_read", "Writes, labelled read.", {"type": "object"}, "read", sneaky))
    world.add_tool(Tool("honest_write", "Writes.", {"type": "object"}, "write", honest))
    return world


@pytest.mark.parametrize(
    "sql, params",
    [
        (UPDATE, ("555-1234", "PAT-00001")),
        ('DELETE FROM "patient" WHERE "patient_id" = ?', ("PAT-00002",)),
        ("PRAGMA query_only = 0", ()),
        ("PRAGMA foreign_keys = OFF", ()),
        ("CREATE TABLE sneak (x)", ()),
        ("ATTACH DATABASE ':memory:' AS sneak", ()),
        ("SAVEPOINT sneak", ()),
        ("COMMIT", ()),
    ],
)
def test_a_read_cannot_change_anything_whatever_it_executes(sql, params):
    world = _world_with(sql, params)
    before = world.snapshot()
    r = world.call("sneaky_read", {})
    assert not r.ok and "labelled read but tried to write" in r.error["message"], r.error
    assert world.changes_since(before) == []
    assert world.call("get_patient", {"patient_id": "PAT-00001"}).ok  # and the world still answers


def test_a_write_statement_cached_by_an_earlier_write_call_is_still_refused_in_a_read():
    world = _world_with(UPDATE, ("555-9999", "PAT-00001"))
    for _ in range(3):  # the same statement text, prepared for a write and kept in sqlite3's statement cache
        assert world.call("honest_write", {}).ok
        before = world.snapshot()
        r = world.call("sneaky_read", {})
        assert not r.ok and "labelled read but tried to write" in r.error["message"], r.error
        assert world.changes_since(before) == []
    assert world.call("get_patient", {"patient_id": "PAT-00001"}).result["phone"] == "555-0000"


def test_writes_work_again_after_a_read_and_reads_that_only_read_are_untouched():
    world = _world_with("SELECT 1")
    assert world.call("sneaky_read", {}).ok  # a read that only reads is a read
    assert world.call("honest_write", {}).ok
    assert world.call("update_patient", {"patient_id": "PAT-00003", "phone": "1"}).changes
    assert world.call("get_patient", {"patient_id": "PAT-00003"}).result["phone"] == "1"
    for _ in range(2):
        assert world.call("update_patient", {"patient_id": "PAT-00003", "phone": "2"}).ok
        assert world.call("get_patient", {"patient_id": "PAT-00003"}).result["phone"] == "2"


def test_a_cursor_open_across_a_nested_read_keeps_its_rows():
    world = World(load_domain("clinic"))
    rows = world.conn.execute('SELECT "patient_id" FROM "patient" ORDER BY "patient_id"')
    first = rows.fetchone()
    world.conn.execute(
        UPDATE, ("1", "PAT-00004")
    )  # a write statement prepared: the next read resets the guard
    assert world.call("get_patient", {"patient_id": "PAT-00004"}).ok
    rest = rows.fetchall()
    assert first == ("PAT-00001",) and len(rest) == world.row_counts()["patient"] - 1
