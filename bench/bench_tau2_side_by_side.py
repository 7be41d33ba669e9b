"""Benchmark: oracle replay of the 50 τ-bench airline test tasks on our airline world against τ²-bench's and τ-bench v1's harnesses.

One run measures, one after another on the same machine:

- ours: per task, the world restored to its initial state, the task's gold calls, and the reward
  (the net row changes equal the task's Δgold); each figure the mean of two replays;
- τ²-bench (its venv, `tests/peers.py`): per task a fresh environment, τ²'s Orchestrator with a
  scripted gold agent and a scripted user, and τ²'s `evaluate_simulation` (`bench/tau_harness_probe.py`);
  its airline `db.json`, absent from the snapshot, is rebuilt from τ-bench's files into a temporary
  TAU2_DATA_DIR (τ²'s own data files are linked beside it);
- τ-bench v1, when a checkout of sierra-research/tau-bench is given (`--taubench DIR`; this project
  neither ships nor builds it): per task a fresh `MockAirlineDomainEnv`, the gold actions, `calculate_reward`.

τ²'s 50 airline tasks are its revision of τ-bench's 50 test tasks (not the same in the same order),
so ours is timed on τ²'s tasks against τ²-bench and on τ-bench's (their gold actions as v1's probe
dumps them, as data) against τ-bench v1. Rewards must agree task by task. Wall seconds and CPU seconds of the replay loops are reported with their ratios;
on a loaded machine the CPU ratio is the steadier one. Also: oracle replay episodes/s per τ² world.

Run: `.venv/bin/python bench/bench_tau2_side_by_side.py [--taubench DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolshift.models import RowChange
from toolshift.report.benchlog import record
from toolshift.world import World, load_domain
from toolshift.world.tau2.airline import tau2_database
from toolshift.world.tau2.tasks import import_tasks
from toolshift.world.world import compose_changes

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import peers  # noqa: E402  (tests/peers.py: where τ²-bench's Python is)

PROBE = REPO / "bench" / "tau_harness_probe.py"


def _key(c: RowChange) -> tuple[str, str, str, str, str, str]:
    return (c.table, c.key, c.field, c.op, repr(c.before), repr(c.after))


Replayable = tuple[str, list[tuple[str, dict[str, Any]]], list[RowChange]]
"""A task as the oracle replays it: id, gold calls, Δgold."""


def from_tasks(tasks: list[Any]) -> list[Replayable]:
    return [(t.id, [(c.tool, c.arguments) for c in t.gold_path], t.expected_changes) for t in tasks]


def from_taubench(world_name: str, actions: dict[str, list[list[Any]]]) -> tuple[list[Replayable], int]:
    """τ-bench v1's test tasks (their gold actions, as its probe dumped them) with Δgold from one untimed replay.

    Also returns how many of those gold calls fail on our world (v1 and τ² differ in places).
    """
    world = World(load_domain(world_name))
    initial = world.snapshot()
    out: list[Replayable] = []
    failing = 0
    for task_id, calls in actions.items():
        world.restore(initial)
        changes: list[RowChange] = []
        for name, arguments in calls:
            res = world.call(name, arguments)
            failing += not res.ok
            changes += res.changes
        out.append((task_id, [(n, a) for n, a in calls], compose_changes(changes)))
    initial.close()
    world.close()
    return out, failing


def oracle_replay(world_name: str, tasks: list[Replayable]) -> dict[str, Any]:
    """Per task: restore, gold calls, reward 1.0 when the net changes are exactly the task's Δgold."""
    world = World(load_domain(world_name))
    initial = world.snapshot()
    rewards: dict[str, float] = {}
    started, cpu = time.perf_counter(), time.process_time()
    for task_id, calls, expected in tasks:
        world.restore(initial)
        changes: list[RowChange] = []
        for name, arguments in calls:
            changes += world.call(name, arguments).changes
        same = sorted(map(_key, compose_changes(changes))) == sorted(map(_key, expected))
        rewards[task_id] = 1.0 if same else 0.0
    out = {"rewards": rewards, "total": time.perf_counter() - started, "cpu": time.process_time() - cpu}
    initial.close()
    world.close()
    return out


def tau2_data_dir(folder: Path) -> Path:
    """τ²'s data folder with the airline db.json rebuilt from τ-bench's files (the rest linked, not copied)."""
    domains = peers.TAU2_PEER / "data" / "tau2" / "domains"
    target = folder / "tau2" / "domains"
    target.mkdir(parents=True)
    for d in domains.iterdir():
        if d.name != "airline":
            (target / d.name).symlink_to(d)
    (target / "airline").mkdir()
    for f in (domains / "airline").iterdir():
        (target / "airline" / f.name).symlink_to(f)
    (target / "airline" / "db.json").write_text(json.dumps(tau2_database()))
    return folder


def run_probe(python: Path, args: list[str], data_dir: Path | None) -> dict[str, Any]:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    env = peers.tau2_env()
    if data_dir is not None:
        env["TAU2_DATA_DIR"] = str(data_dir)
    done = subprocess.run(
        [str(python), str(PROBE), *args, str(out)], env=env, cwd=str(python.parents[1]), capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} probe failed:\n{done.stderr[-3000:]}")
    result = json.loads(out.read_text())
    out.unlink()
    return result


def _mean(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float]:
    if a["rewards"] != b["rewards"]:
        raise SystemExit("our two replays gave different rewards")
    return (a["total"] + b["total"]) / 2, (a["cpu"] + b["cpu"]) / 2


def _same_rewards(name: str, ours: dict[str, float], theirs: dict[str, float]) -> None:
    if ours != theirs:
        differ = {
            k: (ours.get(k), theirs.get(k))
            for k in ours.keys() | theirs.keys()
            if ours.get(k) != theirs.get(k)
        }
        raise SystemExit(f"rewards differ from {name}'s: {differ}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taubench", type=Path, help="A checkout of sierra-research/tau-bench (τ-bench v1).")
    args = parser.parse_args()
    why = peers.tau2_unavailable()
    if why is not None:
        print(f"τ²-bench unavailable: {why}; nothing recorded")
        return
    python = peers.ensure_tau2_venv()
    airline = from_tasks(import_tasks("tau2-airline").tasks)
    retail = from_tasks(import_tasks("tau2-retail").tasks)
    n = len(airline)

    ours_before = oracle_replay("tau2-airline", airline)
    with tempfile.TemporaryDirectory() as tmp:
        theirs = run_probe(python, ["tau2"], tau2_data_dir(Path(tmp)))
    ours_after = oracle_replay("tau2-airline", airline)
    ours_wall, ours_cpu = _mean(ours_before, ours_after)
    _same_rewards("τ²-bench", ours_before["rewards"], theirs["rewards"])
    mean = sum(ours_before["rewards"].values()) / n
    rows = [
        ("τ²'s airline tasks; mean reward ours = τ²-bench's", f"{n}; {mean:.2f}", "same rewards"),
        ("ours: replay loop, wall / CPU", f"{ours_wall:.2f} s / {ours_cpu:.2f} s ({ours_wall / n * 1000:.0f} ms per task)",
         ""),
        ("τ²-bench gold replay (Orchestrator + evaluate_simulation), wall / CPU",
         f"{theirs['total']:.1f} s / {theirs['cpu']:.1f} s ({theirs['total'] / n:.2f} s per task; "
         f"imports {theirs['imports']:.1f} s apart)", ""),
        ("ours faster than τ²-bench: wall / CPU", f"{theirs['total'] / ours_wall:.0f}× / {theirs['cpu'] / ours_cpu:.0f}×",
         "≥ 20×"),
    ]  # fmt: skip
    if args.taubench is not None:
        v1 = run_probe(python, ["taubench", str(args.taubench.resolve())], None)
        v1_tasks, failing = from_taubench("tau2-airline", v1["actions"])
        first = oracle_replay("tau2-airline", v1_tasks)
        second = oracle_replay("tau2-airline", v1_tasks)
        v1_wall, v1_cpu = _mean(first, second)
        _same_rewards("τ-bench v1", first["rewards"], v1["rewards"])
        gold = [[[name, arguments] for name, arguments in calls] for _, calls, _ in airline]
        in_tau2 = sum(1 for calls in v1["actions"].values() if calls in gold)
        m = len(v1_tasks)
        rows += [
            ("τ-bench v1's airline test tasks; mean reward ours = v1's",
             f"{m}; {sum(first['rewards'].values()) / m:.2f} ({failing} of their gold calls fail on our "
             f"τ²-faithful world; {in_tau2} of the {m} have their gold actions unchanged among τ²'s tasks)",
             "same rewards"),
            ("ours on v1's tasks: replay loop, wall / CPU", f"{v1_wall:.2f} s / {v1_cpu:.2f} s", ""),
            ("τ-bench v1 (fresh env, env.step gold actions, calculate_reward), wall / CPU",
             f"{v1['total']:.1f} s / {v1['cpu']:.1f} s ({v1['total'] / m:.2f} s per task)", ""),
            ("ours faster than τ-bench v1: wall / CPU", f"{v1['total'] / v1_wall:.0f}× / {v1['cpu'] / v1_cpu:.0f}×",
             "≥ 20×"),
        ]  # fmt: skip
    else:
        rows.append(("τ-bench v1", "not measured (no --taubench checkout given)", ""))
    retail_run = oracle_replay("tau2-retail", retail)
    for name, run, tasks in (("tau2-airline", ours_before, airline), ("tau2-retail", retail_run, retail)):
        ok = sum(run["rewards"].values())
        rows.append(
            (f"oracle replay episodes/s, {name} ({len(tasks)} τ² tasks)", f"{len(tasks) / run['total']:.1f} "
             f"(reward 1.0 on {ok:.0f})", "")
        )  # fmt: skip
    record(
        "τ² worlds: oracle replay side by side with τ²-bench and τ-bench v1 (airline)",
        rows,
        note="Command: `.venv/bin/python bench/bench_tau2_side_by_side.py --taubench DIR` (DIR: a checkout of "
        "sierra-research/tau-bench, brought beside the project, not part of it). One run, harnesses one after "
        "another; each of our figures is the mean of two replays. Loops only: each harness's imports and first "
        "environment are timed apart. τ²'s 50 airline tasks are its revision of τ-bench's 50 test tasks, so "
        "each peer is compared on its own tasks. τ²'s data: its snapshot, with the airline db.json rebuilt "
        "from τ-bench's files.",
    )
    print(f"load average now: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
