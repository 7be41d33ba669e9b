"""The skill library: SQLite rows, edit history, checksum refusal, and the Agent Skills round trip."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolshift.errors import BadInputError
from toolshift.steward.library import Library, Skill, skill_name
from toolshift.steward.skillmd import export_skills, import_skills, render


def _plan(
    name: str = "plan-x-00000000", tools: tuple[str, ...] = ("ap_search_vendors", "ap_verify")
) -> Skill:
    body = {
        "requests": ["Hi, I need to verify vendor bank details"],
        "facts": ["vendor name", "verified by"],
        "steps": [
            {"tool": tools[0], "args": {"name": {"fact": "vendor name"}}, "each": False},
            {
                "tool": tools[1],
                "args": {
                    "vendor_id": {
                        "step": 0,
                        "path": ["items", 0, "vendor_id"],
                        "where": {"name": "vendor name"},
                    },
                    "verified_by": {"fact": "verified by"},
                },
                "each": False,
            },
        ],
    }
    return Skill(name, "planning", "accounts_payable", "Verify a vendor's bank details", body, tools)


def test_edits_are_rows_and_reopen_verifies(tmp_path):
    path = tmp_path / "lib.sqlite"
    lib = Library.create(path)
    with lib.transaction():
        s = lib.edit("add", _plan(), 1, {"episodes": ["e1"]})
        lib.edit("deactivate", s, 2, {"missing_tools": ["ap_verify"]})
        lib.edit("reactivate", s, 3, {"tools_back": ["ap_verify"]})
        lib.edit("revise", _plan(), 3, {"episodes": ["e2"]})
    lib.close()
    again = Library.open(path)
    assert [e.op for e in again.edits()] == ["add", "deactivate", "reactivate", "revise"]
    assert again.get("plan-x-00000000").revision == 2
    assert again.get("plan-x-00000000").active
    again.close()


def test_a_failed_transaction_leaves_nothing(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    with pytest.raises(ValueError), lib.transaction():
        lib.edit("add", _plan(), 1, {})
        lib.edit("add", _plan(), 1, {})  # a second add of the same skill
    assert lib.skills() == [] and lib.edits() == []
    lib.close()
    Library.open(tmp_path / "lib.sqlite").close()


def test_corrupted_library_is_refused_by_checksum(tmp_path):
    path = tmp_path / "lib.sqlite"
    lib = Library.create(path)
    with lib.transaction():
        lib.edit("add", _plan(), 1, {})
    lib.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE skills SET description = 'tampered'")
    conn.commit()
    conn.close()
    with pytest.raises(BadInputError, match="checksum") as err:
        Library.open(path)
    assert err.value.field == "checksum"


def test_garbage_file_is_bad_input(tmp_path):
    path = tmp_path / "lib.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(BadInputError, match="not a steward library"):
        Library.open(path)


def test_round_trip_is_lossless(tmp_path):
    skills = [
        _plan(),
        Skill("tool-ap-verify-1234abcd", "tool", "accounts_payable", "How to call ap_verify",
              {"required": ["vendor_id"], "params": {"vendor_id": {"type": "string"}},
               "errors": [{"message": "vendor_id: not found", "fix": "look the vendor up first"}]},
              ("ap_verify",), active=False, revision=3, catalog_version=4),
    ]  # fmt: skip
    export_skills(skills, tmp_path / "out")
    back = import_skills(tmp_path / "out")
    assert sorted(back, key=lambda s: s.id) == sorted(skills, key=lambda s: s.id)


@given(st.text(min_size=0, max_size=300), st.text(min_size=0, max_size=40))
def test_skill_names_are_always_valid(text, key):
    name = skill_name("plan", text, key)
    assert len(name) <= 64
    assert all(c.islower() or c.isdigit() or c == "-" for c in name)
    assert "--" not in name and not name.startswith("-") and not name.endswith("-")


def _write(tmp_path, folder, text):
    d = tmp_path / "skills" / folder
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(text, encoding="utf-8")
    return tmp_path / "skills"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda t: t.replace("name: plan-x-00000000", "name: Plan_X"), "name"),
        (lambda t: t.replace("name: plan-x-00000000", "name: other-name"), "name"),
        (
            lambda t: t.replace("description: Verify a vendor's bank details", "description: " + "x" * 1100),
            "description",
        ),
        (lambda t: t.replace("  level: planning", "  level: strategic"), "metadata.level"),
        (lambda t: t.replace("  revision: '1'", "  revision: 1"), "metadata.revision"),
        (lambda t: t.replace("```json", "```yaml"), "body"),
        (lambda t: t.replace("---\n#", "extra: 1\n---\n#", 1), "extra"),
        (lambda t: t.replace("```json\n", "```json\n" + "\n" * 600), "body"),
    ],
)
def test_bad_front_matter_names_the_field(tmp_path, mutate, field):
    text = mutate(render(_plan()))
    root = _write(tmp_path, "plan-x-00000000", text)
    with pytest.raises(BadInputError) as err:
        import_skills(root)
    assert err.value.field == field


def test_yaml_is_read_safely(tmp_path):
    text = render(_plan()).replace(
        "description: Verify", "description: !!python/object/apply:os.system ['true']\n  x: Verify"
    )
    root = _write(tmp_path, "plan-x-00000000", text)
    with pytest.raises(BadInputError, match="not YAML"):
        import_skills(root)
