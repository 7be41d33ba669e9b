"""Choose a flow and each decider's θ by cross-validation over agents: learn on the others, replay the one left out.

A flow learned from many agents' runs is served to agents it never saw, so its choices are made the same way:
every candidate (how the flow is learned: from every run or the successful ones, how episodes are weighed,
walks, record bindings, fallback sources) is learned on all agents but one and replayed on that one's episodes,
for every agent in turn, at each θ. The rule, fixed before running it: per decider, the candidate and θ with
the largest share of the ceiling whose detours an episode plus `margin` standard errors over the agents (the
folds as clusters, `SavingFigures.detours_bound`) stay within the budget (ties: fewer detours, the larger θ,
then the earlier candidate). Candidates are tried in stages, each kept only where the two deciders' chosen
shares average strictly higher (`choose_options`), as `crossval.try_format6` does for tasks.

Nested figures (`nested_pick`): each agent scored by the choice made without it (its counts removed from every
cell, the rule applied to the rest). Summed over the agents, they are what the whole procedure does for an agent
it never saw: the leave-one-agent-out figures, and the "cross-validated detours" a held-out agent's detours are
compared with. Only training agents are read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolshift.errors import BadInputError
from toolshift.flows.ceiling import anatomy
from toolshift.flows.crossval import SavingFigures
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import Flow, Weighting
from toolshift.flows.nested import without_fold
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, Timeline

THETAS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)
BUDGET = 0.5
"""Detours an episode a choice must keep to (the issue's goal: ≤ 0.5 at the airline replay)."""
MARGIN = 1.0
"""Standard errors over the agents a candidate's detours must keep under the budget (D226's rule)."""


@dataclass(frozen=True)
class Options:
    """How a candidate flow is learned (`learn_flow`'s options)."""

    learn_from_all: bool = True
    weighting: Weighting = "episodes"
    walk_ranks: int = 0
    walk_prior: float = 0.0
    records: bool = False
    fallbacks: bool = False
    ints: bool = False
    named: bool = False

    def label(self) -> str:
        parts = ["every run" if self.learn_from_all else "successful runs", f"weighed by {self.weighting}"]
        if self.walk_ranks:
            parts.append(
                f"walk ranks {self.walk_ranks}, prior {self.walk_prior:g}" + (", named" if self.named else "")
            )
        parts += [name for name, on in (("record bindings", self.records), ("fallback sources", self.fallbacks),
                                         ("integer bindings", self.ints)) if on]  # fmt: skip
        return ", ".join(parts)

    def learn(self, timelines: Sequence[Timeline], catalog: Catalog) -> Flow | None:
        """The flow these options learn, or None where there is nothing to learn from (no successful run)."""
        if not any(self.learn_from_all or t.success for t in timelines):
            return None
        return learn_flow(timelines, catalog, learn_from_all=self.learn_from_all, weighting=self.weighting,
                          walk_ranks=self.walk_ranks, walk_prior=self.walk_prior, records=self.records,
                          fallbacks=self.fallbacks, ints=self.ints, named=self.named)  # fmt: skip


@dataclass(frozen=True)
class Cell(SavingFigures):
    """One candidate at one θ for one decider, summed over the agent folds (index-aligned with the agents)."""

    options: Options
    decider: str
    theta: float
    saved: int
    ceiling: int
    detours: int
    episodes: int
    fold_counts: tuple[tuple[int, int], ...] = ()
    """Per agent: (detours, episodes)."""
    fold_saves: tuple[tuple[int, int], ...] = ()
    """Per agent: (saved, ceiling)."""
    order: int = 0
    """The candidate's place in the order tried (ties go to the earlier)."""


@dataclass
class AgentCrossval:
    """Every cell of a leave-one-agent-out cross-validation, and the choice rule over them."""

    agents: tuple[str, ...]
    cells: list[Cell]
    budget: float = BUDGET
    margin: float = MARGIN
    deciders: tuple[str, ...] = DECIDERS
    candidates: list[Options] = field(default_factory=list)

    def best(self, decider: str, options: Options | None = None, margin: float | None = None) -> Cell | None:
        """The decider's best cell within the budget (with these options only, if given), or None."""
        m = self.margin if margin is None else margin
        ok = [c for c in self.cells if c.decider == decider and (options is None or c.options == options)
              and c.detours_bound(m) <= self.budget]  # fmt: skip
        return min(
            ok, key=lambda c: (-c.share_of_ceiling, c.detours_per_episode, -c.theta, c.order), default=None
        )

    def mean_best_share(self, options: Options) -> float:
        """The mean over deciders of the best share these options reach within the budget (0 with none)."""
        bests = [self.best(d, options) for d in self.deciders]
        return sum(b.share_of_ceiling if b else 0.0 for b in bests) / len(bests)

    def chosen_options(self) -> Options:
        """The candidate (one flow, served to both deciders) whose deciders' best shares average highest
        (ties: the earlier tried)."""
        if not self.candidates:
            raise BadInputError("no candidate was cross-validated")
        return min(self.candidates, key=lambda o: (-self.mean_best_share(o), self.candidates.index(o)))

    def choice(self, decider: str) -> Cell | None:
        """The decider's cell with the chosen options (None: no θ keeps within the budget)."""
        return self.best(decider, self.chosen_options())

    def without(self, fold: int) -> AgentCrossval:
        """The same table with agent `fold`'s counts left out of every cell."""
        agents = self.agents[:fold] + self.agents[fold + 1 :]
        return replace(self, agents=agents, cells=[without_fold(c, fold) for c in self.cells])

    def cell(self, options: Options, decider: str, theta: float) -> Cell:
        for c in self.cells:
            if (c.options, c.decider, c.theta) == (options, decider, theta):
                return c
        raise KeyError((options, decider, theta))


def agent_crossval(timelines: Sequence[Timeline], catalog: Catalog, candidates: Sequence[Options], *,
                   thetas: Sequence[float] = THETAS, deciders: Sequence[str] = DECIDERS, budget: float = BUDGET,
                   margin: float = MARGIN, progress: Callable[[], Any] | None = None) -> AgentCrossval:  # fmt: skip
    """Leave one agent out over `timelines` (the training agents' runs): every candidate's cells."""
    agents = tuple(sorted({t.agent for t in timelines}))
    if len(agents) < 3:
        raise BadInputError(f"cross-validation over agents needs at least 3 agents, got {len(agents)}")
    _, per_episode = anatomy(timelines)
    counts: dict[tuple[int, str, float], list[tuple[int, int, int, int]]] = {}
    for agent in agents:
        rest = [t for t in timelines if t.agent != agent]
        held = [t for t in timelines if t.agent == agent]
        ceiling = sum(per_episode[t.episode_id].ceiling for t in held)
        for k, options in enumerate(candidates):
            flow = options.learn(rest, catalog)
            for d in deciders:
                for th in thetas:
                    r = replay(held, Decider(flow, d, th)) if flow is not None else None  # type: ignore[arg-type]
                    got = (r.saved, r.detours) if r is not None else (0, 0)
                    counts.setdefault((k, d, th), []).append((got[0], ceiling, got[1], len(held)))
            if progress is not None:
                progress()
    cells = [
        Cell(candidates[k], d, th, sum(x[0] for x in rows), sum(x[1] for x in rows), sum(x[2] for x in rows),
             sum(x[3] for x in rows), tuple((x[2], x[3]) for x in rows), tuple((x[0], x[1]) for x in rows), k)
        for (k, d, th), rows in counts.items()
    ]  # fmt: skip
    return AgentCrossval(agents, cells, budget, margin, tuple(deciders), list(candidates))


@dataclass(frozen=True)
class NestedPick:
    """Per decider: each agent scored by the cell chosen without it, summed (`Cell`-like totals), and the picks."""

    decider: str
    saved: int
    ceiling: int
    detours: int
    episodes: int
    picks: tuple[tuple[str, Cell | None], ...]
    """Per agent: the cell chosen without it (None: nothing within the budget, no lookups made)."""

    @property
    def share_of_ceiling(self) -> float:
        return self.saved / self.ceiling if self.ceiling else 0.0

    @property
    def detours_per_episode(self) -> float:
        return self.detours / self.episodes if self.episodes else 0.0


def nested_pick(cv: AgentCrossval, decider: str) -> NestedPick:
    """Each agent scored by the choice made without it: options and θ chosen on the other agents' counts
    (`AgentCrossval.choice`), the agent's own out-of-fold counts in that cell; none made where nothing kept
    within the budget."""
    saved = ceiling = detours = episodes = 0
    picks: list[tuple[str, Cell | None]] = []
    for g, agent in enumerate(cv.agents):
        pick = cv.without(g).choice(decider)
        s, c = cv.cells[0].fold_saves[g]
        d, e = cv.cells[0].fold_counts[g]
        if pick is None:
            s = d = 0
        else:
            full = cv.cell(pick.options, pick.decider, pick.theta)
            s, d = full.fold_saves[g][0], full.fold_counts[g][0]
        saved, ceiling, detours, episodes = saved + s, ceiling + c, detours + d, episodes + e
        picks.append((agent, pick))
    return NestedPick(decider, saved, ceiling, detours, episodes, tuple(picks))


STAGES: tuple[Callable[[Options], list[Options]], ...] = (
    lambda base: [
        replace(base, walk_ranks=3, walk_prior=1.0),
        replace(base, walk_ranks=3, walk_prior=1.0, named=True),
    ],
    lambda base: [
        replace(base, records=True),
        replace(base, fallbacks=True),
        replace(base, records=True, fallbacks=True),
    ],
)
"""After the first stage (every run or the successful ones × the weightings), what is tried on the kept candidate:
walks (format 3, and with named walks, format 7), then record bindings and fallback sources."""


def first_stage(timelines: Sequence[Timeline], verdicts: bool) -> list[Options]:
    """Every run or (where the runs carry verdicts) the successful ones, each with every weighting; `tasks` only
    where some agent ran a task more than once (else it counts exactly as `episodes`)."""
    sources = (True, False) if verdicts else (True,)
    repeats = len({(t.agent, t.task_id) for t in timelines}) < len(timelines)
    weightings = ("episodes", "tasks", "agents") if repeats else ("episodes", "agents")
    return [Options(learn_from_all=a, weighting=w) for a in sources for w in weightings]


def choose_options(timelines: Sequence[Timeline], catalog: Catalog, *, verdicts: bool = True,
                   thetas: Sequence[float] = THETAS, budget: float = BUDGET, margin: float = MARGIN,
                   progress: Callable[[], Any] | None = None) -> tuple[AgentCrossval, Options, list[tuple[Options, float]]]:  # fmt: skip
    """The staged search (module doc): the cross-validation over every candidate tried, the options chosen
    (`AgentCrossval.chosen_options`), and each candidate with its mean chosen share, in the order tried."""
    tried = first_stage(timelines, verdicts)
    cv = agent_crossval(
        timelines, catalog, tried, thetas=thetas, budget=budget, margin=margin, progress=progress
    )
    shares = [(o, cv.mean_best_share(o)) for o in tried]
    kept, best = min(shares, key=lambda os: (-os[1], tried.index(os[0])))
    for stage in STAGES:
        more = [o for o in stage(kept) if o not in tried]
        if not more:
            continue
        extra = agent_crossval(timelines, catalog, more, thetas=thetas, budget=budget, margin=margin,
                               progress=progress)  # fmt: skip
        cv = _merged(cv, extra, len(tried))
        tried += more
        for o in more:
            share = cv.mean_best_share(o)
            shares.append((o, share))
            if share > best:
                kept, best = o, share
    return cv, kept, shares


def _merged(a: AgentCrossval, b: AgentCrossval, offset: int) -> AgentCrossval:
    cells = a.cells + [replace(c, order=c.order + offset) for c in b.cells]
    return replace(a, cells=cells, candidates=a.candidates + b.candidates)
