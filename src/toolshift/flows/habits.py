"""The habit at each site: how often each read was the agent's next call, and called before its next write."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from toolshift.flows.model import START_SITE, USER_SITE, SiteHabit
from toolshift.flows.timeline import Catalog, Timeline, TurnEvent, UserEvent


def _site_points(timeline: Timeline) -> list[tuple[str, int | None]]:
    """The decision sites in order: start, each user message, each agent call (with its call index)."""
    points: list[tuple[str, int | None]] = [(START_SITE, None)]
    for event in timeline.events:
        if isinstance(event, UserEvent):
            points.append((USER_SITE, None))
        elif isinstance(event, TurnEvent):
            for i in timeline.turns[event.turn]:
                points.append((timeline.calls[i].tool, i))
    return points


def _habits(
    timelines: Sequence[Timeline], catalog: Catalog, weights: Mapping[str, int | float] | None = None
) -> dict[str, SiteHabit]:
    """Per site: its occurrences and the reads next / before the next write, each episode counted by its
    weight (`toolshift.flows.weights`; 1 without `weights`)."""
    occurrences: Counter[str] = Counter()
    nexts: dict[str, Counter[str]] = defaultdict(Counter)
    reaches: dict[str, Counter[str]] = defaultdict(Counter)
    for timeline in timelines:
        w = weights.get(timeline.episode_id, 1) if weights else 1
        points = _site_points(timeline)
        reach_after: list[frozenset[str]] = [frozenset()] * len(points)
        ahead: set[str] = set()
        for p in range(len(points) - 1, -1, -1):
            reach_after[p] = frozenset(ahead)
            _, index = points[p]
            if index is not None:
                tool = timeline.calls[index].tool
                if catalog.is_write(tool):
                    ahead = set()
                elif catalog.is_read(tool):
                    ahead.add(tool)
        for p, (site, _) in enumerate(points):
            occurrences[site] += w
            if p + 1 < len(points):
                _, nxt = points[p + 1]
                if nxt is not None and catalog.is_read(timeline.calls[nxt].tool):
                    nexts[site][timeline.calls[nxt].tool] += w
            for tool in reach_after[p]:
                reaches[site][tool] += w
    return {
        site: SiteHabit(
            occurrences=n, next=dict(sorted(nexts[site].items())), reach=dict(sorted(reaches[site].items()))
        )
        for site, n in sorted(occurrences.items())
    }
