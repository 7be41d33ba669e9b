"""Capability checks on gold inputs: a new implementation must do what its source did, call for call.

For a sample (a task and a block of its gold path), the world is brought to the state just before
the block (fresh snapshot + the gold prefix), then the source implementation and the new one each
run the block from that same state. The transformation passes when both succeed, their row changes
are identical, and the new outputs decode (through the declared format change) to exactly the
source's outputs.
"""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolshift.bench.ecosystem.catalog import Impl
from toolshift.models import RowChange, Task
from toolshift.world.state.compiler import CompiledDomain
from toolshift.world.state.tools import Tool
from toolshift.world.state.world import Snapshot, World, compose_changes

MAX_CACHED_STATES = 48


def canonical(value: Any) -> str:
    """Strict JSON form for comparing outputs (12 and 12.0 differ, key order does not)."""
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True)
class GoldSample:
    """Functions `start:end` of a task's gold path."""

    task: Task
    start: int
    end: int


@dataclass
class PlanRun:
    ok: bool
    results: list[Any] = field(default_factory=list)
    changes: list[RowChange] = field(default_factory=list)
    error: str = ""


@dataclass
class CheckResult:
    ok: bool
    reason: str = ""
    samples: int = 0


class Verifier:
    """Runs plans of implementations from gold states of one domain's tasks."""

    def __init__(self, domain: CompiledDomain, tasks: Sequence[Task], base_tools: Mapping[str, Tool]) -> None:
        self.world = World(domain)
        self.fresh: Snapshot = self.world.snapshot()
        self.base_tools = dict(base_tools)
        self.tasks = [t for t in tasks if len(t.gold_path) == len(t.base_functions) and t.gold_path]
        self._states: OrderedDict[tuple[str, int], Snapshot] = OrderedDict()

    def occurrences(self, covers: Sequence[str]) -> list[GoldSample]:
        """Every place the block `covers` occurs consecutively in a task's base function sequence."""
        w = len(covers)
        target = list(covers)
        return [
            GoldSample(t, i, i + w)
            for t in self.tasks
            for i in range(len(t.base_functions) - w + 1)
            if t.base_functions[i : i + w] == target
        ]

    def samples(self, covers: Sequence[str], limit: int, rng: random.Random) -> list[GoldSample]:
        found = self.occurrences(covers)
        rng.shuffle(found)
        return found[:limit]

    def state_before(self, sample: GoldSample) -> Snapshot:
        """The world state just before the sample's block (cached, most recent first)."""
        key = (sample.task.id, sample.start)
        snap = self._states.get(key)
        if snap is not None:
            self._states.move_to_end(key)
            return snap
        self.world.restore(self.fresh)
        self.world.set_tools(self.base_tools.values())
        for call in sample.task.gold_path[: sample.start]:
            self.world.call(call.tool, dict(call.arguments))
        snap = self.world.snapshot()
        self._states[key] = snap
        if len(self._states) > MAX_CACHED_STATES:
            _, old = self._states.popitem(last=False)
            old.close()
        return snap

    def run(
        self, tools: Mapping[str, Tool], impl: Impl, sample: GoldSample, *, restore: bool = True
    ) -> PlanRun:
        """Run `impl`'s plan for the sample's block with catalog `tools`, from the state before the block
        (`restore`), or on from the current state (the later parts of a merge)."""
        if restore:
            self.world.restore(self.state_before(sample))
        self.world.set_tools(tools.values())
        block = sample.task.gold_path[sample.start : sample.end]
        out = PlanRun(ok=True)
        changes: list[RowChange] = []
        for name, args in impl.plan(block):
            r = self.world.call(name, args)
            if not r.ok:
                return PlanRun(ok=False, error=f"{name}: {r.error}")
            out.results.append(r.result)
            changes += r.changes
        out.changes = compose_changes(changes)
        return out

    def check(
        self,
        before: Mapping[str, Tool],
        sources: Sequence[Impl],
        after: Mapping[str, Tool],
        new: Impl,
        samples: Sequence[GoldSample],
    ) -> CheckResult:
        """Does `new` (in catalog `after`) preserve capability, state change and output of `sources` (in `before`)?"""
        if not samples:
            return CheckResult(False, "no gold inputs: the block occurs in no validated gold trajectory")
        checked = 0
        for sample in samples:
            src_results: list[Any] = []
            src_changes: list[RowChange] = []
            at = sample.start
            failed = ""
            for part in sources:
                part_sample = GoldSample(sample.task, at, at + len(part.covers))
                run = self.run(before, part, part_sample, restore=part is sources[0])
                if not run.ok:
                    failed = run.error
                    break
                src_results += part.decode(run.results)
                src_changes += run.changes
                at += len(part.covers)
            if failed:
                continue  # the source itself cannot run here: not a usable gold input
            src_net = compose_changes(src_changes)
            new_run = self.run(after, new, sample)
            where = f"task {sample.task.id} calls {sample.start}..{sample.end - 1}"
            if not new_run.ok:
                return CheckResult(False, f"capability lost on {where}: {new_run.error}", checked)
            if canonical([c.model_dump() for c in new_run.changes]) != canonical(
                [c.model_dump() for c in src_net]
            ):
                return CheckResult(False, f"state change differs on {where}", checked)
            try:
                decoded = new.decode(new_run.results)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                return CheckResult(False, f"output cannot be decoded on {where}: {exc!r}", checked)
            if canonical(decoded) != canonical(src_results):
                return CheckResult(False, f"output differs after decoding on {where}", checked)
            checked += 1
        if not checked:
            return CheckResult(False, "the source fails on every sampled gold input", 0)
        return CheckResult(True, "", checked)
