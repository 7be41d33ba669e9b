"""A build is checked whole against its manifest, by digest: partial rebuilds, tampered files, stale specs,
and every command given a build folder refusing a broken one in one line (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.bench.build import (
    build_domain,
    build_world,
    file_digest,
    load_manifest,
    load_tasks,
    read_tasks,
    write_manifest,
)
from toolshift.cli import app
from toolshift.errors import BadInputError

DOMAINS = ["library", "payroll"]
runner = CliRunner()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("integrity") / "b"
    res = runner.invoke(
        app, ["bench", "build", "--out", str(out), "--domains", ",".join(DOMAINS), "--per-domain", "10"]
    )
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def build(pristine: Path, tmp_path: Path) -> Path:
    out = tmp_path / "b"
    shutil.copytree(pristine, out)
    return out


def _refused(args: list[str], *words: str) -> str:
    res = runner.invoke(app, args)
    assert isinstance(res.exception, BadInputError), (args, res.output, res.exception)  # exit 2 from main()
    text = str(res.exception)
    assert "\n" not in text and all(w in text for w in words), text
    return text


def test_rebuilding_one_domain_updates_only_that_domain(build: Path):
    """Before: the manifest shrank to the one domain rebuilt."""
    before = load_manifest(build)
    res = runner.invoke(
        app, ["bench", "build", "--out", str(build), "--domains", "payroll", "--per-domain", "10", "--force"]
    )
    assert res.exit_code == 0, res.output
    after = load_manifest(build)
    assert [e.name for e in after.domains] == DOMAINS
    assert after.total_tasks == before.total_tasks == 20
    assert after.domains[0] == before.domains[0]  # library's entry, digests included, untouched


def test_a_partial_rebuild_with_another_seed_is_refused_before_any_work(build: Path):
    stamp = (build / "domains/payroll/tasks.jsonl").stat().st_mtime_ns
    _refused(
        ["bench", "build", "--out", str(build), "--domains", "payroll", "--per-domain", "10", "--seed", "3"],
        "manifest.json", "--seed 0", "library",
    )  # fmt: skip
    assert (build / "domains/payroll/tasks.jsonl").stat().st_mtime_ns == stamp


def test_an_emptied_task_file_is_refused_by_verify_and_stats(build: Path):
    """Before: `bench verify` passed on an emptied tasks.jsonl and `bench stats` disagreed with the manifest."""
    (build / "domains/payroll/tasks.jsonl").write_text("")
    for command in ("verify", "stats"):
        _refused(["bench", command, str(build)], "payroll/tasks.jsonl", "10 tasks", "tasks_digest")


def test_an_altered_task_is_refused(build: Path):
    path = build / "domains/library/tasks.jsonl"
    tasks = read_tasks(path)
    tasks[2].public_request = "Something else."
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    with pytest.raises(BadInputError, match=r"library/tasks\.jsonl"):
        load_tasks(build)
    _refused(["bench", "verify", str(build)], "library/tasks.jsonl")


def test_a_spec_other_than_the_tasks_were_made_from_is_refused(build: Path):
    spec = build / "domains/payroll/spec.yaml"
    spec.write_text(spec.read_text().replace("Monthly payroll", "Weekly payroll"))
    with pytest.raises(BadInputError, match="spec_digest"):
        build_world(build, "payroll")
    _refused(["bench", "verify", str(build)], "payroll/spec.yaml", "digest")
    _refused(["bench", "stats", str(build)], "payroll/spec.yaml")


def test_evolve_with_a_missing_spec_or_task_file_says_which_in_one_line(build: Path):
    """Before: a 52-line traceback."""
    (build / "domains/payroll/spec.yaml").unlink()
    _refused(["bench", "evolve", str(build), "--versions", "2"], "payroll/spec.yaml", "missing")
    shutil.copy(build / "domains/library/spec.yaml", build / "domains/payroll/spec.yaml")
    (build / "domains/library/tasks.jsonl").unlink()
    _refused(["bench", "evolve", str(build), "--versions", "2"], "library/tasks.jsonl", "missing")


def test_a_resumed_build_rebuilds_a_tampered_domain(build: Path):
    path = build / "domains/payroll/tasks.jsonl"
    good = path.read_bytes()
    path.write_text("")
    build_domain(build, "payroll", seed=0, per_domain=10)  # the marker no longer matches the file
    write_manifest(build, ["payroll"], 0, 10)
    assert path.read_bytes() == good and load_manifest(build).total_tasks == 20


def test_verify_still_replays_a_consistent_build_with_a_wrong_task(build: Path):
    """A task edited *and* re-recorded in the manifest passes the digest check; the replay finds it."""
    path = build / "domains/library/tasks.jsonl"
    tasks = read_tasks(path)
    tasks[3].expected_changes = tasks[3].expected_changes[1:]
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    digest = file_digest(path)
    report = build / "domains/library/report.json"
    report.write_text(json.dumps({**json.loads(report.read_text()), "tasks_digest": digest}))
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["domains"][0]["tasks_digest"] = digest
    (build / "manifest.json").write_text(json.dumps(manifest))
    res = runner.invoke(app, ["bench", "verify", str(build)])
    assert res.exit_code == 1 and "library-0004: replayed changes differ" in res.output, res.output


def test_an_old_build_format_is_refused_with_what_to_do(build: Path):
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["format"] = "toolshift.bench-build/1"
    (build / "manifest.json").write_text(json.dumps(manifest))
    _refused(["bench", "stats", str(build)], "bench-build/1", "rebuild")


def test_a_bad_references_line_names_its_field(build: Path):
    from toolshift.bench.ecosystem.paths import load_references
    from toolshift.bench.ecosystem.store import ecosystem_dir, load_ecosystem

    res = runner.invoke(app, ["bench", "evolve", str(build), "--versions", "2"])
    assert res.exit_code == 0, res.output
    eco = load_ecosystem(build)
    header = {"format": "toolshift.bench-reference/1", "ecosystem": eco.id, "instances": 1, "valid": 1,
              "failed_replay": 0, "no_path": 0, "dp_seconds": 0.0, "replay_seconds": 0.0}  # fmt: skip
    record = {"task_id": "library-0001", "domain": "library", "version": "two"}
    (ecosystem_dir(build) / "references.jsonl").write_text(
        json.dumps(header) + "\n" + json.dumps(record) + "\n"
    )
    with pytest.raises(BadInputError) as caught:
        load_references(build)
    assert (caught.value.record, caught.value.field) == (1, "version")
    (ecosystem_dir(build) / "references.jsonl").write_text(json.dumps(header) + "\n{not json\n")
    with pytest.raises(BadInputError, match="malformed JSON"):
        load_references(build)
