"""The loop end to end on a small real build: two versions served through the gateway, learning between them.

The agent is the plan-following instrument (`toolshift.loop.instrument`: no model), so what each condition
changes is exactly what the gateway served it: Steward's retrieval and plans, the flows' lookups.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.bench.ecosystem.settings import VersionWorlds
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.loop.learn import judge
from toolshift.models import RowChange
from toolshift.steward.library import Library
from toolshift.traces.store import iter_episodes

DOMAINS = ["payroll", "it_assets"]
CONDITIONS = ["off", "steward", "flows", "evolve", "all"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def build(tmp_path_factory, evolved_build) -> Path:
    out = evolved_build(tmp_path_factory.mktemp("build"), DOMAINS, 10, 3)
    return out


def _loop(build: Path, out: Path, *extra: str) -> dict:
    args = ["loop", str(build), "--model", "plan-follower", "--out", str(out), "--resamples", "50", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def two_versions(build: Path, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("loop")
    page = out / "loop.md"
    return out, _loop(build, out, "--versions", "1,2", "--page", str(page))


def _episodes(path: Path) -> list:
    return list(iter_episodes(path))


def test_every_condition_serves_the_same_tasks_at_each_version(two_versions):
    out, results = two_versions
    tasks = results["definition"]["tasks"]
    assert tasks and set(results["conditions"]) == set(CONDITIONS)
    for c in CONDITIONS:
        for v in (1, 2):
            eps = _episodes(out / c / f"v{v}" / "episodes.jsonl")
            assert sorted(e.task_id for e in eps) == sorted(tasks)
            assert all(e.ecosystem_version and e.ecosystem_version.endswith(f"/v{v}") for e in eps)
            sr = results["conditions"][c][f"v{v}"]["SR"]
            assert sr["n"] == len(tasks) and sr["low"] <= sr["mean"] <= sr["high"]
    # nothing is learned before the first version: every condition serves it alike
    first = {c: results["conditions"][c]["v1"]["SR"]["mean"] for c in CONDITIONS}
    assert len(set(first.values())) == 1


def test_verdicts_are_the_benchmarks_on_the_gateways_recordings(build, two_versions):
    out, _ = two_versions
    tasks = {t.id: t for d in DOMAINS for t in VersionWorlds(build).tasks(d)}
    recs = {e.id: e for e in _episodes(out / "off" / "v2" / "recordings.jsonl")}
    eps = _episodes(out / "off" / "v2" / "episodes.jsonl")
    assert recs and len(recs) <= len(eps)
    for ep in eps:
        rec = recs.get(ep.id)
        assert rec is None or rec.harness == "toolshift-gateway"
        loop = ep.source["loop"]
        assert loop["success"] == judge(tasks[ep.task_id], rec).success
        if rec is not None and rec.world_diff is not None:
            diff = [RowChange.model_validate(c.model_dump()) for c in rec.world_diff]
            v = tasks[ep.task_id].verdict(diff)
            assert loop["success"] == (not v.missing)
            assert loop["strict"] == (not v.missing and not v.collateral)


def test_steward_learns_from_v1_and_is_served_on_v2(two_versions):
    out, results = two_versions
    with Library.open(out / "steward" / "libraries" / "v1.sqlite") as lib:
        assert lib.catalog_version == 2  # learned from v1, kept in step with v2's catalog (D213)
        assert lib.skills("planning")
    learned = results["learned"]["steward"]["v1"]["steward"]
    assert learned["episodes"] >= 1 and learned["skills_written"] >= 1
    v2 = results["conditions"]["steward"]["v2"]
    assert v2["served library"] == v2["tasks"] and v2["steward calls"] >= v2["tasks"]
    assert results["conditions"]["off"]["v2"]["steward calls"] == 0
    assert results["conditions"]["off"]["v2"]["served library"] == 0
    # the flows condition learns no library, the steward condition no flow
    assert not (out / "flows" / "libraries").exists()
    assert results["conditions"]["steward"]["v2"]["served flow"] == 0


def test_flows_are_learned_for_the_next_versions_catalog_and_served(two_versions):
    out, results = two_versions
    learned = results["learned"]["flows"]["v1"]["flows"]
    assert learned["for_version"] == 2 and learned["domains"]
    v2 = results["conditions"]["flows"]["v2"]
    assert v2["served flow"] >= 1
    recs = _episodes(out / "flows" / "v2" / "recordings.jsonl")
    made = sum(len(c.get("lookups", [])) for r in recs for c in r.source["gateway"]["calls"])
    assert made == v2["lookups made"]


def test_the_page_has_every_table(two_versions):
    out, _ = two_versions
    text = (out / "loop.md").read_text()
    for heading in ("## SR", "## strict SR", "## Cost", "## What each learning step wrote"):
        assert heading in text
    assert "toolshift loop " in text and "--versions 1,2" in text
    out_results = json.loads((out / "results.json").read_text())
    for by in out_results["conditions"].values():
        for figures in by.values():  # every episode is counted under the commit that made it
            assert sum(figures["code"].values()) == figures["tasks"]
    assert "Episodes made at " in text
    assert "](loop.png)" in text and (out / "loop.png").read_bytes().startswith(
        b"\x89PNG"
    )  # the picture beside it


def test_the_page_says_which_paired_differences_leave_out_zero():
    from toolshift.loop.results import differences_from_off

    def cell(mean: float, low: float, high: float) -> dict:
        return {"mean": mean, "low": low, "high": high, "n": 84}

    conds = {
        "off": {"v2": {}},
        "steward": {"v2": {"SR vs off": cell(-0.06, -0.119, -0.012)}},
        "flows": {"v2": {"SR vs off": cell(0.012, 0.0, 0.036)}},  # touches 0: holds it
        "all": {"v2": {"SR vs off": cell(0.12, 0.024, 0.226)}},
    }
    text = differences_from_off(conds, ["v2"])
    assert "below `off`: `steward` at v2 (-6.0 [-11.9, -1.2])" in text
    assert "above `off`: `all` at v2 (+12.0 [+2.4, +22.6])" in text and "`flows`" not in text
    conds = {"off": {"v2": {}}, "flows": {"v2": {"SR vs off": cell(0.012, 0.0, 0.036)}}}
    assert differences_from_off(conds, ["v2"]).startswith("No condition differs")


def test_the_page_says_whether_it_holds_the_issues_full_run(two_versions):
    from toolshift.loop.results import markdown

    _, results = two_versions
    full = "toolshift loop BUILD --model embedded --out runs/loop-full --sample 84"
    assert "not on this page yet" in markdown(results, full_command=full)
    made_here = markdown({**results, "command": full}, full_command=full)
    assert "the section below that names it" in made_here and "not on this page yet" not in made_here
    with_other = markdown({**results, "command": full + " --with runs/loop-instrument"}, full_command=full)
    assert "the section below that names it" in with_other


def test_a_rerun_redoes_nothing_and_an_interrupted_run_resumes(build, two_versions, tmp_path):
    out, results = two_versions
    path = out / "off" / "v2" / "episodes.jsonl"
    before = path.read_text().splitlines()
    again = _loop(build, out, "--versions", "1,2")
    assert path.read_text().splitlines() == before
    assert again["conditions"] == results["conditions"]
    assert again["load"] == results["load"]  # nothing served: the first command's load stays beside its times
    # interrupted: the last episode lost; only it is run again
    path.write_text("\n".join(before[:-1]) + "\n")
    _loop(build, out, "--versions", "1,2")
    after = path.read_text().splitlines()
    assert len(after) == len(before)
    assert [json.loads(x).get("id") for x in after] == [json.loads(x).get("id") for x in before]


def test_workers_serve_the_same_episodes_and_learn_the_same(build, two_versions, tmp_path):
    """`--workers 2`: each version's episodes served in two processes are the one-process run's, and the
    learning steps after them (library, flows, evolution's children) read them alike."""
    out, _ = two_versions
    other = tmp_path / "w2"
    _loop(build, other, "--versions", "1,2", "--conditions", "off,all", "--workers", "2")

    def served(path: Path) -> dict:
        eps = {}
        for e in iter_episodes(path):
            loop = {k: v for k, v in e.source.get("loop", {}).items() if k != "seconds"}
            calls = [(c.name, c.arguments) for m in e.messages for c in m.tool_calls or []]
            eps[e.id] = (calls, e.world_diff, loop, e.outcome)
        return eps

    compared = 0
    for c in ("off", "all"):
        for v in (1, 2):
            for name in ("episodes.jsonl", "recordings.jsonl", "children.jsonl"):
                one, two = out / c / f"v{v}" / name, other / c / f"v{v}" / name
                assert one.exists() == two.exists(), (c, v, name)
                if one.exists():
                    assert served(two) == served(one), (c, v, name)
                    compared += len(served(one))
    assert compared > 0
    learned = json.loads((out / "all" / "v1" / "learned.json").read_text())
    assert json.loads((other / "all" / "v1" / "learned.json").read_text()) == learned
    flows = sorted(p.relative_to(out) for p in (out / "all" / "flows").rglob("*.flow.json"))
    assert flows and [(other / f).read_text() for f in flows] == [(out / f).read_text() for f in flows]


# What docs/results/episodes/README.md packs of a loop run folder: everything but what the learning steps
# make again from the episodes (a condition's libraries and flows, DIR/<condition>/{libraries,flows}, and
# the steps' marks) and the gateway's scratch folders; `*/*/` so the `flows` condition's own folder stays.
PACK_EXCLUDES = [
    "--exclude=*/*/libraries",
    "--exclude=*/*/flows",
    "--exclude=learned.json",
    "--exclude=gateway",
]


def test_a_packed_run_resumes_elsewhere_serving_nothing_again_and_learning_the_same(
    build, two_versions, tmp_path
):
    """The archive a session leaves of an unfinished loop run (README of docs/results/episodes): `tar` of its
    episode stores, evolution's children and definition, unpacked into another folder, resumes there without
    serving an episode again, and its learning steps, made again from the episodes, learn what they learned."""
    import subprocess

    out, results = two_versions
    packed = tmp_path / "loop.tar.gz"
    subprocess.run(["tar", "czf", str(packed), "-C", str(out.parent), *PACK_EXCLUDES, out.name], check=True)
    (tmp_path / "restored").mkdir()
    subprocess.run(["tar", "xzf", str(packed), "-C", str(tmp_path / "restored")], check=True)
    restored = tmp_path / "restored" / out.name
    assert not list(restored.rglob("*.sqlite")) and not list(restored.rglob("learned.json"))
    stores = sorted(p.relative_to(out) for p in out.rglob("*.jsonl"))
    again = _loop(build, restored, "--versions", "1,2")
    assert sorted(p.relative_to(restored) for p in restored.rglob("*.jsonl")) == stores
    for rel in stores:
        assert (restored / rel).read_text() == (out / rel).read_text(), rel  # nothing served again
    for mark in out.rglob("learned.json"):
        again_mark = restored / mark.relative_to(out)
        assert json.loads(again_mark.read_text()) == json.loads(mark.read_text()), mark
    assert again["conditions"] == results["conditions"]


def test_failed_tasks_seed_evolution_whose_children_are_served(build, tmp_path):
    """Versions 2 and 3: the v1 procedure fails some v2 tasks (their tools changed), which seed children."""
    out = tmp_path / "loop"
    results = _loop(build, out, "--versions", "2,3", "--conditions", "off,evolve")
    failed = sum(
        1 for e in _episodes(out / "evolve" / "v2" / "episodes.jsonl") if not e.source["loop"]["success"]
    )
    assert failed >= 1
    evo = results["learned"]["evolve"]["v2"]["evolution"]
    assert evo["seeds"] == min(failed, 4)
    assert evo["children"] == evo["verified"] >= 1
    children = _episodes(out / "evolve" / "v2" / "children.jsonl")
    assert len(children) == evo["children"]
    assert all(e.task_id.split("~")[0] in results["definition"]["tasks"] for e in children)
    assert evo["solved"] == sum(1 for e in children if e.source["loop"]["success"])
    # evolution alone: the library learns from the solved children only, none of the agent's own episodes
    assert results["learned"]["evolve"]["v2"]["steward"]["episodes"] == evo["solved"]


def test_bad_input_is_one_line(build, two_versions, tmp_path):
    """Bad input is a BadInputError naming the field (the CLI's `main` prints it as one line, exit 2)."""
    out, _ = two_versions

    def refused(*args: str) -> str:
        r = CliRunner().invoke(app, ["loop", str(build), *args])
        assert isinstance(r.exception, BadInputError), r.output
        return str(r.exception)

    assert "sometimes" in refused(
        "--model", "plan-follower", "--out", str(tmp_path / "x"), "--conditions", "off,sometimes"
    )
    assert "another loop run" in refused("--model", "plan-follower", "--out", str(out), "--versions", "1,3")
    assert "nonsense" in refused("--model", "nonsense", "--out", str(tmp_path / "y"))
    assert "versions" in refused(
        "--model", "plan-follower", "--out", str(tmp_path / "z"), "--versions", "2,1"
    )


def test_the_report_draws_the_loops_section(two_versions, tmp_path):
    out, _ = two_versions
    page = tmp_path / "report.html"
    r = CliRunner().invoke(app, ["report", "html", str(out / "results.json"), "--out", str(page)])
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "The loop: learning from the gateway" in html and "Strict success rate" in html
    for c in CONDITIONS:
        assert f">{c}</td>" in html


def test_the_viewer_marks_what_the_loop_changed(two_versions, tmp_path):
    """A served lookup and a Steward supply step are marked on the message they belong to."""
    import shutil

    from toolshift.loop.marks import loop_marks
    from toolshift.report.inputs import discover
    from toolshift.report.view.server import Viewer

    out, results = two_versions
    flows = _episodes(out / "flows" / "v2" / "episodes.jsonl")
    marked = [loop_marks(e) for e in flows]
    made = sum(len(c[2]) for m in marked for c in m["calls"])
    assert made == results["conditions"]["flows"]["v2"]["lookups made"] >= 1
    for ep, m in zip(flows, marked, strict=True):
        for i, j, lookups, answered in m["calls"]:
            assert ep.messages[i].role == "assistant" and ep.messages[i].tool_calls[j].name
            assert lookups or answered
    steward = [loop_marks(e) for e in _episodes(out / "steward" / "v2" / "episodes.jsonl")]
    assert all(m["supplied"] for m in steward)  # every episode behind Steward was supplied something
    assert all(ep.messages[i].name in ("steward_plan", "retrieve_tools") for ep, m in
               zip(_episodes(out / "steward" / "v2" / "episodes.jsonl"), steward, strict=True) for i, _ in m["supplied"])  # fmt: skip
    assert loop_marks(_episodes(out / "off" / "v2" / "episodes.jsonl")[0])["supplied"] == []
    store = tmp_path / "flows-v2.episodes.jsonl"
    shutil.copy(out / "flows" / "v2" / "episodes.jsonl", store)
    row = next(k for k, m in enumerate(marked) if m["calls"])
    answer = Viewer(discover([store])).episode({"row": str(row)})
    assert answer["loop_marks"]["calls"] == marked[row]["calls"]


def test_the_instrument_reads_a_result_past_the_flows_lookup_block():
    from toolshift.gateway.flows import LOOKUPS_HEADER
    from toolshift.loop.instrument import _without_lookups

    world = '{"employee_id": "EMP-00145"}'
    messages = [{"role": "user", "content": "hi"},
                {"role": "tool", "content": world + "\n" + LOOKUPS_HEADER + '\n[{"tool": "pay_get_employee"}]'}]  # fmt: skip
    cut = _without_lookups(messages)
    assert cut[1]["content"] == world and json.loads(cut[1]["content"])
    assert (
        cut[0] == messages[0] and LOOKUPS_HEADER in messages[1]["content"]
    )  # the episode's own text untouched


def test_the_library_is_kept_in_step_with_the_next_catalog_before_it_is_served(build, tmp_path):
    """D213: after a version's episodes, Steward maintains onto the next version's catalog (no episode of it),
    so the library served there is kept for the catalog it is served with; the next step then learns at it."""
    out = tmp_path / "loop"
    results = _loop(build, out, "--versions", "1,2,3", "--conditions", "steward")
    for v, served_on in ((1, 2), (2, 3)):
        with Library.open(out / "steward" / "libraries" / f"v{v}.sqlite") as lib:
            assert lib.catalog_version == served_on
        ahead = results["learned"]["steward"][f"v{v}"]["steward"]["next_catalog"]
        assert ahead["for_version"] == served_on and ahead["edits"] >= 0
    assert "v3" not in results["learned"]["steward"]  # the last version: nothing is served after it


def test_a_resume_whose_library_or_flow_is_gone_or_whose_episodes_are_a_fifo_says_so_and_stops(
    build, two_versions, tmp_path
):
    """Issue 56: with `steward/libraries/v1.sqlite` gone, a resume served the Steward condition with no library,
    exited 0 and warned of nothing; a FIFO where an episodes file should be made a resume wait for ever."""
    import os
    import shutil

    out, _ = two_versions
    learned = json.loads((out / "steward" / "v1" / "learned.json").read_text())
    assert "note" not in learned["steward"], "the fixture's steward condition learned a library after v1"
    for gone in ("steward/libraries/v1.sqlite", "flows/flows/v1/*.flow.json"):
        copy = Path(shutil.copytree(out, tmp_path / gone.split("/")[0]))
        victim = next(copy.glob(gone))
        victim.unlink()
        r = CliRunner().invoke(app, ["loop", str(build), "--model", "plan-follower", "--out", str(copy),
                                     "--resamples", "50", "--versions", "1,2"])  # fmt: skip
        assert isinstance(r.exception, BadInputError), r.output
        assert (
            str(victim) in str(r.exception)
            and "delete" in str(r.exception)
            and "learned.json" in str(r.exception)
        )
    fifo = Path(shutil.copytree(out, tmp_path / "fifo"))
    (fifo / "off" / "v2" / "episodes.jsonl").unlink()
    os.mkfifo(fifo / "off" / "v2" / "episodes.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "toolshift", "loop", str(build), "--model", "plan-follower", "--out", str(fifo),
         "--resamples", "50", "--versions", "1,2"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "FIFO" in done.stderr and "Traceback" not in done.stderr, done.stderr[
        -2000:
    ]
