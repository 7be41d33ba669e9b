"""Reading what the flows commands take: episode files, a domain's tool catalog, and which tasks to keep."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from toolshift.errors import BadInputError
from toolshift.flows.timeline import Catalog, Timeline, Unlisted, timelines
from toolshift.traces.catalog import load_catalog
from toolshift.traces.episode import Episode
from toolshift.traces.split import split_tasks
from toolshift.traces.store import EPISODES_SUFFIX, iter_episodes

TaskSet = Literal["all", "train", "test"]


@dataclass
class Inputs:
    catalog: Catalog
    timelines: list[Timeline]
    unlisted: Unlisted = field(default_factory=Unlisted)
    other_domains: int = 0
    other_split: int = 0

    def describe(self) -> str:
        parts = [f"{len(self.timelines)} episodes of {self.catalog.domain!r}", self.unlisted.describe()]
        if self.other_domains:
            parts.append(f"{self.other_domains} episodes of other domains left out")
        if self.other_split:
            parts.append(f"{self.other_split} episodes of the other split left out")
        return "; ".join(parts)


def select(
    episodes: Iterable[Episode], catalog: Catalog, tasks: TaskSet = "all", *, source: str = "episodes"
) -> Inputs:
    """The catalog domain's episodes of the chosen tasks (split per `toolshift.traces.split`), as timelines."""
    same_domain, other = [], Counter[str]()
    for episode in episodes:
        if episode.domain == catalog.domain:
            same_domain.append(episode)
        else:
            other[episode.domain] += 1
    if not same_domain and other:
        held = ", ".join(f"{n} of {d!r}" for d, n in other.most_common())
        raise BadInputError(
            f"no episode of the catalog's domain {catalog.domain!r} in these files (they hold {held}): "
            "pass the catalog of their domain",
            source=source,
            field="domain",
        )
    inputs = Inputs(catalog, [], other_domains=sum(other.values()))
    if tasks != "all":
        split = split_tasks(e.task_id for e in same_domain)
        kept = [e for e in same_domain if split[e.task_id] == tasks]
        inputs.other_split = len(same_domain) - len(kept)
        same_domain = kept
    inputs.timelines = timelines(same_domain, catalog, inputs.unlisted)
    return inputs


def episode_files(paths: Sequence[Path]) -> list[Path]:
    """Episode files, a folder standing for every episode file under it (`*.episodes.jsonl[.gz]`, sorted): a
    folder of mixed converted runs, many agents' and domains', of which `select` keeps the catalog's domain."""
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(p for p in path.rglob(f"*{EPISODES_SUFFIX}*") if p.name.endswith((EPISODES_SUFFIX,
                           f"{EPISODES_SUFFIX}.gz")))  # fmt: skip
            if not found:
                raise BadInputError(f"no episode file (*{EPISODES_SUFFIX}) in this folder", source=str(path))
            out += found
        elif path.exists():
            out.append(path)
        else:
            raise BadInputError("no such episode file", source=str(path))
    return out


def load_inputs(paths: Sequence[Path], catalog_path: Path, tasks: TaskSet = "all") -> Inputs:
    """Episode files or folders of them (`toolshift.episodes/1` JSONL) and a catalog file (`toolshift.catalog/1`).

    Files with no usable episode of the catalog's domain (empty, or none in the chosen split)
    are refused: every command would otherwise print empty tables.
    """
    catalog = Catalog.of(load_catalog(catalog_path))
    episodes: list[Episode] = []
    for path in episode_files(paths):
        episodes.extend(iter_episodes(path, unique=True))
    source = ", ".join(map(str, paths))
    inputs = select(episodes, catalog, tasks, source=source)
    if not inputs.timelines:
        raise BadInputError(f"no episode left to use: {inputs.describe()}", source=source)
    return inputs
