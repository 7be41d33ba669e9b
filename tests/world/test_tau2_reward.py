"""Our τ²-bench reward against τ²-bench's own evaluator, on mutated action sequences of every airline and retail task.

The cases (`tests/tau2_mutations.py`: 1,679 over the 164 tasks, every mutation kind) are played through
toolshift's agent loop on our worlds and judged by toolshift (`tests/tau2_cases.py`: judge
`tau2-evaluator`), and played in τ²-bench's own environment and scored by τ²'s
`evaluate_simulation` in its own venv (`tau2_reward_probe.py`). Reward, `db_match` and the whole
RewardInfo (action and communicate checks, breakdown, basis) must agree on every case. τ² judges NL
assertions with an LLM and none runs here: on the retail tasks that have them both sides leave that
factor out, and the probe says so per case.

By default a sample runs (`PER_KIND` = 1 case of each domain × kind, spread over the tasks, and every
case of airline tasks 4, 17 and 48); the whole set runs with

    TOOLSHIFT_TAU2_MUTATIONS=all .venv/bin/pytest -s -p no:cacheprovider tests/world/test_tau2_reward.py

and prints its figures (cases per kind, disagreements of Δ-cover and of our reward with τ²'s).
Skipped where no Python 3.12, no snapshot or no shared data exists.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from peers import SHARED, run_tau2
from tau2_mutations import KINDS, WRITES, all_cases, sample
from toolshift.world import load_domain
from toolshift.world.tau2.domains import tau2_world
from toolshift.world.tau2.evaluator import TOOL_TYPES

pytestmark = [pytest.mark.slow, pytest.mark.shared]

PROBE = Path(__file__).parent / "tau2_reward_probe.py"
PER_KIND = 1
ALWAYS = frozenset({"airline-4", "airline-17", "airline-48"})
"""Tasks where τ²'s evaluator gives 0 to sequences Δ-cover passes (issue 21)."""


def _skip_without_data() -> None:
    for name in ("tau2-airline", "tau2-retail"):
        why = tau2_world(name).unavailable()
        if why is not None:
            pytest.skip(f"{name} unavailable: {why}")


def chosen(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if os.environ.get("TOOLSHIFT_TAU2_MUTATIONS") == "all":
        return cases
    return sample(cases, PER_KIND, set(ALWAYS))


@pytest.fixture(scope="module")
def every_case() -> list[dict[str, Any]]:
    _skip_without_data()
    return all_cases(SHARED)


@pytest.fixture(scope="module")
def judged(every_case, tau2_python, tmp_path_factory) -> dict[str, Any]:
    """Each chosen case judged both ways: ours (episodes) and τ²'s (RewardInfo dumps)."""
    from tau2_cases import imported, play

    cases = chosen(every_case)
    folder = tmp_path_factory.mktemp("tau2-reward")
    (folder / "cases.json").write_text(json.dumps(cases))
    started = time.perf_counter()
    done = run_tau2(
        tau2_python, PROBE, str(SHARED), str(folder / "cases.json"), str(folder / "theirs.json"), timeout=7200
    )
    assert done.returncode == 0, done.stderr[-4000:]
    theirs = json.loads((folder / "theirs.json").read_text())
    tau2_seconds = time.perf_counter() - started
    started = time.perf_counter()
    ours = play(cases, imported({c["domain"] for c in cases}))
    return {
        "cases": cases,
        "ours": ours,
        "theirs": theirs,
        "seconds": {"tau2": round(tau2_seconds, 1), "ours": round(time.perf_counter() - started, 1)},
    }


def comparable(reward_info: dict[str, Any], nl_dropped: bool) -> dict[str, Any]:
    """A RewardInfo without what only one side can say: where τ² would ask an LLM, NL_ASSERTION's part."""
    out = json.loads(json.dumps(reward_info))
    info = out.get("info") or {}
    if nl_dropped:
        info.pop("nl", None)
        info.pop("unjudged", None)
        out["reward_basis"] = [b for b in out.get("reward_basis") or [] if b != "NL_ASSERTION"]
    out["info"] = info or None
    return out


def test_every_task_and_kind_has_cases(every_case):
    by_kind = Counter((c["domain"], c["kind"]) for c in every_case)
    assert len(every_case) >= 1500
    assert {k for _, k in by_kind} == set(KINDS)
    for domain, tasks in (("airline", 50), ("retail", 114)):
        per_task = Counter(c["task_id"] for c in every_case if c["domain"] == domain)
        assert len(per_task) == tasks and min(per_task.values()) >= 4


def test_our_reward_is_tau2s_on_every_case(judged):
    ours, theirs = judged["ours"], judged["theirs"]["cases"]
    before, after, db, whole = [], [], [], []
    for case in judged["cases"]:
        episode, tau2 = ours[case["id"]], theirs[case["id"]]
        outcome = episode.outcome
        assert outcome.judged_by == "tau2-reward", (case["id"], outcome.info)
        mine, other = outcome.info["reward_info"], tau2["reward_info"]
        if bool(outcome.info["delta_cover"]) != (other["reward"] == 1.0):
            before.append(case["id"])
        if outcome.reward != other["reward"]:
            after.append(case["id"])
        if (mine.get("db_check") or {}).get("db_match") != (other.get("db_check") or {}).get("db_match"):
            db.append(case["id"])
        if comparable(mine, tau2["nl_dropped"]) != comparable(other, tau2["nl_dropped"]):
            whole.append(case["id"])
    kinds = Counter(f"{c['domain']}:{c['kind']}" for c in judged["cases"])
    print(
        f"\nτ² reward agreement on {len(judged['cases'])} cases ({dict(sorted(kinds.items()))}): "
        f"Δ-cover disagrees on {len(before)}, our reward on {len(after)}, db_match on {len(db)}, "
        f"RewardInfo on {len(whole)}; seconds {judged['seconds']}, "
        f"NL left out on {sum(t['nl_dropped'] for t in theirs.values())}"
    )
    assert not after, f"reward differs from τ²'s on {len(after)} cases: {after[:10]}"
    assert not db, f"db_match differs from τ²'s on {len(db)} cases: {db[:10]}"
    first = whole[0] if whole else None
    assert not whole, (
        f"RewardInfo differs on {len(whole)} cases: {first}: ours {ours[first].outcome.info['reward_info']}, "
        f"τ² {theirs[first]['reward_info']}"
        if first
        else ""
    )
    # The cases reach what Δ-cover got wrong: τ² fails airline 4, 17 and 48 on sequences Δ-cover passes.
    wrongly_passed = {c["task_id"] for c in judged["cases"] if c["id"] in before and c["domain"] == "airline"}
    assert {"4", "17", "48"} <= wrongly_passed


def test_tool_types_are_tau2s(judged):
    for domain, types in judged["theirs"]["tool_types"].items():
        effects = {t.name: t.effect for t in load_domain(f"tau2-{domain}").tools}
        ours = {name: TOOL_TYPES.get(name) or effects[name] for name in effects}
        assert ours == types
        assert {n for n, t in types.items() if t == "write"} == WRITES[domain]
