"""Deciding lookups ahead of the agent: an incremental session fed each call, returning lookups to make.

`Decider` compiles a flow once (per site, the read tools scoring >= θ, best first; per tool, where its
arguments come from). A `DecisionSession` per episode is then fed events — the agent's calls with their
results, other parties' calls, user messages, lookups' results — and answers each with the lookups to make
now: those scoring >= θ whose arguments bind from outputs seen so far, never a write, never one already
answered since the agent's last write. Each decision touches only the site's few tools, so it takes
microseconds; a live gateway can call it on every call.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolshift.flows.asks import asked, message_stems
from toolshift.flows.intent import NO_INTENT, IntentMatcher, intent_key
from toolshift.flows.model import ASK_SITE, START_SITE, USER_SITE, Flow, Walk
from toolshift.flows.named import named_state, said_tokens
from toolshift.flows.outputs import OutputIndex, PathKey, listing_rank, pick_unopened
from toolshift.flows.timeline import Catalog
from toolshift.flows.values import PathPlan, call_key, decode_output, is_value, path_plan, records_at
from toolshift.flows.words import WordsPicker, user_spans

if TYPE_CHECKING:
    from toolshift.flows.rule import Rule

DeciderKind = Literal["next-step", "reach"]
DECIDERS: tuple[DeciderKind, ...] = ("next-step", "reach")


@dataclass(frozen=True, slots=True)
class Lookup:
    """A lookup weighed at a site: the read to make, its bound arguments and its score."""

    tool: str
    arguments: dict[str, Any]
    key: str
    score: float
    """The probability of use the decision compared (the model's score, recalibrated when a rule says so)."""
    site: str
    raw: float = -1.0
    """The model's score (its chain prior included), before any recalibration; -1: the same as `score`."""
    bar: float = 0.0
    """The threshold this lookup was held to: θ, or its own price with a threshold per decision."""
    depth: int = 0
    """0 after an agent's call; 1 + its parent's after a lookup's result (a chain)."""
    position: int = 0
    """The agent's calls seen so far in the episode when it was weighed."""

    @property
    def model_score(self) -> float:
        return self.score if self.raw < 0 else self.raw


@dataclass(frozen=True, slots=True)
class _CompiledTool:
    tool: str
    bindings: tuple[tuple[str, PathKey], ...]
    lists: tuple[tuple[str, PathKey], ...]
    constants: tuple[tuple[str, Any], ...]
    chance: float
    walk: tuple[str, PathKey, Walk, float] | None = None
    """Format 3: the walk's argument, its path, the walk, and the chance of the other arguments."""
    words: str | None = None
    """Format 4: the argument a picker reads from the user's words."""
    record: tuple[RecordKey, tuple[str, ...]] | None = None
    """Format 5: where the record binding's records are held (source, path, fields) and its arguments."""
    fallbacks: dict[str, tuple[tuple[PathKey, float], ...]] | None = None
    """Format 5: per argument, further paths tried in order when its binding's is not in view, each with its
    chance over the binding's (the lookup's score is scaled by it)."""
    back: frozenset[str] = frozenset()
    """Format 6: the arguments bound from the output before the most recent one of their source."""


RecordKey = tuple[str, str, tuple[str, ...]]
"""(source tool, record path, the record's fields in the order of the arguments they give)."""


class Decider:
    """A flow compiled for one decider (`next-step` or `reach`) at one threshold θ, or with a `Rule`
    (toolshift.flows.rule): scores recalibrated per site, and one θ or a threshold per decision."""

    def __init__(self, flow: Flow, kind: DeciderKind = "reach", threshold: float = 0.3,
                 catalog: Catalog | None = None, picker: WordsPicker | None = None,
                 rule: Rule | None = None, reread: bool = True, intents: tuple[str, ...] = ()) -> None:  # fmt: skip
        if kind not in DECIDERS:
            raise ValueError(f"unknown decider {kind!r}: one of {DECIDERS}")
        if catalog is not None:
            flow.check_catalog(catalog)
        self.flow, self.kind, self.threshold = flow, kind, threshold
        self.rule = rule
        self.reread = reread if rule is None else rule.reread
        """False: never propose a read whose answer the agent already has in context (made, or delivered by a
        lookup, earlier in the episode), even after a write."""
        if rule is not None and rule.kind == "theta" and rule.calibrator is None:
            self.threshold, self.rule = rule.theta, None
        self.intents = IntentMatcher(rule.intent if rule is not None and rule.intent else intents)
        """Matches the user's words to the intent vocabulary (the session's `intent`; toolshift.flows.intent)."""
        self.picker = picker
        """Reads format-4 arguments from the user's words; without one those lookups are never made."""
        self.effects: dict[str, str] = dict(catalog.effects) if catalog is not None else {}
        self.ints = flow.ints
        """Format 5: integer leaves of outputs are values too (`Flow.ints`)."""
        self._tools: dict[str, _CompiledTool] = {}
        for name, tool in flow.tools.items():
            chance = tool.binding_chance()
            if chance <= 0.0:
                continue
            walk = None
            record_walk = (
                tool.record is not None
                and tool.walk is not None
                and tool.walk.argument == "+".join(sorted(tool.record.fields))
            )
            if tool.walk is not None and (record_walk or tool.walk.argument in tool.bindings):
                b = tool.record if record_walk else tool.bindings[tool.walk.argument]
                walk = (
                    tool.walk.argument,
                    (b.source, b.path),  # type: ignore[union-attr]
                    tool.walk,
                    tool.binding_chance(without=tool.walk.argument),
                )
            record = None
            if tool.record is not None:
                args = tuple(sorted(tool.record.fields))
                record = (
                    (tool.record.source, tool.record.path, tuple(tool.record.fields[a] for a in args)),
                    args,
                )
            self._tools[name] = _CompiledTool(
                tool=name,
                bindings=tuple((a, (b.source, b.path)) for a, b in sorted(tool.bindings.items())),
                lists=tuple((a, (b.source, b.path)) for a, b in sorted(tool.lists.items())),
                constants=tuple(sorted((a, c.value) for a, c in tool.constants.items())),
                chance=chance,
                walk=walk,
                words=tool.words.argument if tool.words is not None else None,
                record=record,
                fallbacks={
                    a: tuple(((f.source, f.path), f.chance / tool.bindings[a].chance) for f in alts)
                    for a, alts in sorted(tool.fallbacks.items())
                    if a in tool.bindings and alts
                }
                or None,
                back=frozenset(a for a, b in tool.bindings.items() if b.back),
            )
        self._walkers = tuple(c for c in self._tools.values() if c.walk is not None)
        self._named = any(c.walk[2].named for c in self._walkers if c.record is None)  # type: ignore[index]
        """Format 7: some walk counts the listings whose values the user named apart."""
        self._unnamed: dict[str, Walk] = {
            c.tool: Walk(argument=c.walk[0], sites=c.walk[2].unnamed, prior=c.walk[2].prior)
            for c in self._walkers
            if c.walk is not None and c.walk[2].unnamed
        }
        """Format 7: per walk tool, its walk over the decisions after a user message that named none of the
        listing's values, scoring such a decision where it saw the site and rank."""
        self._asks: tuple[tuple[tuple[str, ...], float, _CompiledTool], ...] = tuple(
            (tuple(ask.words), ask.chance(kind) * self._tools[name].chance, self._tools[name])
            for name, ask in sorted(flow.asks.items())
            if name in self._tools
        )
        """Format 6: per asked read, its ask words and its score when a user message asks for it."""
        read: dict[str, set[str]] = defaultdict(set)
        for c in self._tools.values():
            walked = (c.walk[:2],) if c.walk is not None and c.record is None else ()
            for _, (source, path) in (*c.bindings, *c.lists, *walked):
                read[source].add(path)
            for alts in (c.fallbacks or {}).values():
                for (source, path), _ in alts:
                    read[source].add(path)
        self._reads: dict[str, PathPlan] = {
            source: path_plan(frozenset(paths)) for source, paths in read.items()
        }
        """Per source tool, where the output paths some lookup binds from are (`path_plan`): a session
        indexes only these (D150), and decodes no output of a tool that is no lookup's source."""
        self._records: dict[str, tuple[RecordKey, ...]] = {}
        """Per source tool, the records some lookup binds together (format 5)."""
        for c in self._tools.values():
            if c.record is not None:
                key = c.record[0]
                if key not in self._records.get(key[0], ()):
                    self._records[key[0]] = (*self._records.get(key[0], ()), key)
        self._decoded = frozenset(self._reads) | frozenset(self._records)
        """The tools whose outputs a session reads (a binding's or a record's source)."""
        self._record_tools = {c.tool: c.record for c in self._tools.values() if c.record is not None}
        self._opens: dict[str, tuple[str, ...]] = {
            c.tool: tuple(sorted({a for a, _ in c.bindings} | ({c.walk[0]} if c.walk is not None else set())))
            for c in self._tools.values()
        }
        """Per lookup tool, the arguments whose passed values its binder skips (`pick_unopened`, a walk's
        rank): the only `opened` entries a session ever reads, so no other call's arguments are kept."""
        self._weighed: dict[str, tuple[tuple[float, _CompiledTool], ...]] = {}
        self._made: dict[str, tuple[tuple[float, _CompiledTool], ...]] = {}
        for site, habit in flow.sites.items():
            counts = habit.reach if kind == "reach" else habit.next
            scored = []
            for name, count in counts.items():
                compiled = self._tools.get(name)
                if compiled is None or habit.occurrences == 0 or compiled.walk is not None:
                    continue
                score = count / habit.occurrences * compiled.chance
                if score > 0:
                    scored.append((score, compiled))
            scored.sort(key=lambda sc: (-sc[0], sc[1].tool))
            self._weighed[site] = tuple(scored)
            self._made[site] = tuple(sc for sc in scored if sc[0] >= self.threshold)
        self._fallback: dict[tuple[str, str], float] = {}
        """Walk tools' format-2 scores per (site, tool), where a walk has no count for the site and rank."""
        for site, habit in flow.sites.items():
            counts = habit.reach if kind == "reach" else habit.next
            for compiled in self._walkers:
                count = counts.get(compiled.tool, 0)
                if count and habit.occurrences:
                    self._fallback[(site, compiled.tool)] = count / habit.occurrences * compiled.chance

    def walk_score(self, site: str, compiled: _CompiledTool, rank: int, unnamed: bool = False) -> float:
        """A walk tool's score at `site` with `rank` of the listing's values passed (before any chain prior);
        `unnamed`: the user spoke and named none of them (format 7: the walk's counts over such decisions)."""
        assert compiled.walk is not None
        chance = None
        if unnamed and compiled.tool in self._unnamed:
            chance = self._unnamed[compiled.tool].chance(site, rank, self.kind)
        if chance is None:
            chance = compiled.walk[2].chance(site, rank, self.kind)
        if chance is None:
            return self._fallback.get((site, compiled.tool), 0.0)
        return chance * compiled.walk[3]

    def named_score(self, site: str, compiled: _CompiledTool, state: int, rank: int) -> float:
        """A named walk's score at `site` in `state` (format 7), the walk's own where no named count applies."""
        assert compiled.walk is not None
        chance = compiled.walk[2].named_chance(site, state, self.kind)
        if chance is None:
            return self.walk_score(site, compiled, rank)
        return chance * compiled.walk[3]

    def session(self) -> DecisionSession:
        """A fresh per-episode state."""
        return DecisionSession(self)

    def candidates(self, site: str, *, weigh_all: bool = False) -> tuple[tuple[float, _CompiledTool], ...]:
        every = weigh_all or self.rule is not None
        return (self._weighed if every else self._made).get(site, ())

    def judge(
        self, tool: str, raw: float, depth: int, position: int, intent: str = ""
    ) -> tuple[float, float]:
        """(probability of use, the bar it must reach) for a lookup of `tool` with model score `raw`."""
        if self.rule is None:
            return raw, self.threshold
        return self.rule.probability(tool, depth, position, raw, intent), self.rule.bar(tool, position)


class DecisionSession:
    """One episode's state: the outputs seen, the values each argument was given, what is already answered."""

    __slots__ = ("answered", "asked", "decider", "index", "intent", "intent_words", "opened", "opened_records",
                 "picked", "position", "records", "said", "seen", "tokens")  # fmt: skip

    def __init__(self, decider: Decider) -> None:
        self.decider = decider
        self.index = OutputIndex()
        self.opened: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.records: dict[RecordKey, list[tuple[str, ...]]] = {}
        """Format 5: per record key, the records of the most recent output holding any."""
        self.opened_records: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
        """Per record-bound tool, the values passed together for its record's arguments."""
        self.answered: set[str] = set()
        self.said: list[str] = []
        self.picked: dict[tuple[str, str, int], str | None] = {}
        self.position = 0
        """The agent's calls seen so far (where a decision stands in the episode)."""
        self.seen: set[str] = set()
        """Every read the agent made or a lookup delivered in the episode (never cleared by a write)."""
        self.intent_words: frozenset[str] = frozenset()
        self.intent = ""
        """The intent words the user's messages matched so far (`intent_key`); "" before any user message."""
        self.asked: tuple[tuple[float, _CompiledTool], ...] = ()
        """Format 6: the reads the latest user message asks for by name, with their scores."""
        self.tokens: frozenset[str] = frozenset()
        """Format 7: the user's words so far a listing value can match (`toolshift.flows.named`), kept only
        for a flow with named walks."""

    # -- events ------------------------------------------------------------------------------

    def observe_call(self, tool: str, arguments: Mapping[str, Any], output: Any, *, effect: str,
                     by_agent: bool = True, key: str | None = None) -> None:  # fmt: skip
        """An agent's (or another party's) call and its decoded result. Only the agent's writes reset
        what counts as answered: other parties' writes do not stop a lookup."""
        if by_agent:
            self.position += 1
            if effect == "write":
                self.answered.clear()
            elif effect == "read" and tool in self.decider._tools:
                # Only a lookup's key is ever looked up in `answered` / `seen`: no other read's is kept.
                key = key or call_key(tool, dict(arguments))
                self.answered.add(key)
                self.seen.add(key)
            ints = self.decider.ints
            for name in self.decider._opens.get(tool, ()):
                value = arguments.get(name)
                if isinstance(value, str) or (ints and type(value) is int):
                    self.opened[(tool, name)].add(value)
            if tool in self.decider._record_tools:
                self._open_record(tool, arguments)
        self._index(tool, output)

    def _open_record(self, tool: str, arguments: Mapping[str, Any]) -> None:
        record = self.decider._record_tools.get(tool)
        if record is not None:
            self.opened_records[tool].add(tuple(arguments.get(a) for a in record[1]))

    def _index(self, tool: str, output: Any) -> None:
        reads = self.decider._reads.get(tool)
        if reads is not None:
            self.index.observe_within(tool, output, reads, self.decider.ints)
        keys = self.decider._records.get(tool)
        if keys is not None and output is not None:
            for key in keys:
                found = records_at(output, key[1], key[2])
                if found:
                    self.records[key] = found

    def observe_lookup(self, lookup: Lookup, output: Any) -> None:
        """A lookup was made and returned `output` (decoded)."""
        self.answered.add(lookup.key)
        self.seen.add(lookup.key)
        for name, value in lookup.arguments.items():
            if is_value(value, self.decider.ints):
                self.opened[(lookup.tool, name)].add(value)
        self._open_record(lookup.tool, lookup.arguments)
        self._index(lookup.tool, output)

    def observe_user(self, text: str) -> None:
        """A user message: what a picker reads format-4 arguments from."""
        if text:
            self.said.append(text)
            if self.decider._named:
                self.tokens |= said_tokens(text)
        if self.decider._asks:
            stems = message_stems(text)
            self.asked = tuple((score, c) for words, score, c in self.decider._asks if asked(words, stems))
        if self.decider.intents.vocabulary:
            self.intent_words |= self.decider.intents.matches(text)
            self.intent = intent_key(self.intent_words) if self.intent_words else NO_INTENT

    def note_made(self, lookup: Lookup) -> None:
        """Count a lookup as answered as soon as it is made, before its result arrives."""
        self.answered.add(lookup.key)

    # -- decisions ---------------------------------------------------------------------------

    def weigh(
        self, site: str, *, weigh_all: bool = False, prior: float = 1.0, depth: int = 0
    ) -> list[Lookup]:
        """The lookups at `site` whose arguments bind and that are not already answered, best first.

        Only those scoring >= θ, unless `weigh_all` (for logging every lookup weighed). After a lookup's
        own result, `prior` is that lookup's score: a lookup chained on one the agent may never make is
        only as likely as both (the agent's habit at a site holds only if the agent gets there).
        """
        out = []
        for base, compiled in self.decider.candidates(site, weigh_all=weigh_all):
            lookup = self._judged(compiled, base * prior, site, depth, weigh_all)
            if lookup is not None:
                out.append(lookup)
        if self.asked and site in (USER_SITE, ASK_SITE):
            out = self._weigh_asks(site, out, weigh_all=weigh_all)
        if self.decider._walkers:
            out = self._weigh_walks(site, out, weigh_all=weigh_all, prior=prior, depth=depth)
        return out

    def _judged(
        self,
        compiled: _CompiledTool,
        raw: float,
        site: str,
        depth: int,
        weigh_all: bool,
        pick: tuple[str, Any] | None = None,
    ) -> Lookup | None:
        """The lookup, if it reaches its bar (or `weigh_all`), binds and is not answered; `pick` (argument,
        value) overrides that argument's first-unopened value (a named walk's)."""
        if compiled.fallbacks is not None:  # bind first: a fallback path scales the score
            bound = self._bind(compiled, pick)
            if bound is None:
                return None
            raw *= bound[1]
            score, bar = self.decider.judge(compiled.tool, raw, depth, self.position, self.intent)
            if score < bar and not weigh_all:
                return None
            return self._lookup(compiled, bound[0], score, site, raw, bar, depth)
        score, bar = self.decider.judge(compiled.tool, raw, depth, self.position, self.intent)
        if score < bar and not weigh_all:
            return None
        return self._unanswered(compiled, score, site, raw=raw, bar=bar, depth=depth, pick=pick)

    def _unanswered(self, compiled: _CompiledTool, score: float, site: str, *, raw: float = -1.0,
                    bar: float = 0.0, depth: int = 0, pick: tuple[str, Any] | None = None) -> Lookup | None:  # fmt: skip
        """The lookup of `compiled` with arguments bound from outputs seen, unless unbound or answered."""
        bound = self._bind(compiled, pick)
        if bound is None:
            return None
        return self._lookup(compiled, bound[0], score, site, raw, bar, depth)

    def _lookup(self, compiled: _CompiledTool, arguments: dict[str, Any], score: float, site: str, raw: float,
                bar: float, depth: int) -> Lookup | None:  # fmt: skip
        """The lookup with these arguments, unless already answered (or, without re-reads, already seen)."""
        key = call_key(compiled.tool, arguments)
        if key in self.answered or (not self.decider.reread and key in self.seen):
            return None
        return Lookup(compiled.tool, arguments, key, score, site, raw, bar, depth, self.position)

    def _weigh_asks(self, site: str, out: list[Lookup], *, weigh_all: bool) -> list[Lookup]:
        """Add the reads the latest user message asks for (format 6); where the site's habit proposed the same
        read, the higher score stands."""
        have = {lk.key: n for n, lk in enumerate(out)}
        for score, compiled in self.asked:
            lookup = self._judged(compiled, score, site, 0, weigh_all)
            if lookup is None:
                continue
            if lookup.key not in have:
                have[lookup.key] = len(out)
                out.append(lookup)
            elif lookup.score > out[have[lookup.key]].score:
                out[have[lookup.key]] = lookup
        out.sort(key=lambda lk: (-lk.score, lk.tool))
        return out

    def _weigh_walks(self, site: str, out: list[Lookup], *, weigh_all: bool, prior: float,
                     depth: int = 0) -> list[Lookup]:  # fmt: skip
        """Add the walk tools' lookups, scored by the walk chance at this site and rank; best first."""
        latest = self.index.latest
        for compiled in self.decider._walkers:
            argument, path, _, _ = compiled.walk  # type: ignore[misc]
            if compiled.record is not None:  # a walk over the record binding's records (format 5)
                records = self.records.get(compiled.record[0])
                if not records:
                    continue
                done_records = self.opened_records.get(compiled.tool, frozenset())
                rank = sum(1 for r in records if r in done_records)
                state = None
            else:
                held = latest.get(path)
                if held is None:
                    continue
                done = self.opened.get((compiled.tool, argument), frozenset())
                rank = listing_rank(held[0], done)
                state = named_state(held[0], done, self.tokens) if self.tokens else None
            if state is not None:  # format 7: the user named values of this listing
                raw = self.decider.named_score(site, compiled, state[0], rank) * prior
                pick = (argument, state[1])
            else:
                raw = self.decider.walk_score(site, compiled, rank, bool(self.tokens)) * prior
                pick = None
            if raw <= 0.0:
                continue
            lookup = self._judged(compiled, raw, site, depth, weigh_all, pick)
            if lookup is not None:
                out.append(lookup)
        out.sort(key=lambda lk: (-lk.score, lk.tool))
        return out

    def propose(self, site: str, *, prior: float = 1.0, depth: int = 0) -> list[Lookup]:
        """The lookups to make now at `site` (each counted as answered from now on)."""
        lookups = self.weigh(site, prior=prior, depth=depth)
        for lookup in lookups:
            self.answered.add(lookup.key)
        return lookups

    def after_call(self, tool: str, arguments: Mapping[str, Any], output_text: str | None) -> list[Lookup]:
        """Live use: the agent called `tool` and got `output_text`; which lookups to make now."""
        output = (
            decode_output(output_text, self.decider.flow.results) if tool in self.decider._decoded else None
        )
        return self.after_call_value(tool, arguments, output)

    def after_call_value(self, tool: str, arguments: Mapping[str, Any], output: Any) -> list[Lookup]:
        """`after_call` for a caller that holds the result as data already: `output` is the value
        `decode_output` gives for the result text (the decoded JSON, else the text; None for none)."""
        # Without a catalog, a tool the flow does not know is taken to write: the safe side for lookups.
        effect = self.decider.effects.get(tool) or ("read" if tool in self.decider.flow.tools else "write")
        self.observe_call(tool, arguments, output, effect=effect)
        return self.propose(tool)

    def after_lookup(self, lookup: Lookup, output_text: str | None) -> list[Lookup]:
        """Live use: a lookup returned `output_text`; which further lookups to make now (a chain)."""
        self.observe_lookup(
            lookup,
            decode_output(output_text, self.decider.flow.results)
            if lookup.tool in self.decider._decoded
            else None,
        )
        return self.propose(lookup.tool, prior=lookup.model_score, depth=lookup.depth + 1)

    def start(self) -> list[Lookup]:
        return self.propose(START_SITE)

    def after_user(self, text: str = "") -> list[Lookup]:
        """A user message: the lookups the user-message habit and (format 6) the reads it asks for propose."""
        self.observe_user(text)
        return self.propose(USER_SITE)

    def _bind(self, compiled: _CompiledTool,
              pick: tuple[str, Any] | None = None) -> tuple[dict[str, Any], float] | None:  # fmt: skip
        """The arguments bound from the outputs seen, and the factor fallback paths scale the score by (1 when
        every binding's own path was in view); None when an argument cannot be bound."""
        arguments: dict[str, Any] = {}
        factor = 1.0
        latest, previous = self.index.latest, self.index.previous
        for name, key in compiled.bindings:
            held = (previous if name in compiled.back else latest).get(key)
            if held is None:
                for alt, ratio in (compiled.fallbacks or {}).get(name, ()):
                    held = latest.get(alt)
                    if held is not None:
                        factor *= ratio
                        break
                else:
                    return None
            if pick is not None and pick[0] == name:
                arguments[name] = pick[1]
                continue
            arguments[name] = pick_unopened(held[0], self.opened.get((compiled.tool, name), frozenset()))
        for name, key in compiled.lists:
            held = latest.get(key)
            if held is None:
                return None
            arguments[name] = list(held[0])
        if compiled.record is not None:
            key, names = compiled.record
            records = self.records.get(key)
            if not records:
                return None
            done = self.opened_records.get(compiled.tool, ())
            pick = next((r for r in records if r not in done), records[0])
            arguments.update(zip(names, pick, strict=True))
        for name, value in compiled.constants:
            arguments.setdefault(name, value)
        if compiled.words is not None:
            value = self._read_words(compiled.tool, compiled.words)
            if value is None:
                return None
            arguments[compiled.words] = value
        return arguments, factor

    def _read_words(self, tool: str, argument: str) -> str | None:
        """The picker's value for `argument` from what the user said so far (asked once per message)."""
        picker = self.decider.picker
        if picker is None or not self.said:
            return None
        key = (tool, argument, len(self.said))
        if key not in self.picked:
            words = "\n".join(self.said)
            self.picked[key] = picker.pick(words, tool, argument, user_spans(words))
        return self.picked[key]
