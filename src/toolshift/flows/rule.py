"""A decision rule for a flow's lookups: recalibrated scores per site, and one θ or a threshold per decision.

A `Rule` turns a lookup's model score (its habit chance times its binding chance, times its parent's for a
chain) into a probability of use with a `SiteCalibrator`, then compares it with a bar: one θ, or, priced
where it stands (seed 003, "A threshold per decision"), λ·δ/(β+δ) with δ the detour (the tool's mean result
tokens, written once and reread in every LLM turn expected to be left) and β the turn it would save (the
next turn's prompt and the call's tokens over the turns after it), both learned from training episodes at
the decision's position (the agent's calls seen so far). With an `IntentCalibrator` (toolshift.flows.intent)
the recalibration is also conditioned on the request's intent words. Everything here is fitted on training
tasks only (`toolshift.flows.perdecision`). Saved as `toolshift.flow-rule/1` (docs/formats.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic
from toolshift.flows.calibration import Isotonic, SiteCalibrator, site_key
from toolshift.flows.intent import IntentCalibrator
from toolshift.flows.pricing import Price, saved_turn_value
from toolshift.flows.timeline import Timeline

RULE_FORMAT = "toolshift.flow-rule/1"
MAX_POSITION = 12
"""Positions past this many of the agent's calls share the last position's costs."""
BAR_RANGE = (0.02, 0.98)


@dataclass(frozen=True)
class CostModel:
    """What a detour costs and a saved turn is worth at each position, learned from training episodes."""

    price: Price
    result_tokens: dict[str, float]
    default_tokens: float
    turns_left: tuple[float, ...]
    saved_value: tuple[float, ...]

    def at(self, position: int) -> int:
        return min(max(position, 0), len(self.turns_left) - 1)

    def detour(self, tool: str, position: int) -> float:
        tokens = self.result_tokens.get(tool, self.default_tokens)
        left = self.turns_left[self.at(position)]
        return (
            0.0 if left <= 0 else tokens * self.price.write + tokens * self.price.read * max(left - 1.0, 0.0)
        )

    def theta(self, tool: str, position: int) -> float:
        """δ/(β+δ) for this lookup at this position."""
        delta, beta = self.detour(tool, position), self.saved_value[self.at(position)]
        return delta / (beta + delta) if beta + delta > 0 else 0.0


def learn_costs(timelines: Sequence[Timeline], price: Price) -> CostModel:
    """Mean result tokens per read; per position k (k of the agent's calls seen), the mean LLM turns left
    after the k-th call and the mean value of the turn after it."""
    tokens: dict[str, list[float]] = {}
    left: list[list[float]] = [[] for _ in range(MAX_POSITION + 1)]
    value: list[list[float]] = [[] for _ in range(MAX_POSITION + 1)]
    for t in timelines:
        agent = [c for c in t.calls if c.by_agent]
        for k, c in enumerate(agent, start=1):
            if c.effect == "read":
                tokens.setdefault(c.tool, []).append(c.output_tokens)
            slot = min(k, MAX_POSITION)
            turns_after = len(t.turns) - c.turn - 1
            left[slot].append(float(turns_after))
            if turns_after > 0:
                nxt = c.turn + 1
                saved = saved_turn_value(t, nxt, price) + t.turn_completion_tokens[nxt] * price.read * (
                    turns_after - 1
                )
                value[slot].append(saved)
        left[0].append(float(len(t.turns)))
        if t.turns:
            value[0].append(saved_turn_value(t, 0, price))
    means = {k: sum(v) / len(v) for k, v in tokens.items() if v}
    pooled = [x for v in tokens.values() for x in v]
    default = sum(pooled) / len(pooled) if pooled else 0.0

    def filled(rows: list[list[float]]) -> tuple[float, ...]:
        out: list[float] = []
        for v in rows:
            out.append(sum(v) / len(v) if v else (out[-1] if out else 0.0))
        return tuple(out)

    return CostModel(price, means, default, filled(left), filled(value))


@dataclass(frozen=True)
class Rule:
    """How a decider makes a lookup: `kind` "theta" (one θ) or "priced" (a threshold per decision, λ·δ/(β+δ)),
    on scores recalibrated per site when `calibrator` is given."""

    kind: Literal["theta", "priced"]
    theta: float = 0.3
    lam: float = 1.0
    calibrator: SiteCalibrator | IntentCalibrator | None = None
    costs: CostModel | None = None
    reread: bool = True
    """False: never propose a read the agent already has in context from earlier in the episode."""
    intent: tuple[str, ...] = ()
    """The intent vocabulary an `IntentCalibrator` was fitted with (the session matches user words to it)."""

    def probability(self, tool: str, depth: int, position: int, score: float, intent: str = "") -> float:
        if self.calibrator is None:
            return score
        if isinstance(self.calibrator, IntentCalibrator):
            return self.calibrator(site_key(tool, depth, position), score, intent)
        return self.calibrator(site_key(tool, depth, position), score)

    def bar(self, tool: str, position: int) -> float:
        if self.kind == "theta" or self.costs is None:
            return self.theta
        lo, hi = BAR_RANGE
        return min(max(self.lam * self.costs.theta(tool, position), lo), hi)

    def label(self) -> str:
        cal = ", recalibrated per site" if self.calibrator is not None else ""
        cal += " and intent" if isinstance(self.calibrator, IntentCalibrator) else ""
        cal += "" if self.reread else ", no re-reads"
        return f"θ = {self.theta:g}{cal}" if self.kind == "theta" else f"per decision, λ = {self.lam:g}{cal}"


# -- the file -------------------------------------------------------------------------------------


class _Map(BaseModel):
    model_config = ConfigDict(extra="forbid")
    xs: list[float]
    ys: list[float]


class _Calibrator(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_count: int = Field(ge=1)
    global_: _Map = Field(alias="global")
    sites: dict[str, _Map]
    intent_sites: dict[str, _Map] = Field(default_factory=dict)
    """Site × intent maps (`site#intent`), for a rule conditioned on the request's intent words."""


class _Costs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    price: str
    result_tokens: dict[str, float]
    default_tokens: float = Field(ge=0)
    turns_left: list[float] = Field(min_length=1)
    saved_value: list[float] = Field(min_length=1)


class RuleFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal["toolshift.flow-rule/1"]
    decider: Literal["reach", "next-step"]
    kind: Literal["theta", "priced"]
    theta: float = Field(gt=0.0, le=1.0)
    lam: float = Field(gt=0.0)
    reread: bool = True
    intent: list[str] = Field(default_factory=list)
    calibrator: _Calibrator | None = None
    costs: _Costs | None = None
    chosen_by: str = ""


def _iso(m: _Map, source: str) -> Isotonic:
    if len(m.xs) != len(m.ys) or any(b < a for a, b in zip(m.xs, m.xs[1:], strict=False)):
        raise BadInputError("a calibration map needs as many xs as ys, xs ascending", source=source,
                            field="calibrator")  # fmt: skip
    return Isotonic(tuple(m.xs), tuple(m.ys))


def save_rule(rule: Rule, decider: str, path: Path, chosen_by: str = "") -> Path:
    doc: dict[str, object] = {"format": RULE_FORMAT, "decider": decider, "kind": rule.kind, "theta": rule.theta,
                              "lam": rule.lam, "reread": rule.reread, "chosen_by": chosen_by}  # fmt: skip
    if isinstance(rule.calibrator, IntentCalibrator):
        doc["intent"] = list(rule.intent)
        doc["calibrator"] = rule.calibrator.base.to_json() | {
            "intent_sites": {
                k: {"xs": list(v.xs), "ys": list(v.ys)} for k, v in sorted(rule.calibrator.by_intent.items())
            }
        }
    elif rule.calibrator is not None:
        doc["calibrator"] = rule.calibrator.to_json()
    if rule.costs is not None:
        c = rule.costs
        doc["costs"] = {"price": c.price.label(), "result_tokens": c.result_tokens, "default_tokens": c.default_tokens,
                        "turns_left": list(c.turns_left), "saved_value": list(c.saved_value)}  # fmt: skip
    return write_text_atomic(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def load_rule(path: Path) -> tuple[Rule, str]:
    """A rule file and the decider it was chosen for; a bad file is refused by field."""
    source = str(path)
    raw = read_json(Path(path), what="flow rule")
    if not isinstance(raw, dict) or raw.get("format") != RULE_FORMAT:
        got = raw.get("format") if isinstance(raw, dict) else None
        raise BadInputError(f"not a flow rule (format {got!r}, expected {RULE_FORMAT!r})", source=source,
                            field="format")  # fmt: skip
    try:
        doc = RuleFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInputError(f"{first['msg']}", source=source, field=where) from exc
    cal: SiteCalibrator | IntentCalibrator | None = None
    if doc.calibrator is not None:
        cal = SiteCalibrator(_iso(doc.calibrator.global_, source),
                             {k: _iso(v, source) for k, v in doc.calibrator.sites.items()}, doc.calibrator.min_count)  # fmt: skip
        if doc.calibrator.intent_sites:
            if not doc.intent:
                raise BadInputError("intent maps need the intent vocabulary they were fitted with", source=source,
                                    field="intent")  # fmt: skip
            cal = IntentCalibrator(cal, {k: _iso(v, source) for k, v in doc.calibrator.intent_sites.items()})
    costs = None
    if doc.costs is not None:
        c = doc.costs
        if len(c.turns_left) != len(c.saved_value):
            raise BadInputError("costs.turns_left and costs.saved_value differ in length", source=source,
                                field="costs")  # fmt: skip
        costs = CostModel(Price.parse(c.price), dict(c.result_tokens), c.default_tokens, tuple(c.turns_left),
                          tuple(c.saved_value))  # fmt: skip
    if doc.kind == "priced" and costs is None:
        raise BadInputError("a priced rule needs its costs", source=source, field="costs")
    return Rule(doc.kind, doc.theta, doc.lam, cal, costs, doc.reread, tuple(doc.intent)), doc.decider
