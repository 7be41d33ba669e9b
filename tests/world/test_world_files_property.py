"""Saved world files, crafted: any mix of schema edits, `_ts_meta` edits and byte damage either opens as exactly the
world its spec compiles to or is refused with one `BadInputError` naming the file; nothing else escapes, and no
trigger or view ever reaches an opened world."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.errors import BadInputError
from toolshift.world import World, load_domain

EDITS = [
    "CREATE TRIGGER t1 AFTER UPDATE ON patient BEGIN UPDATE invoice SET amount = 0; END",
    "CREATE TRIGGER t2 BEFORE INSERT ON appointment BEGIN SELECT 1; END",
    "CREATE TEMP TRIGGER t3 AFTER DELETE ON doctor BEGIN SELECT 1; END",
    "CREATE VIEW v1 AS SELECT * FROM patient",
    "CREATE INDEX ix_more ON invoice(amount)",
    "DROP INDEX ix_invoice_patient_id",
    "CREATE TABLE extra(x)",
    "ALTER TABLE doctor ADD COLUMN notes TEXT",
    "DROP TABLE prescription",
    "DELETE FROM _ts_meta WHERE key = 'spec'",
    "UPDATE _ts_meta SET value = 'toolshift.world/9' WHERE key = 'format'",
    "UPDATE _ts_meta SET value = '{\"name\": 1}' WHERE key = 'spec'",
    "UPDATE _ts_meta SET value = '[' WHERE key = 'spec'",
    "UPDATE patient SET full_name = NULL",
    "DROP TABLE _ts_sequence",
]


def _saved(tmp: Path) -> Path:
    path = tmp / "clinic.sqlite"
    World(load_domain("clinic")).save(path)
    return path


@settings(
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    edits=st.lists(st.sampled_from(EDITS), max_size=3, unique=True),
    spec_edit=st.none()
    | st.dictionaries(
        st.sampled_from(["name", "seed", "entities", "actions", "x"]),
        st.none() | st.integers() | st.text(max_size=5),
        max_size=2,
    ),
    flips=st.lists(st.tuples(st.integers(0, 200_000), st.integers(1, 255)), max_size=3),
)
def test_a_crafted_world_file_opens_as_its_spec_or_is_refused(tmp_path_factory, edits, spec_edit, flips):
    path = _saved(tmp_path_factory.mktemp("wf"))
    conn = sqlite3.connect(path)
    for sql in edits:
        with contextlib.suppress(sqlite3.DatabaseError):  # an edit an earlier one made impossible
            conn.execute(sql)
    if spec_edit is not None:
        row = conn.execute("SELECT value FROM _ts_meta WHERE key = 'spec'").fetchone()
        if row is not None:
            try:
                spec = json.loads(row[0])
                spec.update(spec_edit)
                conn.execute("UPDATE _ts_meta SET value = ? WHERE key = 'spec'", (json.dumps(spec),))
            except (ValueError, AttributeError):
                pass
    conn.commit()
    conn.close()
    if flips:
        data = bytearray(path.read_bytes())
        for at, xor in flips:
            data[at % len(data)] ^= xor
        path.write_bytes(bytes(data))
    try:
        world = World.open(path)
    except BadInputError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    objects = world.conn.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')"
    ).fetchall()
    assert objects == []
    assert world.call("list_patients", {"limit": 2}).ok
