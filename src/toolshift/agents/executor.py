"""One way for every command to run its episodes: in this process, in local worker processes, or on a Ray cluster.

A command describes its work as a `Job`: a picklable `spec` (what every episode needs: a build, a row's
settings, a loop's definition, with an `Asset` for each file or folder the workers read), a module-level
`open(spec)` that a worker process calls once per job (a build opened, a context planned; the embedded
model is loaded once per process, whatever the job), and a module-level `run(opened, item) -> str` that
runs one item (an episode, or an episode and its recording) and returns it as JSON. The command's own
process, the driver, is the only writer: `Executor.run` calls `on_result(item, text)` with each result as
it arrives, and `on_lost(item, lost)` for an item that could not be run (its worker process or node died
on every try, or it outlived its deadline). What stays on the driver — Steward's maintenance, learning
flows, evolution's selection — is whatever the command does between its calls to `run`.

    Executor("local")              the items in order, in this process
    Executor("local", workers=N)   N spawned processes, a round-robin share each (`toolshift.agents.workers`)
    Executor("ray", address=A)     one Ray task per item, placed by the driver on the live nodes, as many at
                                   once per node as it has CPUs; an item whose worker process or node died
                                   is tried again on another (`retries` times), then reported lost
                                   (`toolshift.agents.ray_executor`); without an address, a local cluster

A job's episodes are the same whichever executor runs them (each is seeded by its own id); only the order
they arrive in differs. Example (the shape every command follows; `issues` 53's methods call it the same way):

    executor = Executor.choose("ray", ray_address="auto")
    job = Job(open=open_row, run=run_row_episode, spec=RowSpec(build=executor.asset(build), ...))
    executor.run(job, todo, key=lambda item: item.id, on_result=lambda item, text: writer.write(...))
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolshift.agents.assets import Asset
from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.traces.episode import Episode, Outcome

EXECUTORS = ("local", "ray")
EXECUTOR_HELP = "local (this machine: --workers processes) or ray (a Ray cluster: --ray-address)."
RAY_ADDRESS_HELP = "The Ray cluster to run on (`auto`: the one this machine belongs to; none: a local one)."


@dataclass(frozen=True)
class Job:
    """A command's work for the workers: `open(spec)` once per worker process, `run(opened, item)` per item.

    `open` and `run` must be module-level functions (a spawned process or a Ray worker imports them by
    name); `spec` and every item must pickle. `name` labels the job in progress lines and Ray's dashboard.
    """

    open: Callable[[Any], Any]
    run: Callable[[Any, Any], str]
    spec: Any
    name: str = "episodes"


@dataclass(frozen=True)
class Lost:
    """Why an item has no result: its worker process or node died on each of `attempts` tries, or it
    outlived its deadline (`hung`)."""

    reason: str
    attempts: int
    seconds: float = 0.0
    hung: bool = False


@dataclass
class NodeCount:
    """One node's part of a run so far: results in, items in flight, items lost, items tried again."""

    done: int = 0
    in_flight: int = 0
    lost: int = 0
    retried: int = 0


NodeProgress = Callable[[dict[str, NodeCount]], None]
"""Called with every node's counts (by label) whenever one changes."""


@dataclass(frozen=True)
class Executor:
    """Where a command's episodes run. `workers`: local processes; on Ray each node runs as many at once as
    it has CPUs (set where the node is started: `ray start --num-cpus`), `max_in_flight` caps the total."""

    kind: str = "local"
    workers: int = 1
    address: str | None = None
    retries: int = 2
    """Ray: further tries of an item whose worker process or node died, before it is reported lost."""
    max_in_flight: int | None = None
    shipped: dict[str, tuple[Any, Asset]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def choose(cls, executor: str = "local", workers: int = 1, ray_address: str | None = None) -> Executor:
        """The executor a command's `--executor`, `--workers` and `--ray-address` name (bad values: exit 2)."""
        if executor not in EXECUTORS:
            raise BadInputError(f"unknown executor {executor!r}: use local or ray", field="executor")
        if workers < 1:
            raise BadInputError("--workers must be at least 1", field="workers")
        if ray_address and executor != "ray":
            raise BadInputError("--ray-address needs --executor ray", field="ray-address")
        return cls(executor, workers, ray_address or None)

    @property
    def is_ray(self) -> bool:
        return self.kind == "ray"

    def asset(self, path: str | Path) -> Asset:
        """A file or folder the workers will read. On Ray it is packed and put in the object store once per
        content (digest), and each node fetches it once; locally it is the path itself. Asked again for a
        path whose files are unchanged (names, sizes, modification times), the same asset, not packed again."""
        if not self.is_ray:
            return Asset(str(path))
        from toolshift.agents.assets import pack, stamp
        from toolshift.agents.ray_executor import ship

        key = str(Path(path).resolve())
        now = stamp(path)
        held = self.shipped.get(key)
        if held is not None and held[0] == now:
            return held[1]
        digest, data = pack(path)
        asset = (
            held[1]
            if held is not None and held[1].digest == digest
            else ship(path, digest, data, self.address)
        )
        self.shipped[key] = (now, asset)
        return asset

    def run(
        self,
        job: Job,
        items: Sequence[Any],
        *,
        key: Callable[[Any], str],
        on_result: Callable[[Any, str], None],
        on_lost: Callable[[Any, Lost], None] | None = None,
        progress: NodeProgress | None = None,
        deadline: float | None = None,
        throttle: Callable[[str], bool] | None = None,
    ) -> None:
        """Run `job` on every item; `on_result(item, text)` on the driver as each result arrives.

        `key(item)` names an item (in progress lines, Ray's dashboard and reasons; a result is accepted once
        per key). On Ray, `on_lost(item, lost)` for an item that could not be run (without it, a lost item
        stops the run); `deadline` abandons an item after that many seconds; `throttle(text)` True halves
        the number in flight (a result that met rate limits), which then grows back by one per result.
        """
        if not items:
            return
        if self.is_ray:
            from toolshift.agents.ray_executor import run_on_ray

            run_on_ray(self, job, items, key=key, on_result=on_result, on_lost=on_lost, progress=progress,
                       deadline=deadline, throttle=throttle)  # fmt: skip
            return
        counts = {"local": NodeCount(in_flight=min(self.workers, len(items)))}

        def arrived(item: Any, text: str) -> None:
            on_result(item, text)
            counts["local"].done += 1
            counts["local"].in_flight = min(self.workers, len(items) - counts["local"].done)
            if progress is not None:
                progress(counts)

        if progress is not None:
            progress(counts)
        if self.workers > 1 and len(items) > 1:
            from toolshift.agents.workers import run_in_workers, split_shares

            numbered = list(enumerate(items))
            shares = [(job, part) for part in split_shares(numbered, self.workers)]

            def emitted(text: str) -> None:
                index, result = json.loads(text)
                arrived(items[index], result)

            run_in_workers(_run_share, shares, emitted)
            return
        opened = job.open(job.spec)
        for item in items:
            arrived(item, job.run(opened, item))


def _run_share(share: tuple[Job, list[tuple[int, Any]]], emit: Callable[[str], None]) -> None:
    """A local worker process's share: the job opened once, each item run and sent back with its index."""
    job, numbered = share
    opened = job.open(job.spec)
    for index, item in numbered:
        emit(json.dumps([index, job.run(opened, item)]))


@functools.cache
def code_digest() -> str:
    """SHA-256 (16 hex) of this toolshift package's Python sources: a Ray worker whose code differs from
    the driver's refuses to run (install the same toolshift on every node)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def lost_episode(task: Task, *, episode_id: str, trial: int, agent_name: str, lost: Lost) -> Episode:
    """The record of an item the executor could not run: a `world_error` charged to the harness (left out
    of scores, as a hung episode is), with the reason and the tries in `outcome.info`."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    info = {
        "lost": lost.reason,
        "attempts": lost.attempts,
        "charged_to": "harness",
        "turns": 0,
        "tool_calls": 0,
    }
    return Episode(
        id=episode_id,
        task_id=task.id,
        trial=trial,
        domain=task.domain,
        agent=agent_name,
        model=agent_name,
        harness="toolshift.agents/1",
        termination_reason="timeout" if lost.hung else "world_error",
        outcome=Outcome(success=None, judged_by="delta-cover", info=info),
        start_time=now,
        end_time=now,
        duration=round(lost.seconds, 4),
        source={"task_fingerprint": task.fingerprint()},
    )


def node_lines(counts: dict[str, NodeCount]) -> dict[str, str]:
    """One progress line per node: `done · in flight · lost · retried`."""
    out = {}
    for label, c in counts.items():
        text = f"{label}: {c.done} done · {c.in_flight} in flight"
        text += f" · {c.lost} lost" if c.lost else ""
        text += f" · {c.retried} retried" if c.retried else ""
        out[label] = text
    return out


class NodeBars:
    """Draws a run's `NodeProgress` on a command's rich `Progress`: one line per node under its own bar
    (`fields`: the values the command's own columns read, for the node lines)."""

    def __init__(self, bar: Any, **fields: Any) -> None:
        self.bar = bar
        self.fields = fields
        self.rows: dict[str, Any] = {}

    def __call__(self, counts: dict[str, NodeCount]) -> None:
        for label, text in node_lines(counts).items():
            if label not in self.rows:
                self.rows[label] = self.bar.add_task(
                    text, total=None, completed=counts[label].done, **self.fields
                )
            else:
                self.bar.update(self.rows[label], description=text, completed=counts[label].done)


__all__ = [
    "EXECUTORS", "EXECUTOR_HELP", "RAY_ADDRESS_HELP", "Asset", "Executor", "Job", "Lost", "NodeBars",
    "NodeCount", "NodeProgress", "code_digest", "lost_episode", "node_lines",
]  # fmt: skip
