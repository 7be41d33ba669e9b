"""Step- and cost-optimal reference paths: partition a base function sequence into blocks, one implementation each.

A version of the ecosystem offers, for each base capability, one or more *implementations*: a
one-to-one tool covers one function in one call, a merged tool covers a consecutive block of
functions in one call, a split tool covers one function in several coordinated calls. A task's
reference path in a version is the cheapest way to cover its base function sequence with
consecutive blocks, each served by one active implementation (the seed's ρ_i(v, c)); we solve it by
dynamic programming over the sequence, once for steps and once for cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Criterion = Literal["step", "cost"]
CRITERIA: tuple[Criterion, ...] = ("step", "cost")

CALL_COST = 1.0
"""The least a call costs (the bottom of the 1–10 scale): what a call of a tool the version lacks is charged."""


@dataclass(frozen=True)
class Implementation:
    """One way a version offers to perform a consecutive block of base functions.

    `tools` lists the calls it makes in order (one per step); `cost` is the sum of their tools' costs
    (`toolshift.bench.ecosystem.costs`: a 1–10 score per tool, fixed while the tool is unchanged).
    """

    id: str
    covers: tuple[str, ...]
    tools: tuple[str, ...]
    cost: float
    kind: str = "one-to-one"

    @property
    def steps(self) -> int:
        return len(self.tools)

    def weight(self, criterion: Criterion) -> int:
        """The weight the DP adds up, as an integer: steps, or cost in hundredths."""
        return self.steps if criterion == "step" else round(self.cost * 100)


@dataclass(frozen=True)
class PathBlock:
    """Functions `start:end` of the sequence, served by `impl`."""

    start: int
    end: int
    impl: Implementation


@dataclass(frozen=True)
class ReferencePath:
    """An optimal cover of one task's base function sequence under one criterion."""

    criterion: Criterion
    blocks: tuple[PathBlock, ...]

    @property
    def steps(self) -> int:
        return sum(b.impl.steps for b in self.blocks)

    @property
    def cost(self) -> float:
        return round(sum(b.impl.cost for b in self.blocks), 2)

    @property
    def weight(self) -> float:
        return float(self.steps) if self.criterion == "step" else self.cost

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(t for b in self.blocks for t in b.impl.tools)

    @property
    def implementation_ids(self) -> tuple[str, ...]:
        return tuple(b.impl.id for b in self.blocks)


@dataclass
class ImplementationIndex:
    """Implementations grouped by the base function they start with, for the DP's inner loop."""

    by_first: dict[str, list[Implementation]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def of(cls, implementations: Iterable[Implementation]) -> ImplementationIndex:
        index = cls()
        for impl in implementations:
            if impl.covers:
                index.by_first[impl.covers[0]].append(impl)
        for impls in index.by_first.values():
            impls.sort(key=lambda i: i.id)
        return index


def _key(criterion: Criterion, impls: Sequence[Implementation]) -> tuple[int, int, tuple[str, ...]]:
    """Primary weight, the other criterion as a tie-break, then implementation ids: a total order."""
    other: Criterion = "cost" if criterion == "step" else "step"
    return (
        sum(i.weight(criterion) for i in impls),
        sum(i.weight(other) for i in impls),
        tuple(i.id for i in impls),
    )


Usable = Callable[[Implementation, int], bool]
"""Whether an implementation can serve the block that starts at this position of the sequence
(a merge is usable only where its later steps need nothing its earlier steps return)."""


def optimal_path(
    functions: Sequence[str],
    implementations: Iterable[Implementation] | ImplementationIndex,
    criterion: Criterion,
    usable: Usable | None = None,
) -> ReferencePath | None:
    """The minimum-weight cover of `functions` by consecutive blocks, or None when none exists.

    Only blocks `usable` allows are considered (default: all). Ties are broken by the other
    criterion, then by implementation ids, so the answer is unique and equals what exhaustive
    search finds (tested).
    """
    index = (
        implementations
        if isinstance(implementations, ImplementationIndex)
        else ImplementationIndex.of(implementations)
    )
    n = len(functions)
    other: Criterion = "cost" if criterion == "step" else "step"
    # best[i] = (primary, secondary, ids, blocks) for the suffix functions[i:]
    best: list[tuple[int, int, tuple[str, ...], tuple[PathBlock, ...]] | None] = [None] * (n + 1)
    best[n] = (0, 0, (), ())
    for i in range(n - 1, -1, -1):
        for impl in index.by_first.get(functions[i], ()):
            j = i + len(impl.covers)
            if j > n or tuple(functions[i:j]) != impl.covers:
                continue
            if usable is not None and not usable(impl, i):
                continue
            rest = best[j]
            if rest is None:
                continue
            cand = (
                impl.weight(criterion) + rest[0],
                impl.weight(other) + rest[1],
                (impl.id, *rest[2]),
                (PathBlock(i, j, impl), *rest[3]),
            )
            current = best[i]
            if current is None or cand[:3] < current[:3]:
                best[i] = cand
    if best[0] is None:
        return None
    return ReferencePath(criterion, best[0][3])


def brute_force_path(
    functions: Sequence[str],
    implementations: Iterable[Implementation],
    criterion: Criterion,
    usable: Usable | None = None,
) -> ReferencePath | None:
    """Exhaustive search over every partition and choice: the DP's specification, for tests."""
    impls = sorted(implementations, key=lambda i: i.id)
    n = len(functions)
    found: list[list[PathBlock]] = []

    def extend(i: int, chosen: list[PathBlock]) -> None:
        if i == n:
            found.append(list(chosen))
            return
        for impl in impls:
            j = i + len(impl.covers)
            if impl.covers and j <= n and tuple(functions[i:j]) == impl.covers:
                if usable is not None and not usable(impl, i):
                    continue
                chosen.append(PathBlock(i, j, impl))
                extend(j, chosen)
                chosen.pop()

    extend(0, [])
    if not found:
        return None
    winner = min(found, key=lambda blocks: _key(criterion, [b.impl for b in blocks]))
    return ReferencePath(criterion, tuple(winner))
