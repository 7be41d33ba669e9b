"""What a converter produced: episodes, one tool catalog per domain, and a count of what it kept and skipped."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import NotJsonError, loads_json
from toolshift.traces.catalog import ToolCatalog, catalog_path, save_catalog
from toolshift.traces.episode import Episode, Requestor, ToolCall
from toolshift.traces.store import EPISODES_SUFFIX, write_episodes

RAW_ARGUMENTS = "_raw"
"""The one argument of a malformed call: the argument text as the run wrote it."""


def read_call(
    call_id: str,
    name: Any,
    arguments: Any,
    *,
    requestor: Requestor = "assistant",
    source: str | None = None,
    record: int | str | None = None,
    field: str | None = None,
) -> ToolCall:
    """A call as every converter keeps it: JSON argument text parsed (never evaluated), a dict as it is.

    What cannot be read as a named call with an object of arguments — text that is not JSON, JSON that is
    not an object, no name — is kept, never dropped: `malformed: true`, `arguments = {"_raw": <text as
    written>}`, `name` as written ("" when there is none). Such a call is a failure the run's benchmark
    counts; it reaches no tool, so flows and anatomy count it as neither a read nor a write. JSON beyond the
    limits (`toolshift.fileio`: depth, size) is still refused, naming `source`, `record` and `field`.
    """
    good_name = isinstance(name, str)
    label = name if good_name else ("" if name is None else json.dumps(name, default=str))
    if isinstance(arguments, dict) and good_name:
        return ToolCall(id=call_id, name=label, arguments=arguments, requestor=requestor)
    if isinstance(arguments, str):
        try:
            parsed = loads_json(arguments)
        except NotJsonError:
            parsed = None
        except BadInputError as exc:
            raise BadInputError(
                f"arguments: {exc.detail}", source=source, record=record, field=field
            ) from None
        if isinstance(parsed, dict) and good_name:
            return ToolCall(id=call_id, name=label, arguments=parsed, requestor=requestor)
        raw = arguments
    else:
        raw = json.dumps(arguments, ensure_ascii=False, default=str)
    return ToolCall(
        id=call_id, name=label, arguments={RAW_ARGUMENTS: raw}, requestor=requestor, malformed=True
    )


@dataclass
class Conversion:
    """The result of converting published runs. `skipped` counts records left out, by reason."""

    converter: str
    episodes: list[Episode] = field(default_factory=list)
    catalogs: dict[str, ToolCatalog] = field(default_factory=dict)
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    unknown_tools: Counter[str] = field(default_factory=Counter)
    """Called tool names no catalog of the episode's domain lists (reported, never labelled by guess)."""
    malformed_calls: int = 0
    """Calls kept with `malformed: true` (arguments not a JSON object, or no name); counted by `note_unknown_tools`."""
    notes: list[str] = field(default_factory=list)
    """What the reader should know about how the catalogs were built (a missing extra, a fallback)."""
    inputs: list[str] = field(default_factory=list)
    _seen: dict[str, int | str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def kept(self) -> int:
        return len(self.episodes)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def keep(self, episode: Episode, *, source: str, record: int | str, skip_bad: bool) -> None:
        """Add one converted episode; one whose id an episode already kept has is a malformed record (two
        episodes under one id would be one episode to every reader after; issue 56), refused or counted."""
        first = self._ids().get(episode.id)
        if first is not None:
            error = BadInputError(
                f"episode id {episode.id!r} repeats (record {first} has it)",
                source=source,
                record=record,
                field="id",
            )
            self.skip_bad(error, skip_bad=skip_bad)
            return
        self._ids()[episode.id] = record
        self.episodes.append(episode)

    def _ids(self) -> dict[str, int | str]:
        """Episode id → the record that brought it (the position, for episodes added without `keep`)."""
        if len(self._seen) < len(self.episodes):
            for i, e in enumerate(self.episodes):
                self._seen.setdefault(e.id, i)
        return self._seen

    def skip_bad(self, error: BadInputError, *, skip_bad: bool) -> None:
        """Count a malformed record when `skip_bad`, else raise its error."""
        if not skip_bad:
            raise error
        self.skip(f"malformed record ({error.field or 'record'}): {error.detail[:60]}")

    def extend(self, other: Conversion) -> None:
        """Add another input's conversion; an episode id both hold is refused naming the later input."""
        both = self._ids().keys() & {e.id for e in other.episodes}
        if both:
            raise BadInputError(
                f"episode id {min(both)!r} is in an earlier input too (the same run given twice?)",
                source=(other.inputs or ["input"])[0],
                field="id",
            )
        self.episodes += other.episodes
        for domain, catalog in other.catalogs.items():
            mine = self.catalogs.get(domain)
            self.catalogs[domain] = catalog if mine is None else mine.merged(catalog.tools)
        self.records += other.records
        self.skipped.update(other.skipped)
        self.unknown_tools.update(other.unknown_tools)
        self.malformed_calls += other.malformed_calls
        self.notes += [n for n in other.notes if n not in self.notes]
        self.inputs += other.inputs

    def note_unknown_tools(self) -> None:
        """Count calls whose tool the episode's domain catalog does not list, and malformed calls."""
        self.unknown_tools.clear()
        self.malformed_calls = 0
        for episode in self.episodes:
            catalog = self.catalogs.get(episode.domain)
            known = catalog.effects() if catalog else {}
            for message in episode.messages:
                for call in message.tool_calls or []:
                    self.malformed_calls += bool(call.malformed)
                    if call.name not in known:
                        self.unknown_tools[call.name] += 1

    def write(self, out_dir: Path, *, prefix: str = "") -> list[Path]:
        """Write `<prefix><domain>.episodes.jsonl` and `<domain>.catalog.json` per domain into `out_dir`."""
        out_dir = Path(out_dir)
        written: list[Path] = []
        by_domain: dict[str, list[Episode]] = {}
        for episode in self.episodes:
            by_domain.setdefault(episode.domain, []).append(episode)
        for domain in sorted(set(by_domain) | set(self.catalogs)):
            if domain in self.catalogs:
                written.append(save_catalog(self.catalogs[domain], catalog_path(out_dir, domain)))
            if domain in by_domain:
                path = out_dir / f"{prefix}{domain}{EPISODES_SUFFIX}"
                meta = {"converter": self.converter, "domain": domain, "inputs": self.inputs}
                write_episodes(path, by_domain[domain], meta=meta)
                written.append(path)
        return written
