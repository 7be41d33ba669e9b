"""Learn a flow from episodes: the habit at each site, and for each read tool how to bind its arguments."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from toolshift.errors import BadInputError
from toolshift.flows.asks import learn_asks
from toolshift.flows.habits import _habits
from toolshift.flows.model import (
    Bare,
    Binding,
    Constant,
    Flow,
    LearnedFrom,
    RankCount,
    RecordBinding,
    ToolFlow,
    Walk,
    Weighting,
    WordsBinding,
)
from toolshift.flows.named import learn_named
from toolshift.flows.outputs import OutputIndex, listing_rank, pick_unopened
from toolshift.flows.recordlearn import learn_records
from toolshift.flows.timeline import Catalog, OtherCallsEvent, Timeline, TurnEvent, Unlisted, UserEvent
from toolshift.flows.values import canonical, is_value, records_at, scalar_tokens
from toolshift.flows.weights import agent_shares, episode_weights

REQUIRED_SHARE = 0.9
MAX_FALLBACKS = 2
"""Fallback sources kept per argument (format 5, `ToolFlow.fallbacks`)."""


def constant_value_allowed(value: Any) -> bool:
    """A constant is never a string with a digit or an '@' (an id or an email a user named), nor a container."""
    if isinstance(value, str):
        return not any(ch.isdigit() for ch in value) and "@" not in value
    return isinstance(value, bool | int | float)


@dataclass
class _ToolStats:
    calls: int | float = 0
    """The agent's calls, each counted by its episode's weight (`toolshift.flows.weights`)."""
    raw_calls: int = 0
    raw_present: Counter[str] = field(default_factory=Counter)
    """Calls and arguments counted once each (a constant is an argument passed in every call, however weighed)."""
    present: Counter[str] = field(default_factory=Counter)
    values: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    first_value: dict[str, Any] = field(default_factory=dict)
    kinds: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    arg_sets: list[tuple[frozenset[tuple[str, str]], int | float]] = field(default_factory=list)


def _kind(value: Any, ints: bool = False) -> str:
    """ "string" for a value a binding passes as one (a string; with `ints`, an integer too), "list", "other"."""
    if is_value(value, ints):
        return "string"
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "list"
    return "other"


def _repr(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


def _walk_calls(timeline: Timeline, ints: bool = False):
    """Yield (index, call, opened) for each agent call, with the outputs seen before its turn in `index`."""
    index = OutputIndex()
    opened: dict[tuple[str, str], set[Any]] = defaultdict(set)
    for event in timeline.events:
        if isinstance(event, TurnEvent):
            turn = timeline.turns[event.turn]
            for i in turn:
                call = timeline.calls[i]
                yield index, call, opened
                for name, value in call.arguments.items():
                    if is_value(value, ints):
                        opened[(call.tool, name)].add(value)
            for i in turn:
                index.observe(timeline.calls[i].tool, timeline.calls[i].output, ints=ints)
        elif isinstance(event, OtherCallsEvent):
            for i in event.calls:
                index.observe(timeline.calls[i].tool, timeline.calls[i].output, ints=ints)


def record_walk_name(record: RecordBinding) -> str:
    """The `Walk.argument` of a walk over a record binding's records: its arguments joined by `+`."""
    return "+".join(sorted(record.fields))


def _take(index: OutputIndex, records: dict[str, tuple[tuple[str, ...], str, str, tuple[str, ...]]],
          held: dict[str, list[tuple[str, ...]]], ints: bool, call: Any) -> None:  # fmt: skip
    """Take in one call's output: the string paths a walk binds from, and the records a record walk walks."""
    index.observe(call.tool, call.output, track_holders=False, ints=ints)
    for name, (_, source, path, fields) in records.items():
        if call.tool == source and call.output is not None:
            found = records_at(call.output, path, fields)
            if found:
                held[name] = found


def walk_argument(tool: ToolFlow) -> str | None:
    """The argument a walk scores: the record binding's records where the tool has one (format 5), else the
    string binding at a `[*]` path with the highest chance (then name)."""
    if tool.record is not None:
        return record_walk_name(tool.record)
    best = None
    for name, binding in sorted(tool.bindings.items()):
        if (
            "[*]" in binding.path
            and not binding.back
            and (best is None or binding.chance > tool.bindings[best].chance)
        ):
            best = name
    return best


def _walks(
    timelines: Sequence[Timeline],
    tools: dict[str, ToolFlow],
    ranks: int,
    ints: bool = False,
    weights: Mapping[str, int | float] | None = None,
) -> dict[str, Walk]:
    """For each tool with a `[*]` binding: per site and rank, how often the walk's next value was the agent's."""
    walkers = {}
    records: dict[str, tuple[tuple[str, ...], str, str, tuple[str, ...]]] = {}
    """Record walks: tool → (its record's arguments, source, path, the fields giving them)."""
    for name, tool in tools.items():
        argument = walk_argument(tool)
        if argument is None or tool.unbound:
            continue
        if tool.record is not None:
            args = tuple(sorted(tool.record.fields))
            records[name] = (
                args,
                tool.record.source,
                tool.record.path,
                tuple(tool.record.fields[a] for a in args),
            )
            walkers[name] = (argument, (tool.record.source, tool.record.path))
        else:
            b = tool.bindings[argument]
            walkers[name] = (argument, (b.source, b.path))
    counts: dict[str, dict[str, list[list[int | float]]]] = {name: {} for name in walkers}
    for timeline in timelines:
        w = weights.get(timeline.episode_id, 1) if weights else 1
        calls = timeline.calls
        index = OutputIndex()
        opened: dict[tuple[str, str], set[Any]] = defaultdict(set)
        held_records: dict[str, list[tuple[str, ...]]] = {}
        opened_records: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
        take = partial(_take, index, records, held_records, ints)
        events = timeline.events
        for position, event in enumerate(events):
            if isinstance(event, OtherCallsEvent):
                for i in event.calls:
                    take(calls[i])
                continue
            if not isinstance(event, TurnEvent) or not timeline.turns[event.turn]:
                continue
            turn = timeline.turns[event.turn]
            for i in turn:
                for arg, value in calls[i].arguments.items():
                    if is_value(value, ints):
                        opened[(calls[i].tool, arg)].add(value)
                if calls[i].tool in records:
                    opened_records[calls[i].tool].add(
                        tuple(calls[i].arguments.get(a) for a in records[calls[i].tool][0])
                    )
                take(calls[i])
            last = turn[-1]
            limit = timeline.next_agent_write[last]
            following = timeline.next_turn_call(position)
            for name, (argument, key) in walkers.items():
                if name in records:
                    listing = held_records.get(name)
                    if not listing:
                        continue
                    args = records[name][0]
                    passed = opened_records[name]
                    pick = next((r for r in listing if r not in passed), listing[0])
                    rank = min(sum(1 for r in listing if r in passed), ranks - 1)

                    def agent_value(call: Any, args: tuple[str, ...] = args) -> Any:
                        return tuple(call.arguments.get(a) for a in args)
                else:
                    held = index.latest.get(key)
                    if held is None:
                        continue
                    done = opened[(name, argument)]
                    pick = pick_unopened(held[0], done)
                    rank = min(listing_rank(held[0], done), ranks - 1)

                    def agent_value(call: Any, argument: str = argument) -> Any:
                        return call.arguments.get(argument)

                reached = any(
                    agent_value(calls[j]) == pick
                    for j in timeline.agent_calls_by_tool.get(name, ())
                    if last < j < limit
                )
                nxt = following is not None and following.tool == name and agent_value(following) == pick
                for i in turn:
                    row = counts[name].setdefault(calls[i].tool, [[0, 0, 0] for _ in range(ranks)])
                    row[rank][0] += w
                    row[rank][1] += w * nxt
                    row[rank][2] += w * reached
    return {
        name: Walk(
            argument=walkers[name][0],
            sites={
                site: [RankCount(n=n, next=x, reach=r) for n, x, r in row]
                for site, row in sorted(sites.items())
            },
        )
        for name, sites in counts.items()
        if sites
    }


def _words_counts(
    timelines: Sequence[Timeline],
    catalog: Catalog,
    tools: dict[str, ToolFlow],
    weights: Mapping[str, int | float] | None = None,
) -> Counter[tuple[str, str]]:
    """Per (read tool, argument): the agent's calls whose only argument not bound from a result or a constant
    was this one, with a string value the user had written (case-insensitively)."""
    counts: Counter[tuple[str, str]] = Counter()
    for timeline in timelines:
        w = weights.get(timeline.episode_id, 1) if weights else 1
        results: set[str] = set()
        words = ""
        for event in timeline.events:
            if isinstance(event, UserEvent):
                words += "\n" + event.text.lower()
                continue
            indices = (
                event.calls if isinstance(event, OtherCallsEvent)
                else timeline.turns[event.turn] if isinstance(event, TurnEvent) else ()
            )  # fmt: skip
            for i in indices:
                call = timeline.calls[i]
                flow_tool = tools.get(call.tool)
                if call.by_agent and flow_tool is not None and catalog.is_read(call.tool):
                    loose = [
                        (name, value)
                        for name, value in call.arguments.items()
                        if name not in flow_tool.bindings and name not in flow_tool.lists
                        and (flow_tool.record is None or name not in flow_tool.record.fields)
                        and name not in flow_tool.constants and canonical(value) not in results
                    ]  # fmt: skip
                    value = loose[0][1] if len(loose) == 1 else None
                    if isinstance(value, str) and value.strip() and value.lower() in words:
                        counts[(call.tool, loose[0][0])] += w
            for i in indices:
                results |= scalar_tokens(timeline.calls[i].output)
    return counts


def learn_flow(
    timelines: Iterable[Timeline],
    catalog: Catalog,
    *,
    learn_from_all: bool = False,
    constants: bool = False,
    flow_format: Literal[1, 2, 3, 4, 5, 6, 7, 8] | None = None,
    unlisted: Unlisted | None = None,
    source: str = "episodes",
    count_bare: bool = True,
    walk_ranks: int = 0,
    words: bool = False,
    walk_prior: float = 0.0,
    records: bool = False,
    ints: bool = False,
    fallbacks: bool = False,
    asks: bool = False,
    older: bool = False,
    named: bool = False,
    weighting: Weighting = "episodes",
) -> Flow:
    """Fit the habit on successful runs (every run with `learn_from_all`) and learn each read's bindings.

    `flow_format` 1 leaves list bindings out; None writes 2 only when the flow has list bindings.
    `count_bare=False` drops the bare-call count (only to show what it prevents: searches made with no filter).
    `walk_ranks` > 0 learns walks (format 3) with that many rank buckets (the last: that rank or more);
    `walk_prior` is their pooled prior's strength (`Walk.prior`; 0: Laplace).
    `words` learns, per read, the one argument the agent took from the user's words (format 4), which a
    picker (`toolshift.flows.words`) reads when the lookup is decided.
    `records` binds a read's arguments together from one record of an earlier output where that agrees with
    the agent more often than binding each on its own (format 5, `RecordBinding`). `ints` also binds integer
    arguments to integer leaves of earlier outputs, as strings are (an order's or a ticket's id; format 5,
    `Flow.ints`). `fallbacks` keeps, per bound argument, up to two further sources the agent's values also
    came from, tried in order when the binding's is not in view (format 5, `ToolFlow.fallbacks`). `asks`
    learns the reads the user asks for by name, decided after each user message (format 6, `Flow.asks`);
    `older` also binds a string argument to the output before the most recent one of its source where that
    agrees more often (the first of two cities looked up in turn; format 6, `Binding.back`). `named` counts
    walks apart where the user's messages named values of the listing (format 7, `toolshift.flows.named`).
    `weighting` weighs the episodes (`toolshift.flows.weights`): with `tasks` or `agents` every count is a sum of
    weights, the flow is format 8, and its provenance gives each agent's share (`LearnedFrom.by_agent`).
    """
    if walk_ranks < 0:
        raise BadInputError(f"walk ranks is 0 (no walks) or more, not {walk_ranks}", field="walk_ranks")
    if walk_prior < 0:
        raise BadInputError(f"a walk prior is 0 or more, not {walk_prior}", field="walk_prior")
    if weighting != "episodes" and flow_format not in (None, 8):
        raise BadInputError(f"a flow weighing its episodes ({weighting}) is format 8, not {flow_format}",
                            field="format")  # fmt: skip
    ints = ints and flow_format in (None, 5, 6, 7, 8)
    fallbacks = fallbacks and flow_format in (None, 5, 6, 7, 8)
    chosen = [t for t in timelines if learn_from_all or t.success]
    if not chosen:
        raise BadInputError(
            "empty training set: no " + ("" if learn_from_all else "successful ") + "episode to learn from"
            + ("" if learn_from_all else " (pass --learn-from-all to learn from every run)"),
            source=source,
        )  # fmt: skip
    weights = episode_weights(chosen, weighting)
    stats: dict[str, _ToolStats] = defaultdict(_ToolStats)
    for timeline in chosen:
        w = weights[timeline.episode_id]
        for call in timeline.calls:
            if not call.by_agent or not catalog.is_read(call.tool):
                continue
            s = stats[call.tool]
            s.calls += w
            s.raw_calls += 1
            for name, value in call.arguments.items():
                s.present[name] += w
                s.raw_present[name] += 1
                s.values[name].add(_repr(value))
                s.first_value.setdefault(name, value)
                s.kinds[name][_kind(value, ints)] += w
            s.arg_sets.append((frozenset((k, _repr(v)) for k, v in call.arguments.items()), w))

    required: dict[str, list[str]] = {}
    learned_constants: dict[str, dict[str, Constant]] = {}
    for tool, s in stats.items():
        required[tool] = sorted(a for a, n in s.present.items() if n >= REQUIRED_SHARE * s.calls - 1e-9)
        consts = {}
        if constants and s.raw_calls >= 2:
            for name, n in s.raw_present.items():
                value = s.first_value[name]
                if n == s.raw_calls and len(s.values[name]) == 1 and constant_value_allowed(value):
                    consts[name] = Constant(value=value, calls=s.present[name])
        learned_constants[tool] = consts

    # Pass 1: which (tool, path) held each argument's value in an earlier output.
    # A candidate is (source, path, back): back 1 (format 6, `older`) is the output before the most recent one.
    candidates: dict[tuple[str, str], set[tuple[str, str, int]]] = defaultdict(set)
    older = older and flow_format in (None, 6, 7, 8)
    for timeline in chosen:
        for index, call, _ in _walk_calls(timeline, ints):
            if not catalog.is_read(call.tool):
                continue
            for name in required.get(call.tool, ()):
                value = call.arguments.get(name)
                kind = _kind(value, ints)
                if kind == "string":
                    candidates[(call.tool, name)].update((*k, 0) for k in index.holding(value))
                    if older:
                        candidates[(call.tool, name)].update((*k, 1) for k in index.holding_previous(value))
                elif kind == "list" and flow_format != 1:
                    candidates[(call.tool, name)].update((*k, 0) for k in index.holding_all(value))

    # Pass 2: how often each candidate path, by the binder's rule, gave the agent's own value.
    agree: Counter[tuple[str, str, tuple[str, str, int]]] = Counter()
    seen: Counter[tuple[str, str, tuple[str, str, int]]] = Counter()
    for timeline in chosen:
        w = weights[timeline.episode_id]
        for index, call, opened in _walk_calls(timeline, ints):
            if not catalog.is_read(call.tool):
                continue
            for name in required.get(call.tool, ()):
                keys = candidates.get((call.tool, name))
                if not keys:
                    continue
                value = call.arguments.get(name)
                kind = _kind(value, ints)
                for key in keys:
                    held = (index.previous if key[2] else index.latest).get(key[:2])
                    if held is None:
                        continue
                    seen[(call.tool, name, key)] += w
                    if kind == "string":
                        ok = pick_unopened(held[0], opened[(call.tool, name)]) == value
                    elif kind == "list":
                        ok = Counter(held[0]) == Counter(value)
                    else:
                        ok = False
                    if ok:
                        agree[(call.tool, name, key)] += w

    tools: dict[str, ToolFlow] = {}
    has_lists = has_fallbacks = False
    for tool in sorted(stats):
        s = stats[tool]
        consts = learned_constants[tool]
        flow_tool = ToolFlow(calls=s.calls, required=required[tool], constants=consts)
        for name in required[tool]:
            list_arg = s.kinds[name].most_common(1)[0][0] == "list"
            best: Binding | None = None
            for key in sorted(candidates.get((tool, name), ())):
                n = seen[(tool, name, key)]
                b = Binding(source=key[0], path=key[1], agree=agree[(tool, name, key)], n=n, back=key[2])
                if best is None or (b.chance, b.agree) > (best.chance, best.agree):
                    best = b
            if name in consts:
                continue
            if best is not None and best.agree > 0:
                if list_arg:
                    flow_tool.lists[name] = best
                    has_lists = True
                else:
                    flow_tool.bindings[name] = best
                    if fallbacks:
                        alts = [
                            Binding(
                                source=k[0], path=k[1], agree=agree[(tool, name, k)], n=seen[(tool, name, k)]
                            )
                            for k in sorted(candidates.get((tool, name), ()))
                            if k[:2] != (best.source, best.path) and not k[2] and agree[(tool, name, k)] > 0
                        ]
                        alts.sort(key=lambda b: (-b.chance, -b.agree, b.source, b.path))
                        if alts[:MAX_FALLBACKS]:
                            flow_tool.fallbacks[name] = alts[:MAX_FALLBACKS]
                            has_fallbacks = True
            else:
                flow_tool.unbound.append(name)
        if count_bare and not required[tool] and s.present:
            constant_set = {(k, _repr(c.value)) for k, c in consts.items()}
            bare = sum(w for args, w in s.arg_sets if args <= constant_set)
            if bare < s.calls:
                flow_tool.bare = Bare(bare=bare, calls=s.calls)
        tools[tool] = flow_tool

    has_records = False
    if records and flow_format in (None, 5, 6, 7, 8):
        for name, record in learn_records(chosen, catalog, tools, weights).items():
            tool = tools[name]
            tool.record = record
            for argument in record.fields:
                tool.bindings.pop(argument, None)
                tool.fallbacks.pop(argument, None)
                if argument in tool.unbound:
                    tool.unbound.remove(argument)
            has_records = True
    has_walks = False
    if walk_ranks and flow_format in (None, 3, 5, 6, 7, 8):
        for name, walk in _walks(chosen, tools, walk_ranks, ints, weights).items():
            tools[name].walk = walk.model_copy(update={"prior": walk_prior}) if walk_prior else walk
            has_walks = True
    has_named = False
    if named and has_walks and flow_format in (None, 7, 8):
        named_counts, unnamed = learn_named(chosen, tools, ints, weights)
        for name, sites in named_counts.items():
            update = {"named": sites, "unnamed": unnamed.get(name, {})}
            tools[name].walk = tools[name].walk.model_copy(update=update)  # type: ignore[union-attr]
            has_named = True
    has_words = False
    if words and flow_format in (None, 4, 5, 6, 7, 8):
        counts = _words_counts(chosen, catalog, tools, weights)
        for name, tool in tools.items():
            found = [(n, arg) for (t, arg), n in counts.items() if t == name]
            if not found:
                continue
            agree, argument = max(found, key=lambda na: (na[0], na[1]))
            tool.words = WordsBinding(argument=argument, agree=agree, n=tool.calls)
            if argument in tool.unbound:
                tool.unbound.remove(argument)
            has_words = True
    learned_asks = (
        learn_asks(chosen, catalog, tools, weights) if asks and flow_format in (None, 6, 7, 8) else {}
    )
    fmt: Literal[1, 2, 3, 4, 5, 6, 7, 8] = (
        flow_format
        if flow_format is not None
        else (
            8
            if weighting != "episodes"
            else 7
            if has_named
            else 6
            if learned_asks or any(b.back for t in tools.values() for b in t.bindings.values())
            else 5
            if has_records or ints or has_fallbacks
            else 4
            if has_words
            else 3
            if has_walks
            else 2
            if has_lists
            else 1
        )
    )
    return Flow(
        format=fmt,
        ints=ints,
        domain=catalog.domain,
        catalog=catalog.fingerprint(),
        results=catalog.results,
        learned_from=LearnedFrom(
            episodes=len(chosen),
            tasks=len({t.task_id for t in chosen}),
            agents=sorted({t.agent for t in chosen}),
            successful_only=not learn_from_all,
            constants=constants,
            unlisted=dict(unlisted.by_tool) if unlisted else {},
            weighting=weighting,
            by_agent=agent_shares(chosen, weights) if weighting != "episodes" else {},
        ),
        sites=_habits(chosen, catalog, weights),
        tools=tools,
        asks=learned_asks,
    )
