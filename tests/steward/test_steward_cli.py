"""`toolshift steward` on the command line: export, import, show, maintain's version check; a foreign Agent
Skills folder imports; bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.library import Library, Skill, Work
from toolshift.steward.supply import Supply


def _toolshift(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, timeout=120
    )


def _out(done: subprocess.CompletedProcess[str]) -> str:
    """stdout with rich's line wrapping undone."""
    return " ".join(done.stdout.split())


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
        lib.record_work(Work(1, "initialise", episodes=1, distilled=1, edits=1))
        lib.edit("deactivate", s, 2, {"missing_tools": ["po_approve"]})
        lib.record_work(Work(2, "incremental", edits=1))
    lib.close()


def test_export_import_show_round_trip(tmp_path):
    _library(tmp_path / "a.sqlite")
    done = _toolshift(
        "steward",
        "export",
        str(tmp_path / "a.sqlite"),
        "--out",
        str(tmp_path / "skills"),
        "--include-inactive",
    )
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
    _toolshift(
        "steward",
        "export",
        str(tmp_path / "a.sqlite"),
        "--out",
        str(tmp_path / "skills"),
        "--include-inactive",
    )
    md = tmp_path / "skills" / "plan-po-approve-0a1b2c3d" / "SKILL.md"
    md.write_text(md.read_text().replace("  level: planning", "  level: grand"))
    done = _toolshift("steward", "import", str(tmp_path / "skills"), "--out", str(tmp_path / "c.sqlite"))
    assert done.returncode == 2 and "metadata.level" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "c.sqlite").exists()
    raw = (tmp_path / "a.sqlite").read_bytes().replace(b"Approve an order", b"Approve an ORDER")
    (tmp_path / "a.sqlite").write_bytes(raw)
    done = _toolshift("steward", "show", str(tmp_path / "a.sqlite"))
    assert done.returncode == 2 and "checksum" in done.stderr and "Traceback" not in done.stderr


def test_show_counts_each_versions_edits_by_operation(tmp_path):
    _library(tmp_path / "a.sqlite")
    done = _toolshift("steward", "show", str(tmp_path / "a.sqlite"))
    assert done.returncode == 0, done.stderr
    assert "no edits" not in done.stdout
    assert "v1 initialise: 1 successful episode, 1 distilled, 1 edit (add 1)" in _out(done)
    assert "v2 incremental: 0 successful episodes, 0 distilled, 1 edit (deactivate 1)" in _out(done)
    shown = _toolshift("steward", "show", str(tmp_path / "a.sqlite"), "--json")
    body = json.loads(shown.stdout)
    assert shown.returncode == 0 and body["edits"] == {"add": 1, "deactivate": 1}
    assert [(w["catalog_version"], w["mode"], w["edits"], w["by_op"]) for w in body["work"]] == [
        (1, "initialise", 1, {"add": 1}),
        (2, "incremental", 1, {"deactivate": 1}),
    ]
    assert body["skills"]["planning"] == {"active": 0, "inactive": 1}
    Library.create(tmp_path / "empty.sqlite").close()
    done = _toolshift("steward", "show", str(tmp_path / "empty.sqlite"))
    assert done.returncode == 0 and "edits: none" in done.stdout
    empty = json.loads(_toolshift("steward", "show", str(tmp_path / "empty.sqlite"), "--json").stdout)
    assert empty["edits"] == {} and empty["work"] == []


def test_export_leaves_inactive_skills_out_unless_asked_and_then_marks_them(tmp_path):
    _library(tmp_path / "a.sqlite")
    done = _toolshift("steward", "export", str(tmp_path / "a.sqlite"), "--out", str(tmp_path / "active"))
    assert done.returncode == 0 and "wrote 0 skills" in _out(done) and "1 inactive left out" in _out(done)
    assert not (tmp_path / "active" / "plan-po-approve-0a1b2c3d").exists()
    done = _toolshift(
        "steward", "export", str(tmp_path / "a.sqlite"), "--out", str(tmp_path / "all"), "--include-inactive"
    )
    text = (tmp_path / "all" / "plan-po-approve-0a1b2c3d" / "SKILL.md").read_text()
    body = text.split("\n---\n", 1)[1]
    assert body.startswith("> **Inactive**:") and "Do not use this skill" in body


def test_import_keeps_the_library_version_and_maintain_refuses_one_not_after_it(tmp_path):
    _library(tmp_path / "a.sqlite")
    _toolshift(
        "steward",
        "export",
        str(tmp_path / "a.sqlite"),
        "--out",
        str(tmp_path / "skills"),
        "--include-inactive",
    )
    done = _toolshift("steward", "import", str(tmp_path / "skills"), "--out", str(tmp_path / "b.sqlite"))
    assert done.returncode == 0 and "at catalog version 2" in _out(done), done.stdout + done.stderr
    with Library.open(tmp_path / "b.sqlite") as b:
        assert b.catalog_version == 2
    for version in ("1", "2"):
        done = _toolshift(
            "steward", "maintain", str(tmp_path / "b.sqlite"), "--build", str(tmp_path / "nowhere"),
            "--version", version,
        )  # fmt: skip
        assert done.returncode == 2 and "already at version 2" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


FOREIGN = {
    "pdf-processing": (
        "---\nname: pdf-processing\n"
        "description: Extract text and tables from PDF files. Use when the user mentions PDFs.\n---\n"
        "# PDF processing\n\n## When to use\n\nWhen the user works with PDF files.\n\n"
        "## Steps\n\n1. Extract the text with `pdftotext`.\n2. Summarise the tables.\n"
    ),
    "data-analysis": (
        "---\nname: data-analysis\ndescription: Analyse a CSV file and chart it.\nlicense: Apache-2.0\n"
        "compatibility: Requires Python 3.11+\nmetadata:\n  author: example-org\n  version: '1.0'\n"
        "allowed-tools: Bash(python3:*) Read\n---\n# Data analysis\n\nLoad the CSV, then plot it.\n"
    ),
}


def test_a_foreign_agent_skills_folder_imports_and_exports_as_written(tmp_path):
    _library(tmp_path / "a.sqlite")
    _toolshift(
        "steward",
        "export",
        str(tmp_path / "a.sqlite"),
        "--out",
        str(tmp_path / "skills"),
        "--include-inactive",
    )
    for name, text in FOREIGN.items():
        (tmp_path / "skills" / name).mkdir()
        (tmp_path / "skills" / name / "SKILL.md").write_text(text)
    done = _toolshift("steward", "import", str(tmp_path / "skills"), "--out", str(tmp_path / "b.sqlite"))
    assert done.returncode == 0, done.stderr
    assert "imported 3 skills" in _out(done) and "2 foreign" in _out(done)
    with Library.open(tmp_path / "b.sqlite") as b:
        pdf = b.get("pdf-processing")
        assert pdf.level == "foreign" and pdf.active and pdf.tools == ()
        assert pdf.description.startswith("Extract text and tables")
        assert b.get("data-analysis").body["front"]["metadata"] == {"author": "example-org", "version": "1.0"}
        assert b.get("plan-po-approve-0a1b2c3d").level == "planning" and b.catalog_version == 2
        schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
        catalog = Catalog(2, {"po_approve": CatalogTool("po_approve", "po", "Approve.", schema, "write")})
        supply = Supply(b, catalog)  # supply reads Steward's levels only: a foreign skill is never supplied
        supplied = [s.id for s in supply.plans + supply.atomics + list(supply.tool_skills.values())]
        assert "pdf-processing" not in supplied and "data-analysis" not in supplied
    done = _toolshift("steward", "show", str(tmp_path / "b.sqlite"))
    assert done.returncode == 0 and "foreign" in done.stdout
    done = _toolshift("steward", "export", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "again"))
    assert done.returncode == 0, done.stderr
    again = (tmp_path / "again" / "pdf-processing" / "SKILL.md").read_text()
    assert again == FOREIGN["pdf-processing"]
    reread = (tmp_path / "again" / "data-analysis" / "SKILL.md").read_text()
    assert "license: Apache-2.0" in reread and "author: example-org" in reread and "Load the CSV" in reread
    # a Steward skill (one with metadata.level) still gets every check
    md = tmp_path / "skills" / "plan-po-approve-0a1b2c3d" / "SKILL.md"
    md.write_text(md.read_text().replace("  domain: po\n", ""))
    done = _toolshift("steward", "import", str(tmp_path / "skills"), "--out", str(tmp_path / "c.sqlite"))
    assert done.returncode == 2 and "metadata.domain" in done.stderr


def test_build_and_maintain_refuse_a_model_that_is_not_a_chat_model_before_any_work(tmp_path):
    _library(tmp_path / "lib.sqlite")
    for args in (["build", str(tmp_path / "no-build"), "--out", str(tmp_path / "new.sqlite")],
                 ["maintain", str(tmp_path / "lib.sqlite"), "--build", str(tmp_path / "no-build"), "--version", "3"],
                 ["eval", str(tmp_path / "no-build"), "--run", str(tmp_path / "run"), "--dev", "5"]):  # fmt: skip
        for model in ("oracle", "nonsense"):
            done = _toolshift("steward", *args, "--model", model)
            assert done.returncode == 2, done.stderr
            assert "model" in (done.stdout + done.stderr)
    assert not (tmp_path / "new.sqlite").exists() and not (tmp_path / "run").exists()
