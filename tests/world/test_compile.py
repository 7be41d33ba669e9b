"""Compiling specs: the three built-in worlds, the SQLite layout, determinism, the generated tool surface."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

import pytest

from toolshift.errors import BadInputError
from toolshift.world import World, compile_domain, load_domain
from toolshift.world.language.spec import load_spec
from toolshift.world.state.registry import resolve_spec_path, world_domains

WORLD_DOMAINS = ["clinic", "freight_depot", "library"]


def test_world_domains_are_the_three_hand_written_ones():
    assert world_domains() == WORLD_DOMAINS


@pytest.mark.parametrize("name", WORLD_DOMAINS)
def test_builtin_domain_size_and_shape(name):
    d = load_domain(name)
    counts = d.row_counts()
    assert len(d.spec.entities) >= 5
    assert len(d.tools) >= 15
    assert sum(counts.values()) >= 1000
    assert all(counts[e.name] == e.rows for e in d.spec.entities)
    assert d.spec.relations
    with_policies = [a for a in d.spec.actions if a.preconditions]
    assert len(with_policies) >= 2
    assert d.spec.policy.startswith("# ")
    kinds = {t.meta["kind"] for t in d.tools}
    assert kinds == {"get", "list", "search", "create", "update", "delete", "relation", "action"}
    assert all(t.name.startswith(d.spec.tool_prefix) for t in d.tools)


def test_domains_have_different_shapes():
    names = {n: {e.name for e in load_domain(n).spec.entities} for n in WORLD_DOMAINS}
    assert not (names["clinic"] & names["library"] & names["freight_depot"])
    depot = load_domain("freight_depot")
    zone = depot.spec.entity("zone")
    assert zone.field("parent_zone_id").ref == "zone"  # a self-referencing hierarchy


def test_sqlite_layout_has_typed_columns_keys_and_foreign_keys(clinic):
    conn = clinic.conn
    cols = {r[1]: (r[2], r[5]) for r in conn.execute("PRAGMA table_info(appointment)")}
    assert cols["appointment_id"] == ("TEXT", 1)
    assert cols["starts_at"][0] == "TEXT"
    fks = {(r[3], r[2]) for r in conn.execute("PRAGMA foreign_key_list(appointment)")}
    assert fks == {("patient_id", "patient"), ("doctor_id", "doctor")}
    types = {r[1]: r[2] for r in conn.execute("PRAGMA table_info(medication)")}
    assert types["strength_mg"] == "INTEGER" and types["unit_price"] == "REAL"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE appointment SET status = 'bogus' WHERE appointment_id = 'APT-00001'")


def test_seeding_is_deterministic_and_seed_sensitive():
    spec = load_spec(resolve_spec_path("library"))
    a = compile_domain(spec).template.serialize()
    b = compile_domain(spec).template.serialize()
    c = compile_domain(spec, seed=spec.seed + 1).template
    assert a == b
    assert c.execute("SELECT full_name FROM member WHERE card_number = 'LIB-000001'").fetchone() != (
        compile_domain(spec)
        .template.execute("SELECT full_name FROM member WHERE card_number = 'LIB-000001'")
        .fetchone()
    )


def test_unique_fields_are_unique_and_refs_resolve():
    d = load_domain("clinic")
    emails = [r[0] for r in d.template.execute("SELECT email FROM patient")]
    assert len(emails) == len(set(emails))
    assert d.template.execute("PRAGMA foreign_key_check").fetchall() == []


def test_operations_are_respected(clinic):
    names = {t.name for t in clinic.tools}
    assert "get_prescription" in names and "create_prescription" not in names
    assert "delete_invoice" not in names


def test_tool_schemas_and_annotations(clinic):
    create = clinic.tool("create_patient")
    assert create.effect == "write"
    schema = create.input_schema
    assert "patient_id" not in schema["properties"]
    assert set(schema["required"]) == {"full_name", "email", "phone", "date_of_birth", "doctor_id"}
    assert schema["properties"]["email"]["format"] == "email"
    assert schema["properties"]["allergy_class"]["enum"][0] == "none"
    assert schema["properties"]["date_of_birth"]["format"] == "date"
    get = clinic.tool("get_patient")
    assert get.annotations["readOnlyHint"] is True and get.annotations["destructiveHint"] is False
    assert clinic.tool("delete_patient").annotations["destructiveHint"] is True
    assert clinic.tool("deactivate_patient").annotations["destructiveHint"] is True
    assert clinic.tool("book_appointment").annotations["destructiveHint"] is False
    assert clinic.tool("list_patient_appointments").effect == "read"
    assert clinic.tool("pay_invoice").description.startswith("Record full payment")


def test_compile_writes_a_standalone_sqlite_file(tmp_path: Path):
    world = World.load("freight_depot")
    out = world.save(tmp_path / "depot.sqlite")
    conn = sqlite3.connect(out)
    meta = dict(conn.execute("SELECT key, value FROM _ts_meta"))
    assert meta["format"] == "toolshift.world/1" and meta["domain"] == "freight_depot"
    assert conn.execute("SELECT COUNT(*) FROM pallet").fetchone()[0] == 700


def test_open_a_saved_world_file(tmp_path: Path):
    world = World.load("library")
    world.call("pay_fines", {"card_number": world.runtime.find("fine", paid=False)[0]["card_number"]})
    path = world.save(tmp_path / "lib.sqlite")
    reopened = World.open(path)
    assert reopened.name == "library" and len(reopened.tools) == len(world.tools)
    assert reopened.diff(world, reopened) == []
    assert reopened.diff(World.load("library"), reopened) == world.diff(World.load("library"), world)


def test_open_refuses_other_files(tmp_path: Path):
    path = tmp_path / "other.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)")
    with pytest.raises(BadInputError) as err:
        World.open(path)
    assert str(path) in str(err.value)


def test_row_dependent_generators(tiny_data):
    from toolshift.world.language.spec import parse_spec

    order = tiny_data["entities"][1]
    order["fields"].append(
        {
            "name": "shipped_on",
            "type": "date",
            "required": False,
            "gen": {
                "kind": "date_offset",
                "from": "placed_on",
                "min": 1,
                "max": 3,
                "when": {"status": "shipped"},
            },
        }
    )
    order["fields"][3]["gen"] = {"kind": "choice", "values": ["open", "shipped"]}
    d = compile_domain(parse_spec(tiny_data, "tiny.yaml"), "tiny.yaml")
    rows = World(d).runtime.find("order")
    assert {r["status"] for r in rows} == {"open", "shipped"}
    for r in rows:
        if r["status"] == "shipped":
            gap = date.fromisoformat(r["shipped_on"]) - date.fromisoformat(r["placed_on"])
            assert 1 <= gap.days <= 3
        else:
            assert r["shipped_on"] is None


def test_generator_cycles_are_refused(tiny_data):
    from toolshift.world.language.spec import parse_spec

    fields = tiny_data["entities"][1]["fields"]
    fields[2]["gen"] = {"kind": "money", "when": {"placed_on": "2026-01-01"}}
    fields[4]["gen"] = {"kind": "date", "when": {"total": 1.0}}
    with pytest.raises(BadInputError) as err:
        compile_domain(parse_spec(tiny_data, "tiny.yaml"), "tiny.yaml")
    assert "cycle" in str(err.value) and err.value.field.startswith("entities[1].fields[")
