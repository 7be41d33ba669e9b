"""Benchmark: a full oracle episode on our τ² airline world against τ²-bench's, and an environment replay against τ-bench v1's, interleaved task by task.

Each ratio compares the same unit of work on the same task, the two sides alternating in one run
(bench/paired.py: A, B, A, B …; p50/p50 and p90/p90; load at start and end):

- a full oracle episode. Ours: `run_episode` — a fresh world behind in-memory MCP, the agent loop with
  the oracle policy (the task's gold calls), the scripted user, and the judge. τ²-bench's (its venv,
  `tests/peers.py`; `bench/tau_harness_probe.py tau2` as a server): a fresh environment, its
  Orchestrator with a scripted gold agent and a scripted user, and `evaluate_simulation`. τ²'s airline
  `db.json`, absent from the snapshot, is rebuilt from τ-bench's files into a temporary TAU2_DATA_DIR.
- an environment replay, when a checkout of sierra-research/tau-bench is given (`--taubench DIR`; this
  project neither ships nor builds it). τ-bench v1's harness has no scripted agent loop, so the unit is
  the environment's: per task, v1 builds a fresh `MockAirlineDomainEnv`, steps the gold actions and calls
  `calculate_reward`; ours restores the world's initial state, makes the gold calls with `World.call` and
  compares the net row changes with Δgold.

Rewards must agree task by task. Our bare `World.call` replay of τ²'s tasks is reported too, as what it
is (no agent loop, user or MCP); it is never divided by an episode.

Run: `.venv/bin/python bench/bench_tau2_side_by_side.py [--rounds N] [--limit N] [--taubench DIR]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from paired import Paired, Sample, interleave, measure, percentile
from toolshift.agents.loop import run_episode
from toolshift.agents.policies import oracle
from toolshift.agents.users import ScriptedUser, user_for_task
from toolshift.agents.worlds import world_opener
from toolshift.models import RowChange, Task
from toolshift.report.benchlog import record
from toolshift.world import World, load_domain
from toolshift.world.state.world import compose_changes
from toolshift.world.tau2.airline import tau2_database
from toolshift.world.tau2.tasks import import_tasks

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import peers  # noqa: E402  (tests/peers.py: where τ²-bench's Python is)

PROBE = REPO / "bench" / "tau_harness_probe.py"
EPISODE = "full oracle episode"
REPLAY = "environment replay"


def _key(c: RowChange) -> tuple[str, str, str, str, str, str]:
    return (c.table, c.key, c.field, c.op, repr(c.before), repr(c.after))


Replayable = tuple[str, list[tuple[str, dict[str, Any]]], list[RowChange]]
"""A task as the bare replay runs it: id, gold calls, Δgold."""


class Replayer:
    """Our environment replay: restore the initial state, the gold calls through `World.call`, Δ compared with Δgold."""

    def __init__(self, world_name: str) -> None:
        self.world = World(load_domain(world_name))
        self.initial = self.world.snapshot()
        self.rewards: dict[str, float] = {}

    def __call__(self, task: Replayable) -> None:
        task_id, calls, expected = task
        self.world.restore(self.initial)
        changes: list[RowChange] = []
        for name, arguments in calls:
            changes += self.world.call(name, arguments).changes
        same = sorted(map(_key, compose_changes(changes))) == sorted(map(_key, expected))
        self.rewards[task_id] = 1.0 if same else 0.0

    def close(self) -> None:
        self.initial.close()
        self.world.close()


class Episodes:
    """Our full oracle episode: fresh world over in-memory MCP, agent loop (oracle policy), scripted user, judge."""

    def __init__(self, world_name: str) -> None:
        self.opener = world_opener(world_name)
        self.runner = asyncio.Runner()
        self.rewards: dict[str, float] = {}

    def __call__(self, task: Task) -> None:
        user = user_for_task(task) or ScriptedUser(task.public_request, task.instruction)
        episode = self.runner.run(
            run_episode(task, oracle(task), user, self.opener, episode_id=f"bench:{task.id}")
        )
        self.rewards[task.id] = 1.0 if episode.outcome is not None and episode.outcome.success else 0.0

    def close(self) -> None:
        self.runner.close()


class Probe:
    """A peer harness served by `tau_harness_probe.py` in τ²-bench's venv: one episode per task id sent."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.rewards: dict[str, float] = {}
        self.ready = self._line()

    def _line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the harness probe stopped (exit {self.proc.wait()}); its stderr is above")
        return json.loads(line)

    def __call__(self, task_id: str) -> Sample:
        assert self.proc.stdin is not None
        self.proc.stdin.write(task_id + "\n")
        self.proc.stdin.flush()
        answer = self._line()
        self.rewards[task_id] = float(answer["reward"])
        return Sample(wall=answer["wall"], cpu=answer["cpu"])


@contextmanager
def probe(python: Path, args: list[str], data_dir: Path | None, log: IO[str]) -> Iterator[Probe]:
    env = peers.tau2_env()
    if data_dir is not None:
        env["TAU2_DATA_DIR"] = str(data_dir)
    proc = subprocess.Popen(
        [str(python), str(PROBE), *args], env=env, cwd=str(python.parents[1]), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=log, text=True,
    )  # fmt: skip
    try:
        yield Probe(proc)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=60)


@contextmanager
def harness_log() -> Iterator[IO[str]]:
    """A file for a peer harness's stderr; its tail is shown when the pairing ends (or the harness stops)."""
    with tempfile.TemporaryFile("w+") as log:
        try:
            yield log
        finally:
            log.seek(0)
            sys.stderr.write(log.read()[-3000:])


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


def from_taubench(world_name: str, actions: dict[str, list[list[Any]]]) -> tuple[list[Replayable], int]:
    """τ-bench v1's test tasks (their gold actions, as its probe reports them) with Δgold from one untimed replay.

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


def same_rewards(name: str, ours: dict[str, float], theirs: dict[str, float]) -> None:
    if ours != theirs:
        differ = {
            k: (ours.get(k), theirs.get(k))
            for k in ours.keys() | theirs.keys()
            if ours.get(k) != theirs.get(k)
        }
        raise SystemExit(f"rewards differ from {name}'s: {differ}")


def spread(values: list[float]) -> str:
    return f"{1000 * percentile(values, 0.5):.1f} / {1000 * percentile(values, 0.9):.1f} ms"


def tau2_episodes(python: Path, tasks: list[Task], rounds: int, log: IO[str]) -> tuple[Paired, float]:
    """Our full oracle episode and τ²-bench's, interleaved task by task; also τ²-bench's import seconds."""
    ours = Episodes("tau2-airline")
    with (
        tempfile.TemporaryDirectory() as tmp,
        probe(python, ["tau2"], tau2_data_dir(Path(tmp)), log) as theirs,
    ):
        ours(tasks[0]), theirs(tasks[0].id)  # warm-up, untimed: first calls build caches on both sides
        run = interleave(ours, lambda t: theirs(t.id), tasks, rounds=rounds, names=("toolshift", "τ²-bench"))
    ours.close()
    same_rewards("τ²-bench", ours.rewards, theirs.rewards)
    return run, theirs.ready["imports"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="passes over the tasks (default 1)")
    parser.add_argument("--limit", type=int, help="only the first N airline tasks of each peer")
    parser.add_argument("--taubench", type=Path, help="A checkout of sierra-research/tau-bench (τ-bench v1).")
    args = parser.parse_args()
    why = peers.tau2_unavailable()
    if why is not None:
        print(f"τ²-bench unavailable: {why}; nothing recorded")
        return
    python = peers.ensure_tau2_venv()
    tasks = import_tasks("tau2-airline").tasks[: args.limit]
    n = len(tasks)
    with harness_log() as log:
        episodes, imports = tau2_episodes(python, tasks, args.rounds, log)
    rows = [
        (f"τ²'s airline tasks × rounds; {EPISODE} rewards ours = τ²-bench's", f"{n} × {args.rounds}; equal on every task", "same rewards"),
        *episodes.rows(f"{EPISODE} per task", clocks=("wall", "cpu")),
    ]  # fmt: skip
    notes = [f"{EPISODE.capitalize()}: toolshift's `run_episode` (fresh world over in-memory MCP, agent loop with the "
             "oracle policy, scripted user, judge) against τ²-bench's fresh environment, Orchestrator (scripted gold "
             "agent, scripted user) and `evaluate_simulation`, one task at a time; τ²'s CPU is its own process's. "
             f"τ²-bench's imports and first environment took {imports:.1f} s, outside the pairs. "
             + episodes.note()]  # fmt: skip
    if args.taubench is not None:
        with harness_log() as log:
            with probe(python, ["taubench", str(args.taubench.resolve())], None, log) as v1:
                v1_tasks, failing = from_taubench("tau2-airline", v1.ready["tasks"])
                v1_tasks = v1_tasks[: args.limit]
                ours_v1 = Replayer("tau2-airline")
                ours_v1(v1_tasks[0]), v1(v1_tasks[0][0])
                replay = interleave(ours_v1, lambda t: v1(t[0]), v1_tasks, rounds=args.rounds,
                                    names=("toolshift", "τ-bench v1"))  # fmt: skip
                ours_v1.close()
            same_rewards("τ-bench v1", ours_v1.rewards, v1.rewards)
        m = len(v1_tasks)
        rows += [
            (f"τ-bench v1's airline test tasks × rounds; {REPLAY} rewards ours = v1's",
             f"{m} × {args.rounds}; mean {sum(v1.rewards.values()) / m:.2f}, equal on every task ({failing} of "
             "their gold calls fail on our τ²-faithful world)", "same rewards"),
            *replay.rows(f"{REPLAY} per task (v1's tasks)", clocks=("wall", "cpu")),
        ]  # fmt: skip
        notes.append(f"{REPLAY.capitalize()}: our restore + `World.call` gold calls + Δ compared with Δgold, against "
                     "τ-bench v1's fresh `MockAirlineDomainEnv`, `env.step` gold actions and `calculate_reward`. "
                     + replay.note())  # fmt: skip
    else:
        rows.append(("τ-bench v1", "not measured (no --taubench checkout given)", ""))
    for name in ("tau2-airline", "tau2-retail"):
        bare = Replayer(name)
        ts = from_tasks(import_tasks(name).tasks)
        bare(ts[0])
        walls = [s.wall for s in measure(bare, ts)]
        bare.close()
        ok = sum(bare.rewards.values())
        rows.append(
            (f"{name}: bare World.call replay per τ² task (restore, gold calls, Δ compare; no agent loop, user or "
             f"MCP; not divided by any episode), wall p50 / p90", f"{spread(walls)} ({len(ts)} tasks, "
             f"reward 1.0 on {ok:.0f})", "")
        )  # fmt: skip
    record(
        "τ² worlds: full oracle episode vs τ²-bench, environment replay vs τ-bench v1 (airline), interleaved",
        rows,
        note="Command: `.venv/bin/python bench/bench_tau2_side_by_side.py "
        f"--rounds {args.rounds}{' --taubench DIR' if args.taubench else ''}` (DIR: a checkout of "
        "sierra-research/tau-bench, not part of the project). τ²'s 50 airline tasks are its revision of τ-bench's "
        "50 test tasks, so each peer is compared on its own tasks. " + " ".join(notes),
    )


def from_tasks(tasks: list[Task]) -> list[Replayable]:
    return [(t.id, [(c.tool, c.arguments) for c in t.gold_path], t.expected_changes) for t in tasks]


if __name__ == "__main__":
    main()
