"""What the outputs seen so far hold: for each (tool, path) the most recent output's values at that path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolshift.flows.values import PathPlan, string_paths, string_paths_within

PathKey = tuple[str, str]
"""(source tool, path such as `$.reservations[*]`)."""


class OutputIndex:
    """The most recent output holding each (tool, path), and which paths currently hold a value."""

    __slots__ = ("holders", "latest", "previous")

    def __init__(self) -> None:
        self.latest: dict[PathKey, tuple[list[Any], frozenset[Any]]] = {}
        self.previous: dict[PathKey, tuple[list[Any], frozenset[Any]]] = {}
        """The output before the most recent one holding each (tool, path) (format 6's `Binding.back`)."""
        self.holders: dict[Any, set[PathKey]] = {}

    def observe(self, tool: str, output: Any, *, track_holders: bool = True, ints: bool = False) -> None:
        """Take in one output. `track_holders=False` skips the reverse index (the decider never needs it);
        `ints`: integer leaves are values too (format 5)."""
        if output is None:
            return
        for path, values in string_paths(output, ints).items():
            key = (tool, path)
            as_set = frozenset(values)
            old = self.latest.get(key)
            if old is not None:
                self.previous[key] = old
            self.latest[key] = (values, as_set)
            if track_holders:
                for value in as_set:
                    self.holders.setdefault(value, set()).add(key)

    def observe_within(self, tool: str, output: Any, plan: PathPlan, ints: bool = False) -> None:
        """`observe` for a reader that only ever looks up the plan's paths of `tool`: the same `latest` entries
        for those keys, with the rest of the output left unwalked."""
        if output is None:
            return
        for path, values in string_paths_within(output, plan, ints).items():
            old = self.latest.get((tool, path))
            if old is not None:
                self.previous[(tool, path)] = old
            self.latest[(tool, path)] = (values, frozenset(values))

    def holding(self, value: Any) -> list[PathKey]:
        """Paths whose most recent output holds `value`."""
        return [k for k in self.holders.get(value, ()) if value in self.latest[k][1]]

    def holding_previous(self, value: Any) -> list[PathKey]:
        """Paths whose output before the most recent one holds `value`."""
        return [k for k in self.holders.get(value, ()) if k in self.previous and value in self.previous[k][1]]

    def holding_all(self, values: Iterable[str]) -> list[PathKey]:
        """Paths whose most recent output holds every one of `values`."""
        values = list(values)
        if not values:
            return []
        return [k for k in self.holding(values[0]) if all(v in self.latest[k][1] for v in values[1:])]


def pick_unopened(values: list[Any], opened: set[Any] | frozenset[Any]) -> Any:
    """The binder's rule for a string: the first value at the path not yet passed for this argument, else the first."""
    for value in values:
        if value not in opened:
            return value
    return values[0]


def listing_rank(values: list[Any], opened: set[Any] | frozenset[Any]) -> int:
    """How many of a listing's values were already passed for the argument (a walk's rank)."""
    return sum(1 for value in values if value in opened)
