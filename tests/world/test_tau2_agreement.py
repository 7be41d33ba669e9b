"""Our τ² airline and retail worlds against τ²-bench itself: every task's expected actions replayed through both.

Our side replays each τ² task's expected actions on a fresh world and writes the initial database and
the records each task changed, in τ²'s shapes (`toolshift.world.tau2.compare`). τ²-bench, in its own
venv (the `tau2_python` fixture: the one `make test` builds), replays the same actions through its own
environment and compares record by record, call by call (`tau2_replay_probe.py`). Every airline and
retail task must agree; a task that does not fails the test with its first differing record.
Skipped where no Python 3.12, no snapshot or no shared data exists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peers import SHARED, run_tau2
from toolshift.world import load_domain
from toolshift.world.tau2.compare import replay_record
from toolshift.world.tau2.domains import tau2_world

pytestmark = [pytest.mark.slow, pytest.mark.shared]

PROBE = Path(__file__).parent / "tau2_replay_probe.py"
TYPES = {"string": "string", "int": "integer", "float": "number", "bool": "boolean", "enum": "string"}


def _skip_without_data() -> None:
    for name in ("tau2-airline", "tau2-retail"):
        why = tau2_world(name).unavailable()
        if why is not None:
            pytest.skip(f"{name} unavailable: {why}")


@pytest.fixture(scope="module")
def agreement(tau2_python, tmp_path_factory) -> dict:
    """τ²-bench's verdict on both domains (one τ²-bench process for both: its imports take seconds)."""
    _skip_without_data()
    folder = tmp_path_factory.mktemp("tau2-agreement")
    ours = {"domains": {"airline": replay_record("tau2-airline"), "retail": replay_record("tau2-retail")}}
    (folder / "ours.json").write_text(json.dumps(ours))
    done = run_tau2(tau2_python, PROBE, str(SHARED), str(folder / "ours.json"), str(folder / "theirs.json"))
    assert done.returncode == 0, done.stderr[-4000:]
    verdict = json.loads((folder / "theirs.json").read_text())
    verdict["ours"] = {d: sorted(v["tasks"]) for d, v in ours["domains"].items()}
    return verdict


@pytest.mark.parametrize("domain,tasks", [("airline", 50), ("retail", 114)])
def test_every_task_leaves_the_database_tau2_leaves(agreement, domain, tasks):
    report = agreement["domains"][domain]
    assert report["initial"]["first_difference"] is None, report["initial"]["first_difference"]
    assert len(report["tasks"]) == tasks == len(agreement["ours"][domain])
    disagree = {
        task_id: r["first_difference"] or r["model_refusals"][:1]
        for task_id, r in report["tasks"].items()
        if r["first_difference"] or r["model_refusals"]
    }
    assert not disagree, f"{len(disagree)} {domain} tasks disagree with τ²-bench: {disagree}"
    assert sum(1 for r in report["tasks"].values() if any(r["changed"].values())) > tasks // 3


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_every_call_returns_what_tau2_returns(agreement, domain):
    report = agreement["domains"][domain]
    differ = {t: r["call_differences"] for t, r in report["tasks"].items() if r["call_differences"]}
    assert not differ, f"calls differ from τ²-bench's: {differ}"
    failing = sum(len(r["tau2_errors"]) for r in report["tasks"].values())
    assert (failing > 0) == (domain == "retail")  # τ²'s retail tasks expect some failing lookups


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_our_catalog_is_tau2s(agreement, domain):
    tau2_tools = agreement["domains"][domain]["tools"]
    ours = {t.name: t for t in load_domain(tau2_world(domain).name).tools}
    assert set(ours) == set(tau2_tools)
    for name, fn in tau2_tools.items():
        schema, theirs = ours[name].input_schema, fn["parameters"]
        assert set(schema["properties"]) == set(theirs["properties"]), name
        assert set(schema.get("required", [])) == set(theirs.get("required", [])), name
        for param, p in theirs["properties"].items():
            mine = schema["properties"][param]
            assert mine.get("type") == p.get("type"), (name, param)
            assert mine.get("enum") == p.get("enum"), (name, param)
            assert mine.get("description") == p.get("description"), (name, param)
        assert ours[name].description == fn["description"], name
