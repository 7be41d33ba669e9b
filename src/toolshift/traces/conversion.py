"""What a converter produced: episodes, one tool catalog per domain, and a count of what it kept and skipped."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from toolshift.errors import BadInputError
from toolshift.traces.catalog import ToolCatalog, catalog_path, save_catalog
from toolshift.traces.episode import Episode
from toolshift.traces.store import EPISODES_SUFFIX, write_episodes


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
    inputs: list[str] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return len(self.episodes)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def skip_bad(self, error: BadInputError, *, skip_bad: bool) -> None:
        """Count a malformed record when `skip_bad`, else raise its error."""
        if not skip_bad:
            raise error
        self.skip(f"malformed record ({error.field or 'record'}): {error.detail[:60]}")

    def extend(self, other: Conversion) -> None:
        self.episodes += other.episodes
        for domain, catalog in other.catalogs.items():
            mine = self.catalogs.get(domain)
            self.catalogs[domain] = catalog if mine is None else mine.merged(catalog.tools)
        self.records += other.records
        self.skipped.update(other.skipped)
        self.unknown_tools.update(other.unknown_tools)
        self.inputs += other.inputs

    def note_unknown_tools(self) -> None:
        """Count calls whose tool the episode's domain catalog does not list."""
        self.unknown_tools.clear()
        for episode in self.episodes:
            catalog = self.catalogs.get(episode.domain)
            known = catalog.effects() if catalog else {}
            for message in episode.messages:
                for call in message.tool_calls or []:
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
