"""`toolshift steward` on the command line: export, import, show; bad input is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

from toolshift.steward.library import Library, Skill


def _toolshift(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, timeout=120
    )


def _library(path):
    lib = Library.create(path)
    body = {"requests": ["approve an order"], "facts": ["order number"],
            "steps": [{"tool": "po_approve", "args": {"order_id": {"fact": "order number"}}, "each": False}]}  # fmt: skip
    with lib.transaction():
        s = lib.edit(
            "add",
            Skill("plan-po-approve-0a1b2c3d", "planning", "po", "Approve an order", body, ("po_approve",)),
            1,
            {},
        )
        lib.edit("deactivate", s, 2, {"missing_tools": ["po_approve"]})
    lib.close()


def test_export_import_show_round_trip(tmp_path):
    _library(tmp_path / "a.sqlite")
    done = _toolshift("steward", "export", str(tmp_path / "a.sqlite"), "--out", str(tmp_path / "skills"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "skills" / "plan-po-approve-0a1b2c3d" / "SKILL.md").is_file()
    done = _toolshift("steward", "import", str(tmp_path / "skills"), "--out", str(tmp_path / "b.sqlite"))
    assert done.returncode == 0, done.stderr
    with Library.open(tmp_path / "a.sqlite") as a, Library.open(tmp_path / "b.sqlite") as b:
        assert a.skills() == b.skills()
        assert not b.get("plan-po-approve-0a1b2c3d").active
    done = _toolshift("steward", "show", str(tmp_path / "b.sqlite"))
    assert done.returncode == 0 and "planning" in done.stdout


def test_bad_skill_and_corrupt_library_exit_2_naming_the_field(tmp_path):
    _library(tmp_path / "a.sqlite")
    _toolshift("steward", "export", str(tmp_path / "a.sqlite"), "--out", str(tmp_path / "skills"))
    md = tmp_path / "skills" / "plan-po-approve-0a1b2c3d" / "SKILL.md"
    md.write_text(md.read_text().replace("  level: planning", "  level: grand"))
    done = _toolshift("steward", "import", str(tmp_path / "skills"), "--out", str(tmp_path / "c.sqlite"))
    assert done.returncode == 2 and "metadata.level" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "c.sqlite").exists()
    raw = (tmp_path / "a.sqlite").read_bytes().replace(b"Approve an order", b"Approve an ORDER")
    (tmp_path / "a.sqlite").write_bytes(raw)
    done = _toolshift("steward", "show", str(tmp_path / "a.sqlite"))
    assert done.returncode == 2 and "checksum" in done.stderr and "Traceback" not in done.stderr
