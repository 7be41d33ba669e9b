"""The flow file: a learned habit per site and a binding per lookup, versioned (1; 2 with lists; 3 with walks;
4 with arguments read from the user's words; 5 with arguments bound together from one record; 6 with reads the
user asks for by name).

Counts are stored, not chances, so a reader can see how much evidence each number rests on; the chances
are derived on load. A reader refuses a format it does not know, and a flow learned for another domain or
tool catalog, rather than silently making fewer (or other) lookups than the flow was learned to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic
from toolshift.flows.timeline import Catalog
from toolshift.flows.values import VALUE_PATH
from toolshift.traces.result_values import ResultForm

FLOW_KIND = "toolshift.flow"
KNOWN_FORMATS = (1, 2, 3, 4, 5, 6, 7, 8)
START_SITE = "<start>"
USER_SITE = "<user>"
ASK_SITE = "<asked>"
"""Where a replay without user-message sites weighs only the reads a user message asks for (format 6)."""


def _count(value: int | float) -> int | float:
    """A count: not negative; a whole number is an int (so an unweighted flow reads and writes as before)."""
    if value < 0 or value != value or value == float("inf"):  # negative, NaN or infinite
        raise ValueError("a count is a finite number of at least 0")
    if isinstance(value, float):
        value = round(value, 9)  # a sum of weights: its last bits are rounding, not evidence
    return int(value) if float(value).is_integer() else float(value)


Count = Annotated[int | float, AfterValidator(_count)]
"""How often something happened in training: a whole number, or with episodes weighted by agent (format 8,
`LearnedFrom.weighting`) a sum of weights."""
COUNT_KEYS = frozenset({"occurrences", "next", "reach", "agree", "n", "calls", "bare", "messages"})
"""The keys of a flow file that hold counts (a site's `next`/`reach` hold one per read)."""


def _within(parts: Any, whole: float, part_name: str, whole_name: str) -> None:
    """A flow's counts are of the same events: a part larger than its whole is a corrupt file (weighted sums
    are compared with a rounding tolerance)."""
    if any(part > whole + 1e-9 * max(1.0, whole) for part in parts):
        raise ValueError(f"{part_name} exceeds {whole_name} ({whole})")


class SiteHabit(BaseModel):
    """At one site: how often it occurred, and per read tool how often it was the agent's next call
    (`next`) and how often it was called before the agent's next write (`reach`)."""

    model_config = ConfigDict(extra="forbid")

    occurrences: Count
    next: dict[str, Count] = Field(default_factory=dict)
    reach: dict[str, Count] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _parts_within_whole(self) -> SiteHabit:
        for kind, counts in (("next", self.next), ("reach", self.reach)):
            _within(counts.values(), self.occurrences, f"a {kind} count", "occurrences")
        return self


class Binding(BaseModel):
    """An argument bound to a path of an earlier output of `source`, and how often it agreed in training."""

    model_config = ConfigDict(extra="forbid")

    source: str
    path: str = Field(pattern=VALUE_PATH, max_length=1000)
    """`$`, then `.key` (a key that is not empty and holds no `[` or `]`) or `[*]` per step, as `string_paths`
    writes it; any other text could never match an output, so a flow carrying one is refused at load."""
    agree: Count
    n: Count
    back: int = Field(default=0, ge=0, le=1)
    """Format 6: 1 binds from the output before the most recent one of `source` holding `path` (the first of
    two cities looked up in turn); 0 (absent in every earlier file) from the most recent."""

    @model_validator(mode="after")
    def _parts_within_whole(self) -> Binding:
        _within([self.agree], self.n, "agree", "n")
        return self

    @property
    def chance(self) -> float:
        return (self.agree + 1) / (self.n + 2)


class Constant(BaseModel):
    """An argument the agent passed with one value every time (learned with `--constants`)."""

    model_config = ConfigDict(extra="forbid")

    value: Any
    calls: Count


class Bare(BaseModel):
    """A lookup with no required argument that the agent sometimes called with one: calls that passed none."""

    model_config = ConfigDict(extra="forbid")

    bare: Count
    calls: Count

    @model_validator(mode="after")
    def _parts_within_whole(self) -> Bare:
        _within([self.bare], self.calls, "bare", "calls")
        return self

    @property
    def chance(self) -> float:
        return (self.bare + 1) / (self.calls + 2)


class WordsBinding(BaseModel):
    """Format 4: one argument the agent took from the user's words (a picker reads it at decision time).

    `agree` counts the tool's training calls whose only argument not bound otherwise was this one, with
    a value the user had written; `n` all its calls. Its chance is Laplace-smoothed like a binding's."""

    model_config = ConfigDict(extra="forbid")

    argument: str
    agree: Count
    n: Count

    @property
    def chance(self) -> float:
        return (self.agree + 1) / (self.n + 2)


class RecordBinding(BaseModel):
    """Format 5: arguments bound together to the fields of ONE record (an object) of an earlier output.

    The records are the objects at `path` in the most recent output of `source` holding a string at every
    field of `fields` (argument → the record's key); the binder passes the first record whose values have not
    yet been passed together for these arguments, else the first. `agree` / `n`: the training calls where such
    records were in view, and those where that record was the agent's own. Laplace-smoothed as a binding."""

    model_config = ConfigDict(extra="forbid")

    source: str
    path: str = Field(pattern=VALUE_PATH, max_length=1000)
    fields: dict[str, str] = Field(min_length=2)
    agree: Count
    n: Count

    @model_validator(mode="after")
    def _parts_within_whole(self) -> RecordBinding:
        _within([self.agree], self.n, "agree", "n")
        if any(not key or "[" in key or "]" in key for key in self.fields.values()):
            raise ValueError("a record field is a key that is not empty and holds no [ or ]")
        return self

    @property
    def chance(self) -> float:
        return (self.agree + 1) / (self.n + 2)


class RankCount(BaseModel):
    """At one site, with `rank` values of the listing already passed: how often the walk's next value was
    in view (`n`), the agent's next call (`next`), and called before the agent's next write (`reach`)."""

    model_config = ConfigDict(extra="forbid")

    n: Count
    next: Count
    reach: Count

    @model_validator(mode="after")
    def _parts_within_whole(self) -> RankCount:
        _within([self.next, self.reach], self.n, "next and reach", "n")
        return self


class Walk(BaseModel):
    """Format 3: how far the agent walks a listing, for a lookup whose `argument` binds to a `[*]` path.

    `sites[site][r]` counts the training sites where the listing was the most recent output at the binding's
    path and r of its values had been passed for the argument (the last entry: r >= len - 1). Where a site and
    rank were seen, the lookup's score there is the walk chance (count + 1) / (n + 2), in place of the site's
    tool chance × this argument's binding chance; elsewhere the format-2 score holds.

    With `prior` k > 0 the walk chance is (count + k·p) / (n + k) instead, p the walk's pooled chance at that
    rank over every site ((Σ count + 1) / (Σ n + 2)): a site seen once without a use no longer scores 1/3,
    but near how often the agent goes on walking at that rank anywhere (when it stops walking a listing)."""

    model_config = ConfigDict(extra="forbid")

    argument: str
    sites: dict[str, list[RankCount]]
    prior: float = Field(default=0.0, ge=0.0, le=1000.0)
    """Pseudo-sites of the pooled prior (0: Laplace's (count + 1) / (n + 2)); `flows crossval` chooses it."""
    named: dict[str, list[RankCount]] = Field(default_factory=dict)
    """Format 7 (`toolshift.flows.named`): per site, the counts where the user's messages named values of the
    listing: [a named value not yet passed, every named value passed]."""
    unnamed: dict[str, list[RankCount]] = Field(default_factory=dict)
    """Format 7: `sites`' counts over only the decisions after a user message that named no value of the
    listing (`sites` counts every decision: what a reader that sees no user message uses)."""
    _pooled: dict[tuple[int, str], float] = PrivateAttr(default_factory=dict)

    def pooled(self, rank: int, kind: str) -> float:
        """(Σ count + 1) / (Σ n + 2) at rank index `rank` over every site (cached)."""
        key = (rank, kind)
        if key not in self._pooled:
            hits = n = 0
            for row in self.sites.values():
                if rank < len(row):
                    hits += row[rank].reach if kind == "reach" else row[rank].next
                    n += row[rank].n
            self._pooled[key] = (hits + 1) / (n + 2)
        return self._pooled[key]

    @model_validator(mode="after")
    def _two_named_states(self) -> Walk:
        for site, row in self.named.items():
            if len(row) != 2:
                raise ValueError(f"a named walk counts 2 states at a site, not {len(row)} (at {site!r})")
        return self

    def named_chance(self, site: str, state: int, kind: str) -> float | None:
        """The walk chance at `site` in a named state (format 7), by the walk's rule: Laplace, or leaning on the
        state's pooled chance over every site with `prior` pseudo-sites (then a site never seen in that state
        scores the pooled chance); None where neither was seen."""
        hits = n = 0
        for row in self.named.values():
            hits += row[state].reach if kind == "reach" else row[state].next
            n += row[state].n
        if n == 0:
            return None
        row = self.named.get(site)
        count = row[state] if row else RankCount(n=0, next=0, reach=0)
        own = count.reach if kind == "reach" else count.next
        if self.prior <= 0.0:
            return (own + 1) / (count.n + 2) if count.n else None
        return (own + self.prior * (hits + 1) / (n + 2)) / (count.n + self.prior)

    def chance(self, site: str, rank: int, kind: str) -> float | None:
        """The walk chance at `site` with `rank` values passed, or None where training never saw it."""
        row = self.sites.get(site)
        if not row:
            return None
        at = min(rank, len(row) - 1)
        count = row[at]
        if count.n == 0:
            return None
        hits = count.reach if kind == "reach" else count.next
        if self.prior <= 0.0:
            return (hits + 1) / (count.n + 2)
        return (hits + self.prior * self.pooled(at, kind)) / (count.n + self.prior)


class ToolFlow(BaseModel):
    """How to make one read tool's lookup: its required arguments and where each comes from."""

    model_config = ConfigDict(extra="forbid")

    calls: Count
    required: list[str] = Field(default_factory=list)
    bindings: dict[str, Binding] = Field(default_factory=dict)
    lists: dict[str, Binding] = Field(default_factory=dict)
    """Format 2: list arguments bound to every value at a `[*]` path."""
    constants: dict[str, Constant] = Field(default_factory=dict)
    bare: Bare | None = None
    walk: Walk | None = None
    """Format 3: a walk over the listing one argument is bound to (see `Walk`)."""
    words: WordsBinding | None = None
    """Format 4: an argument read from the user's words (see `WordsBinding`)."""
    record: RecordBinding | None = None
    """Format 5: arguments bound together from one record (see `RecordBinding`); none of them is in
    `bindings`."""
    fallbacks: dict[str, list[Binding]] = Field(default_factory=dict)
    """Format 5: per argument of `bindings`, further sources tried in order when the binding's path is in no
    output seen; a lookup bound through one is scored with its chance in place of the binding's."""
    unbound: list[str] = Field(default_factory=list)
    """Required arguments no path or constant gave: the lookup is never made."""

    def binding_chance(self, *, without: str | None = None) -> float:
        """The chance the bound arguments are the agent's own (0 when an argument cannot be bound).

        `without` leaves one string binding out (the walk's argument, which the walk chance scores), or the
        record binding (named by its arguments joined by `+`, a walk over its records)."""
        if self.unbound:
            return 0.0
        chance = 1.0
        for name, binding in self.bindings.items():
            if name != without:
                chance *= binding.chance
        for binding in self.lists.values():
            chance *= binding.chance
        for name in self.required:
            if name in self.constants and name not in self.bindings and name not in self.lists:
                chance *= (self.constants[name].calls + 1) / (self.constants[name].calls + 2)
        if self.record is not None and without != "+".join(sorted(self.record.fields)):
            chance *= self.record.chance
        if self.words is not None:
            chance *= self.words.chance
        elif not self.required and self.bare is not None:
            chance *= self.bare.chance
        return chance


class Ask(BaseModel):
    """Format 6: a read the user asks for by name (`toolshift.flows.asks`): the user messages (after a tool had
    responded) holding every word of `words`, and of those how often the read was the agent's next call
    (`next`) and was called before the agent's next write (`reach`)."""

    model_config = ConfigDict(extra="forbid")

    words: list[str] = Field(min_length=1)
    messages: Count
    next: Count = 0
    reach: Count = 0

    @model_validator(mode="after")
    def _parts_within_whole(self) -> Ask:
        _within((self.next, self.reach), self.messages, "an ask count", "messages")
        return self

    def chance(self, kind: str) -> float:
        """Laplace's (count + 1)/(messages + 2) for the decider `kind` (`next-step` counts `next`)."""
        count = self.next if kind == "next-step" else self.reach
        return (count + 1) / (self.messages + 2)


class AgentShare(BaseModel):
    """One agent's part of what a flow learned from."""

    model_config = ConfigDict(extra="forbid")

    episodes: NonNegativeInt
    tasks: NonNegativeInt
    weight: Count


Weighting = Literal["episodes", "tasks", "agents"]


class LearnedFrom(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episodes: NonNegativeInt
    tasks: NonNegativeInt
    agents: list[str]
    successful_only: bool
    constants: bool
    unlisted: dict[str, NonNegativeInt] = Field(default_factory=dict)
    """Calls to tools the catalog does not list (they do not exist), by tool: kept, as neither read nor write."""
    excluded: dict[str, NonNegativeInt] = Field(default_factory=dict)
    """Older files only: episodes left out for calling such tools, by tool (no longer written)."""
    weighting: Weighting = "episodes"
    """How the episodes were weighed (`toolshift.flows.weights`): `episodes` each 1 (every file before format
    8); `tasks`, an agent's trials of one task sharing one; `agents`, that and every agent weighing alike.
    Written only when not `episodes`."""
    by_agent: dict[str, AgentShare] = Field(default_factory=dict)
    """Per agent learned from: its episodes, tasks and total weight (written with a weighting)."""


class Flow(BaseModel):
    """A learned flow (`toolshift.flow`, format 1 to 8)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["toolshift.flow"] = FLOW_KIND
    format: Literal[1, 2, 3, 4, 5, 6, 7, 8]
    domain: str
    catalog: str
    """The catalog fingerprint (`Catalog.fingerprint`) the flow was learned against."""
    learned_from: LearnedFrom
    ints: bool = False
    """Format 5: integer leaves of outputs are values too (bound to integer arguments as strings are)."""
    sites: dict[str, SiteHabit]
    tools: dict[str, ToolFlow]
    asks: dict[str, Ask] = Field(default_factory=dict)
    """Format 6: per read, the user's words that ask for it (decided after each user message)."""
    results: ResultForm = "json"
    """How the results it learned from were printed (`ToolCatalog.results`): a live decider reads results so,
    since its bindings' paths are paths of that reading. Written only when not `json`."""

    def check_catalog(self, catalog: Catalog, *, source: str = "flow") -> None:
        """Refuse to serve this flow against another domain's or another version's catalog."""
        if catalog.domain != self.domain:
            raise BadInputError(
                f"flow learned for domain {self.domain!r}, not {catalog.domain!r}",
                source=source,
                field="domain",
            )
        if catalog.fingerprint() != self.catalog:
            raise BadInputError(
                f"flow learned against catalog {self.catalog}, but this {catalog.domain!r} catalog is "
                f"{catalog.fingerprint()} (its tools or their effects differ): learn the flow again",
                source=source,
                field="catalog",
            )


def save_flow(flow: Flow, path: Path) -> Path:
    """Write atomically, so a failed write leaves any earlier file intact.

    A tool without a walk or words is written without those keys, and a walk without a prior without `prior`,
    so earlier formats' files stay as they were."""
    raw = json.loads(flow.model_dump_json(exclude_defaults=False))
    if not raw.get("ints"):
        raw.pop("ints", None)
    if not raw.get("asks"):
        raw.pop("asks", None)
    if raw.get("results") == "json":
        raw.pop("results", None)
    if raw["learned_from"].get("weighting") == "episodes":
        raw["learned_from"].pop("weighting", None)
    if not raw["learned_from"].get("by_agent"):
        raw["learned_from"].pop("by_agent", None)
    for tool in raw["tools"].values():
        for group in (tool.get("bindings", {}), tool.get("lists", {})):
            for b in group.values():
                if not b.get("back"):
                    b.pop("back", None)
        for alts in tool.get("fallbacks", {}).values():
            for b in alts:
                if not b.get("back"):
                    b.pop("back", None)
        for key in ("walk", "words", "record"):
            if tool.get(key) is None:
                tool.pop(key, None)
        if not tool.get("fallbacks"):
            tool.pop("fallbacks", None)
        if tool.get("walk") is not None and not tool["walk"].get("prior"):
            tool["walk"].pop("prior", None)
        for key in ("named", "unnamed"):
            if tool.get("walk") is not None and not tool["walk"].get(key):
                tool["walk"].pop(key, None)
    return write_text_atomic(path, json.dumps(raw, indent=1, ensure_ascii=False) + "\n")


def parse_flow(raw: Any, *, source: str = "flow") -> Flow:
    """Validate a decoded flow document; an unknown kind or format is refused by name."""
    if not isinstance(raw, dict):
        raise BadInputError("a flow file is a JSON object", source=source)
    if raw.get("kind") != FLOW_KIND:
        raise BadInputError(f"not a flow file (kind {raw.get('kind')!r}, expected {FLOW_KIND!r})", source=source,
                            field="kind")  # fmt: skip
    if raw.get("format") not in KNOWN_FORMATS:
        raise BadInputError(
            f"unknown flow format {raw.get('format')!r}: this reader knows formats {list(KNOWN_FORMATS)}; "
            "refusing rather than making fewer lookups than the flow was learned to",
            source=source,
            field="format",
        )
    if raw["format"] == 1 and any(
        t.get("lists") for t in (raw.get("tools") or {}).values() if isinstance(t, dict)
    ):
        raise BadInputError("format 1 flows have no list bindings; this one has (it is format 2)",
                            source=source, field="format")  # fmt: skip
    if raw["format"] in (1, 2) and any(
        t.get("walk") for t in (raw.get("tools") or {}).values() if isinstance(t, dict)
    ):
        raise BadInputError(f"format {raw['format']} flows have no walks; this one has (it is format 3)",
                            source=source, field="format")  # fmt: skip
    if raw["format"] in (1, 2, 3) and any(
        t.get("words") for t in (raw.get("tools") or {}).values() if isinstance(t, dict)
    ):
        raise BadInputError(f"format {raw['format']} flows read nothing from the user's words; this one does "
                            "(it is format 4)", source=source, field="format")  # fmt: skip
    if raw["format"] in (1, 2, 3, 4) and any(
        t.get("fallbacks") for t in (raw.get("tools") or {}).values() if isinstance(t, dict)
    ):
        raise BadInputError(f"format {raw['format']} flows have no fallback bindings; this one has (it is format 5)",
                            source=source, field="format")  # fmt: skip
    if raw["format"] in (1, 2, 3, 4) and raw.get("ints"):
        raise BadInputError(f"format {raw['format']} flows bind no integers; this one does (it is format 5)",
                            source=source, field="ints")  # fmt: skip
    if raw["format"] in (1, 2, 3, 4) and any(
        t.get("record") for t in (raw.get("tools") or {}).values() if isinstance(t, dict)
    ):
        raise BadInputError(f"format {raw['format']} flows bind no record's fields together; this one does "
                            "(it is format 5)", source=source, field="format")  # fmt: skip
    if raw["format"] in (1, 2, 3, 4, 5) and any(
        isinstance(b, dict) and b.get("back")
        for t in (raw.get("tools") or {}).values() if isinstance(t, dict)
        for b in (t.get("bindings") or {}).values()
    ):  # fmt: skip
        raise BadInputError(f"format {raw['format']} flows bind only from the most recent output; this one binds "
                            "from an older one (it is format 6)", source=source, field="back")  # fmt: skip
    if raw["format"] in (1, 2, 3, 4, 5) and raw.get("asks"):
        raise BadInputError(f"format {raw['format']} flows read no asks from the user's words; this one does "
                            "(it is format 6)", source=source, field="asks")  # fmt: skip
    if raw["format"] in (1, 2, 3, 4, 5, 6) and any(
        isinstance(t.get("walk"), dict) and t["walk"].get("named")
        for t in (raw.get("tools") or {}).values() if isinstance(t, dict)
    ):  # fmt: skip
        raise BadInputError(f"format {raw['format']} flows walk no listing by the values the user names; this one "
                            "does (it is format 7)", source=source, field="named")  # fmt: skip
    if raw["format"] != 8 and (
        _fractional(raw)
        or (isinstance(raw.get("learned_from"), dict) and raw["learned_from"].get("weighting"))
    ):
        raise BadInputError(f"format {raw['format']} flows count each episode once; this one weighs them (it is "
                            "format 8)", source=source, field="learned_from.weighting")  # fmt: skip
    try:
        return Flow.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=source) from exc


def _fractional(raw: Any) -> bool:
    """Whether any count of a flow document (`COUNT_KEYS`, outside `learned_from`) is not a whole number."""
    stack = [v for k, v in raw.items() if k != "learned_from"] if isinstance(raw, dict) else []
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key in COUNT_KEYS:
                    values = value.values() if isinstance(value, dict) else [value]
                    if any(isinstance(v, float) and not v.is_integer() for v in values):
                        return True
                if isinstance(value, dict | list):
                    stack.append(value)
    return False


def load_flow(path: Path, catalog: Catalog | None = None) -> Flow:
    """Read a flow file; with a catalog, refuse it unless it was learned against that catalog."""
    path = Path(path)
    flow = parse_flow(read_json(path, what="flow"), source=str(path))
    if catalog is not None:
        flow.check_catalog(catalog, source=str(path))
    return flow


def with_walk_prior(flow: Flow, prior: float) -> Flow:
    """The same flow with every walk's pooled prior set to `prior` (`Walk.prior`)."""
    if prior < 0:
        raise BadInputError(f"a walk prior is 0 or more, not {prior}", field="walk_prior")
    tools = {
        name: tool.model_copy(update={"walk": tool.walk.model_copy(update={"prior": prior})})
        if tool.walk is not None
        else tool
        for name, tool in flow.tools.items()
    }
    return flow.model_copy(update={"tools": tools})
