"""The moving-frontier metrics: SR, tool retrieval P/R/F1, Step-/Cost-SPE, IDR and DAR, with bootstrap intervals.

Definitions (also in docs/results/baselines.md). For task i in version v, with reference path
weights W_c,i(v) (c ∈ {step, cost}) and an agent path of weight A_c,i(v):

* SR: S_i(v) = 𝕀[Δgold_i ⊆ Δagent_i(v)] (`toolshift.models.judge_diff`, the seed's success).
* Strict-SR: 𝕀[S_i(v) = 1 and Δagent_i(v) ⊆ σ(Δgold_i)]: solved with no collateral write, where the
  collateral writes are the changes of Δagent outside Δgold under the judge's renaming σ. Beside SR,
  never instead of it (D116). Collateral: the mean number of collateral changes per episode;
  SR-collateral: the share of solved episodes (S = 1) that made at least one.
* Tool P/R/F1: E = the world tools exposed to the agent: those whose definitions it was given,
  listed or returned by a search (the episode's `source["exposed_tools"]`, recorded by the agent
  loop; harness tools such as `search_tools` left out; episodes recorded without it fall back to
  the tools called), R = the tools of the step-optimal reference path; P = |E∩R|/|E|,
  R = |E∩R|/|R|, F1 their harmonic mean (0 when E∩R is empty).
* SPE_c = S_i(v) · W_c,i(v) / max(W_c,i(v), A_c,i(v)): success-weighted path efficiency.
* IDR_c(v), v ≥ 2, over I_c(v) = {i : W_c,i(v) < W_c,i(v−1)} (a better path appeared):
  the share of those tasks the agent solved with A_c,i(v) < W_c,i(v−1), i.e. it used an
  improvement the previous version did not offer.
* DAR_c(v), v ≥ 2, over D_c(v) = {i : W_c,i(v) > W_c,i(v−1)} (the best path got worse): the share
  of those tasks the agent solved at the new optimum, A_c,i(v) ≤ W_c,i(v).

Agent steps count every tool call the agent made (failed ones too) but harness calls (a tool search,
its own end of the conversation); agent cost sums the version's cost of each tool called (a tool
the version does not have costs `CALL_COST`, the bottom of the 1–10 scale).
Per version, intervals resample tasks; overall, they resample tasks with all their versions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from toolshift.agents.users import END_CONVERSATION
from toolshift.bench.reference import CALL_COST, Criterion
from toolshift.intervals import Interval, bootstrap_mean
from toolshift.models import RowChange, judge_diff
from toolshift.traces.episode import Episode

EPS = 1e-9
HARNESS = frozenset(
    {"think", "transfer_to_human_agents", "done", "list_tools", "search_tools", END_CONVERSATION}
)
"""Calls that serve the conversation, not the task: never steps, never exposed world tools."""

STRICT_SR = "Strict-SR"
METRICS: tuple[str, ...] = (
    "SR",
    STRICT_SR,
    "SR-collateral",
    "P",
    "R",
    "F1",
    "Step-SPE",
    "Cost-SPE",
    "Step-IDR",
    "Step-DAR",
    "Cost-IDR",
    "Cost-DAR",
)
"""The rates (shown in percent)."""
COUNTS: tuple[str, ...] = ("Collateral",)
"""The means that are counts, not rates: collateral changes per episode."""


def cell(metric: str, iv: Interval, digits: int = 1) -> str:
    """One metric's interval as a table shows it: a rate in percent, a count as a number."""
    return iv.number(digits + 1) if metric in COUNTS else iv.percent(digits)


@dataclass(frozen=True)
class InstanceReference:
    """A task's reference path weights in one version and the previous one (None in v1)."""

    task_id: str
    version: int
    steps: int
    cost: float
    tools: frozenset[str]
    prev_steps: int | None = None
    prev_cost: float | None = None

    def weight(self, criterion: Criterion) -> float:
        return float(self.steps) if criterion == "step" else self.cost

    def prev_weight(self, criterion: Criterion) -> float | None:
        prev = self.prev_steps if criterion == "step" else self.prev_cost
        return None if prev is None else float(prev)


@dataclass(frozen=True)
class AgentPath:
    """What one episode did, as the metrics see it."""

    success: bool
    steps: int
    cost: float
    exposed: frozenset[str]
    collateral_changes: int = 0
    """Changes outside Δgold under the judge's renaming σ (`toolshift.models.DiffVerdict.collateral`)."""
    collateral_rows: tuple[str, ...] = ()
    """The rows they touched, as `table/key`, sorted."""

    @property
    def strict_success(self) -> bool:
        return self.success and not self.collateral_changes

    def weight(self, criterion: Criterion) -> float:
        return float(self.steps) if criterion == "step" else self.cost


@dataclass(frozen=True)
class InstanceScore:
    """One task × version scored. IDR/DAR fields are None when the task is not in that set."""

    task_id: str
    version: int
    success: bool
    precision: float
    recall: float
    f1: float
    step_spe: float
    cost_spe: float
    step_idr: float | None
    step_dar: float | None
    cost_idr: float | None
    cost_dar: float | None
    collateral_changes: int = 0
    collateral_rows: tuple[str, ...] = ()

    @property
    def strict_success(self) -> bool:
        return self.success and not self.collateral_changes

    def value(self, metric: str) -> float | None:
        return {
            "SR": float(self.success),
            STRICT_SR: float(self.strict_success),
            "SR-collateral": float(self.collateral_changes > 0) if self.success else None,
            "Collateral": float(self.collateral_changes),
            "P": self.precision,
            "R": self.recall,
            "F1": self.f1,
            "Step-SPE": self.step_spe,
            "Cost-SPE": self.cost_spe,
            "Step-IDR": self.step_idr,
            "Step-DAR": self.step_dar,
            "Cost-IDR": self.cost_idr,
            "Cost-DAR": self.cost_dar,
        }[metric]


def tool_retrieval(exposed: Iterable[str], reference: Iterable[str]) -> tuple[float, float, float]:
    """Precision, recall and F1 of the exposed tool set against the reference path's tools."""
    e, r = set(exposed), set(reference)
    hit = len(e & r)
    if hit == 0:
        return 0.0, 0.0, 0.0
    p, rec = hit / len(e), hit / len(r)
    return p, rec, 2 * p * rec / (p + rec)


def path_efficiency(success: bool, reference: float, agent: float) -> float:
    """S · ref / max(ref, agent); a zero-weight reference counts as fully efficient when solved."""
    if not success:
        return 0.0
    denom = max(reference, agent)
    return 1.0 if denom <= EPS else reference / denom


def _improved(ref: InstanceReference, criterion: Criterion) -> bool | None:
    prev = ref.prev_weight(criterion)
    return None if prev is None else ref.weight(criterion) < prev - EPS


def _degraded(ref: InstanceReference, criterion: Criterion) -> bool | None:
    prev = ref.prev_weight(criterion)
    return None if prev is None else ref.weight(criterion) > prev + EPS


def score_instance(
    ref: InstanceReference, step_run: AgentPath, cost_run: AgentPath | None = None
) -> InstanceScore:
    """Score one task × version. `cost_run` is a separate episode judged on cost (defaults to `step_run`)."""
    cost_run = cost_run or step_run
    p, r, f1 = tool_retrieval(step_run.exposed, ref.tools)

    def idr(run: AgentPath, c: Criterion) -> float | None:
        if not _improved(ref, c):
            return None
        prev = ref.prev_weight(c)
        assert prev is not None
        return float(run.success and run.weight(c) < prev - EPS)

    def dar(run: AgentPath, c: Criterion) -> float | None:
        if not _degraded(ref, c):
            return None
        return float(run.success and run.weight(c) <= ref.weight(c) + EPS)

    return InstanceScore(
        task_id=ref.task_id,
        version=ref.version,
        success=step_run.success,
        precision=p,
        recall=r,
        f1=f1,
        step_spe=path_efficiency(step_run.success, ref.weight("step"), step_run.weight("step")),
        cost_spe=path_efficiency(cost_run.success, ref.weight("cost"), cost_run.weight("cost")),
        step_idr=idr(step_run, "step"),
        step_dar=dar(step_run, "step"),
        cost_idr=idr(cost_run, "cost"),
        cost_dar=dar(cost_run, "cost"),
        collateral_changes=step_run.collateral_changes,
        collateral_rows=step_run.collateral_rows,
    )


def world_tool_calls(episode: Episode, catalog: Iterable[str] | None = None) -> list[str]:
    """The names of the tools an episode's assistant called, in order (user-side calls excluded; given the
    version's `catalog`, harness tools such as the agent's own `end_conversation` are not steps)."""
    names = [
        call.name
        for msg in episode.messages
        if msg.role == "assistant" and msg.tool_calls
        for call in msg.tool_calls
        if call.requestor == "assistant"
    ]
    if catalog is not None:
        allowed = set(catalog)
        names = [n for n in names if n in allowed or n not in HARNESS]
    return names


def agent_path(
    episode: Episode,
    expected_changes: Sequence[RowChange],
    tool_costs: Mapping[str, float],
    generated: Sequence[str] = (),
) -> AgentPath:
    """Steps, cost, success and exposed tools of a recorded episode against one version's costs
    (`generated`: the task's `generated_values`, judged like keys)."""
    calls = world_tool_calls(episode, tool_costs)
    exposed = episode.source.get("exposed_tools")
    # judged here from the recorded diff, not read from outcome.info: older episodes lack those fields
    verdict = judge_diff(episode.world_diff or [], expected_changes, generated=generated)
    return AgentPath(
        success=verdict.success,
        steps=len(calls),
        cost=round(sum(tool_costs.get(n, CALL_COST) for n in calls), 2),
        exposed=frozenset(exposed) - HARNESS if exposed is not None else frozenset(calls),
        collateral_changes=len(verdict.collateral),
        collateral_rows=tuple(verdict.collateral_rows()),
    )


@dataclass(frozen=True)
class Summary:
    """Metric → interval, per version and over all versions (key 0)."""

    by_version: dict[int, dict[str, Interval]]

    @property
    def overall(self) -> dict[str, Interval]:
        return self.by_version[0]


def summarise(scores: Sequence[InstanceScore], *, resamples: int = 1000, seed: int = 0) -> Summary:
    """Aggregate instance scores per version (intervals over tasks) and overall (cluster bootstrap by task)."""
    grouped: dict[int, list[InstanceScore]] = defaultdict(list)
    for s in scores:
        grouped[s.version].append(s)
    out: dict[int, dict[str, Interval]] = {}
    for version in [0, *sorted(grouped)]:
        members = scores if version == 0 else grouped[version]
        row: dict[str, Interval] = {}
        for metric in (*METRICS, *COUNTS):
            pairs = [(s.task_id, v) for s in members if (v := s.value(metric)) is not None]
            row[metric] = bootstrap_mean(
                [v for _, v in pairs],
                groups=[t for t, _ in pairs] if version == 0 else None,
                resamples=resamples,
                seed=seed,
            )
        out[version] = row
    return Summary(out)
