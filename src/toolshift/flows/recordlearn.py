"""Record bindings learned (flow format 5): a read's arguments bound together to the fields of one record.

`learn_records` finds, per read with two or more required string arguments, the objects of earlier outputs that
held two or more of a call's values, and counts by the binder's rule (the first record not yet passed together)
how often one gave the agent's own values; kept where that beats binding each argument on its own
(`toolshift.flows.model.RecordBinding`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from toolshift.flows.model import RecordBinding, ToolFlow
from toolshift.flows.timeline import Catalog, OtherCallsEvent, Timeline, TurnEvent
from toolshift.flows.values import record_paths, records_at


def _turn_calls(timeline: Timeline):
    """Yield (call, outputs) for each agent call, `outputs` the latest output of each tool seen before its turn;
    the calls of a turn are yielded before their outputs are taken in."""
    latest: dict[str, Any] = {}
    for event in timeline.events:
        if isinstance(event, TurnEvent):
            turn = timeline.turns[event.turn]
            for i in turn:
                yield timeline.calls[i], latest
            for i in turn:
                if timeline.calls[i].output is not None:
                    latest[timeline.calls[i].tool] = timeline.calls[i].output
        elif isinstance(event, OtherCallsEvent):
            for i in event.calls:
                if timeline.calls[i].output is not None:
                    latest[timeline.calls[i].tool] = timeline.calls[i].output


RecordKey = tuple[str, str, tuple[tuple[str, str], ...]]
"""(source tool, record path, ((argument, field), ...) sorted by argument)."""


def _string_required(call_arguments: dict[str, Any], required: Sequence[str]) -> dict[str, str]:
    return {a: v for a in required if isinstance(v := call_arguments.get(a), str)}


def _others(tool: ToolFlow, required: Sequence[str], fields: dict[str, str]) -> float:
    """The chance of a tool's required arguments outside `fields`, each bound on its own (0 if one is unbound)."""
    chance = 1.0
    for argument in required:
        if argument not in fields:
            chance *= tool.bindings[argument].chance if argument in tool.bindings else 0.0
    return chance


def learn_records(
    timelines: Sequence[Timeline],
    catalog: Catalog,
    tools: dict[str, ToolFlow],
    weights: Mapping[str, int | float] | None = None,
) -> dict[str, RecordBinding]:
    """Format 5: per read with two or more required string arguments, the record binding (the fields of one
    object of an earlier output, bound together) that gives the agent's own values most often; kept where
    its chance beats the product of those arguments' own binding chances."""
    wanted = {name: [a for a in tool.required if a not in tool.constants] for name, tool in tools.items()}
    wanted = {name: args for name, args in wanted.items() if len(args) >= 2}
    if not wanted:
        return {}
    candidates: dict[str, set[RecordKey]] = defaultdict(set)
    for timeline in timelines:
        cache: dict[int, list[tuple[str, dict[str, str]]]] = {}
        for call, latest in _turn_calls(timeline):
            if not call.by_agent or call.tool not in wanted or not catalog.is_read(call.tool):
                continue
            values = _string_required(call.arguments, wanted[call.tool])
            if len(values) < 2:
                continue
            for source, output in latest.items():
                objects = cache.get(id(output))
                if objects is None:
                    objects = cache[id(output)] = record_paths(output)
                for path, strings in objects:
                    mapping = []
                    for argument, value in values.items():
                        key = next((k for k, v in strings.items() if v == value), None)
                        if key is not None:
                            mapping.append((argument, key))
                    if len(mapping) >= 2:
                        candidates[call.tool].add((source, path, tuple(sorted(mapping))))
    agree: Counter[tuple[str, RecordKey]] = Counter()
    seen: Counter[tuple[str, RecordKey]] = Counter()
    for timeline in timelines:
        w = weights.get(timeline.episode_id, 1) if weights else 1
        held: dict[RecordKey, list[tuple[str, ...]]] = {}
        opened: dict[tuple[str, RecordKey], set[tuple[str, ...]]] = defaultdict(set)
        for event in timeline.events:
            indices = (
                timeline.turns[event.turn] if isinstance(event, TurnEvent)
                else event.calls if isinstance(event, OtherCallsEvent) else ()
            )  # fmt: skip
            if isinstance(event, TurnEvent):
                for i in indices:
                    call = timeline.calls[i]
                    for key in candidates.get(call.tool, ()):
                        mine = tuple(call.arguments.get(a) for a, _ in key[2])
                        records = held.get(key)
                        if records and call.by_agent and catalog.is_read(call.tool):
                            seen[(call.tool, key)] += w
                            done = opened[(call.tool, key)]
                            pick = next((r for r in records if r not in done), records[0])
                            agree[(call.tool, key)] += w * (pick == mine)
                        if all(isinstance(v, str) for v in mine):
                            opened[(call.tool, key)].add(mine)  # type: ignore[arg-type]
            for i in indices:
                call = timeline.calls[i]
                if call.output is None:
                    continue
                for keys in candidates.values():
                    for key in keys:
                        if key[0] == call.tool:
                            records = records_at(call.output, key[1], tuple(f for _, f in key[2]))
                            if records:
                                held[key] = records
    out = {}
    for name, keys in candidates.items():
        tool = tools[name]
        best, best_chance = None, tool.binding_chance()
        for key in sorted(keys):
            b = RecordBinding(source=key[0], path=key[1], fields=dict(key[2]), agree=agree[(name, key)],
                              n=seen[(name, key)])  # fmt: skip
            chance = b.chance * _others(tool, wanted[name], b.fields)
            if b.agree and chance > best_chance:
                best, best_chance = b, chance
        if best is not None:
            out[name] = best
    return out
