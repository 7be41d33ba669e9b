"""The flow file: a learned habit per site and a binding per lookup, versioned (format 1, or 2 with lists).

Counts are stored, not chances, so a reader can see how much evidence each number rests on; the chances
are derived on load. A reader refuses a format it does not know, and a flow learned for another domain or
tool catalog, rather than silently making fewer (or other) lookups than the flow was learned to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError
from toolshift.flows.timeline import Catalog
from toolshift.traces.store import write_text_atomic

FLOW_KIND = "toolshift.flow"
KNOWN_FORMATS = (1, 2)
START_SITE = "<start>"
USER_SITE = "<user>"


class SiteHabit(BaseModel):
    """At one site: how often it occurred, and per read tool how often it was the agent's next call
    (`next`) and how often it was called before the agent's next write (`reach`)."""

    model_config = ConfigDict(extra="forbid")

    occurrences: int
    next: dict[str, int] = Field(default_factory=dict)
    reach: dict[str, int] = Field(default_factory=dict)


class Binding(BaseModel):
    """An argument bound to a path of an earlier output of `source`, and how often it agreed in training."""

    model_config = ConfigDict(extra="forbid")

    source: str
    path: str
    agree: int
    n: int

    @property
    def chance(self) -> float:
        return (self.agree + 1) / (self.n + 2)


class Constant(BaseModel):
    """An argument the agent passed with one value every time (learned with `--constants`)."""

    model_config = ConfigDict(extra="forbid")

    value: Any
    calls: int


class Bare(BaseModel):
    """A lookup with no required argument that the agent sometimes called with one: calls that passed none."""

    model_config = ConfigDict(extra="forbid")

    bare: int
    calls: int

    @property
    def chance(self) -> float:
        return (self.bare + 1) / (self.calls + 2)


class ToolFlow(BaseModel):
    """How to make one read tool's lookup: its required arguments and where each comes from."""

    model_config = ConfigDict(extra="forbid")

    calls: int
    required: list[str] = Field(default_factory=list)
    bindings: dict[str, Binding] = Field(default_factory=dict)
    lists: dict[str, Binding] = Field(default_factory=dict)
    """Format 2: list arguments bound to every value at a `[*]` path."""
    constants: dict[str, Constant] = Field(default_factory=dict)
    bare: Bare | None = None
    unbound: list[str] = Field(default_factory=list)
    """Required arguments no path or constant gave: the lookup is never made."""

    def binding_chance(self) -> float:
        """The chance the bound arguments are the agent's own (0 when an argument cannot be bound)."""
        if self.unbound:
            return 0.0
        chance = 1.0
        for binding in self.bindings.values():
            chance *= binding.chance
        for binding in self.lists.values():
            chance *= binding.chance
        for name in self.required:
            if name in self.constants and name not in self.bindings and name not in self.lists:
                chance *= (self.constants[name].calls + 1) / (self.constants[name].calls + 2)
        if not self.required and self.bare is not None:
            chance *= self.bare.chance
        return chance


class LearnedFrom(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episodes: int
    tasks: int
    agents: list[str]
    successful_only: bool
    constants: bool
    excluded: dict[str, int] = Field(default_factory=dict)


class Flow(BaseModel):
    """A learned flow (`toolshift.flow`, format 1 or 2)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["toolshift.flow"] = FLOW_KIND
    format: Literal[1, 2]
    domain: str
    catalog: str
    """The catalog fingerprint (`Catalog.fingerprint`) the flow was learned against."""
    learned_from: LearnedFrom
    sites: dict[str, SiteHabit]
    tools: dict[str, ToolFlow]

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
    """Write atomically, so a failed write leaves any earlier file intact."""
    return write_text_atomic(path, flow.model_dump_json(indent=1, exclude_defaults=False) + "\n")


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
    try:
        return Flow.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadInputError(err["msg"], source=source, field=".".join(map(str, err["loc"]))) from exc


def load_flow(path: Path, catalog: Catalog | None = None) -> Flow:
    """Read a flow file; with a catalog, refuse it unless it was learned against that catalog."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInputError(f"cannot read flow: {exc}", source=str(path)) from exc
    flow = parse_flow(raw, source=str(path))
    if catalog is not None:
        flow.check_catalog(catalog, source=str(path))
    return flow
