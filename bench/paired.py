"""Paired timing for bench/: two sides doing the same unit of work, interleaved A, B, A, B …, compared p50/p50 and p90/p90.

Every ratio a script in bench/ prints goes through this module (tests/test_bench_paired.py checks it):

- `interleave(a, b, items, rounds=…)` (or `interleave_async` for coroutine sides) runs, for each round and
  each item in order, side A on the item, then side B on the same item; so drift in the machine's load
  falls on both sides alike. A side is timed here (wall: `time.perf_counter`, CPU: `time.process_time` of
  this process) unless it returns a `Sample` it measured itself (a side in another process); any other
  return value is ignored.
- `percentile(values, q)` is the linear interpolation between closest ranks (numpy's default, and
  `statistics.quantiles(..., method="inclusive")`): for sorted x of length n, position h = (n − 1)·q,
  value x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]).
- `Paired.ratio(q)` is percentile(B, q) / percentile(A, q): the ratio of the percentiles, not a
  percentile of per-pair ratios.
- `measure(side, items)` times one side alone, for a figure that is not a ratio.
- The 1-minute load average (`os.getloadavg`) is read when the pairing starts and when it ends, and
  `Paired.rows` / `Paired.note` put it beside the figures.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

T = TypeVar("T")
Clock = Literal["wall", "cpu"]


@dataclass(frozen=True)
class Sample:
    """One side's cost for one unit of work, in seconds."""

    wall: float
    cpu: float


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return math.nan


@dataclass
class Paired:
    """The samples of two sides measured in one interleaved run, and the load around it."""

    a: str
    b: str
    a_samples: list[Sample] = field(default_factory=list)
    b_samples: list[Sample] = field(default_factory=list)
    load_start: float = math.nan
    load_end: float = math.nan

    def values(self, side: Literal["a", "b"], clock: Clock = "wall") -> list[float]:
        samples = self.a_samples if side == "a" else self.b_samples
        return [getattr(s, clock) for s in samples]

    def p(self, side: Literal["a", "b"], q: float, clock: Clock = "wall") -> float:
        return percentile(self.values(side, clock), q)

    def ratio(self, q: float, clock: Clock = "wall") -> float:
        """percentile(B, q) / percentile(A, q)."""
        return self.p("b", q, clock) / self.p("a", q, clock)

    def rows(
        self, what: str, *, clocks: Sequence[Clock] = ("wall",), scale: float = 1000.0, unit: str = "ms"
    ) -> list[tuple[str, str, str]]:
        """Benchmark rows: each side's p50 / p90, the ratio B / A at p50/p50 and p90/p90, and the load."""
        out: list[tuple[str, str, str]] = []
        for clock in clocks:
            c = "" if clocks == ("wall",) else f" ({clock})"
            for side, name in (("a", self.a), ("b", self.b)):
                p50, p90 = (scale * self.p(side, q, clock) for q in (0.5, 0.9))  # type: ignore[arg-type]
                out.append((f"{what}: {name}{c}, p50 / p90", f"{p50:.3f} / {p90:.3f} {unit}", ""))
            out.append(
                (
                    f"{what}: {self.b} / {self.a}{c}, p50/p50 · p90/p90",
                    f"{self.ratio(0.5, clock):.2f}× · {self.ratio(0.9, clock):.2f}×",
                    "",
                )
            )
        out.append((f"{what}: pairs; load average (1 min) at start → end", self.load_text(), ""))
        return out

    def add(self, side: int, sample: Sample) -> None:
        (self.a_samples if side == 0 else self.b_samples).append(sample)

    def finished(self) -> Paired:
        self.load_end = load_average()
        return self

    def load_text(self) -> str:
        return f"{len(self.a_samples)}; {self.load_start:.2f} → {self.load_end:.2f}"

    def note(self) -> str:
        return (
            f"{self.a} and {self.b} interleaved in one run ({self.a}, {self.b}, {self.a}, {self.b} …, the same unit "
            f"of work each time), {len(self.a_samples)} pairs; ratios are {self.b} / {self.a} of the p50s and of "
            f"the p90s; load average (1 min) {self.load_start:.2f} at start, {self.load_end:.2f} at end."
        )


def _timed(started: tuple[float, float], given: object) -> Sample:
    if isinstance(given, Sample):
        return given
    return Sample(time.perf_counter() - started[0], time.process_time() - started[1])


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _plan(items: Sequence[T], rounds: int) -> list[T]:
    if rounds < 1 or not items:
        raise ValueError("a pairing needs at least one item and one round")
    return [item for _ in range(rounds) for item in items]


def _order(items: Sequence[T], rounds: int) -> list[tuple[int, T]]:
    """(0, item), (1, item) for each item of each round: side A, then side B, on the same item."""
    return [(k, item) for item in _plan(items, rounds) for k in (0, 1)]


def measure(side: Callable[[T], object], items: Sequence[T], *, rounds: int = 1) -> list[Sample]:
    """One side alone, timed per item as `interleave` times it: for a figure that is not a ratio."""
    out = []
    for item in _plan(items, rounds):
        started = _now()
        out.append(_timed(started, side(item)))
    return out


def _pairing(
    sides: tuple[Callable[[T], object], Callable[[T], object]],
    items: Sequence[T],
    rounds: int,
    names: tuple[str, str],
) -> Generator[tuple[Callable[[T], object], T], object, Paired]:
    """The one pairing loop: yields (side, item) in order, is sent what the call returned, returns the Paired."""
    run = Paired(*names, load_start=load_average())
    for k, item in _order(items, rounds):
        started = _now()
        run.add(k, _timed(started, (yield sides[k], item)))
    return run.finished()


def interleave(
    a: Callable[[T], object], b: Callable[[T], object], items: Sequence[T], *, rounds: int = 1,
    names: tuple[str, str] = ("A", "B"),
) -> Paired:  # fmt: skip
    """For each round and item: A(item), then B(item); each call timed (or its own Sample kept)."""
    steps = _pairing((a, b), items, rounds, names)
    try:
        side, item = next(steps)
        while True:
            side, item = steps.send(side(item))
    except StopIteration as done:
        return done.value


async def interleave_async(
    a: Callable[[T], Awaitable[object]], b: Callable[[T], Awaitable[object]], items: Sequence[T], *,
    rounds: int = 1, names: tuple[str, str] = ("A", "B"),
) -> Paired:  # fmt: skip
    """`interleave` for coroutine sides, awaited in the running event loop."""
    steps = _pairing((a, b), items, rounds, names)
    try:
        side, item = next(steps)
        while True:
            side, item = steps.send(await side(item))  # type: ignore[misc]
    except StopIteration as done:
        return done.value
