"""The models every capability shares: tool effects, row-level state changes, and the one task model.

A world's state change (Δ) is a list of `RowChange`s; task success everywhere in toolshift is
"Δgold ⊆ Δagent" (`covers`), and strict success adds "and nothing else changed" (`judge_diff`: the
collateral writes are Δagent's changes outside the renamed Δgold). The `Task` model is the one produced by benchmark synthesis and
consumed by agent runs, metrics and task evolution.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Effect = Literal["read", "write", "neither"]
"""What a tool does to the world: `read` never changes state, `write` may, `neither` is a harness
tool that touches no world (think, transfer to a human, list tools)."""

ChangeOp = Literal["insert", "update", "delete"]


class RowChange(BaseModel):
    """One field of one row changed: the unit of a world diff.

    An inserted row contributes one change per field with `before=None`; a deleted row one per
    field with `after=None`; `op` disambiguates those from a field set to or from NULL.
    """

    model_config = ConfigDict(frozen=True)

    table: str
    key: str
    field: str
    op: ChangeOp
    before: Any = None
    after: Any = None

    def identity(self) -> tuple[str, str, str, str, str]:
        """What must match for this change to count as made: where, how, and the value it left."""
        return (self.table, self.key, self.field, self.op, _canonical(self.after))


def _canonical(value: Any) -> str:
    """A value as a string two changes agree on exactly when their values are equal as JSON.

    Scalars take a fast path (the judge canonicalises every field of every diff it reads); a string is
    tagged so it never equals a number, `true` or `null`; anything else is sorted-key JSON.
    """
    kind = type(value)
    if kind is str:
        return "s" + value
    if kind is int:
        return str(value)
    if kind is float:
        return repr(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    return json.dumps(value, sort_keys=True, default=str)


# --- the judge: Δgold ⊆ Δagent up to a renaming of generated keys ---------------------------------
#
# The world generates the keys of the rows it creates (an id sequence) and, for a few fields, running
# numbers (a tracking number from a count of shipments). Two runs that create the same rows in another
# order, or with another row created first, give them each other's numbers. The judge therefore asks
# for a renaming σ: an injective map from the rows Δgold creates to rows Δagent creates, table by
# table, such that every gold change holds in Δagent once every generated value — wherever it appears
# as a whole field value — is replaced by its image. Everything else is content and must match
# exactly. Definition, ambiguity and cost bounds: docs/decisions.md D70.

MAX_JUDGE_STEPS = 20_000
"""Candidate assignments the search may try over created rows linked by references (D70)."""

_Row = tuple[str, str]
"""A created row: (table, key)."""
_Home = tuple[_Row, str | None]
"""Where a generated value lives: the created row, and its field (None: the row's key)."""


class _Judgement:
    """The search for a renaming σ of Δgold's created rows into Δagent's (D70)."""

    def __init__(
        self, agent: Iterable[RowChange], gold: Iterable[RowChange], generated: Iterable[str]
    ) -> None:
        self.agent_changes = list(agent)
        self.gold_changes = list(gold)
        self.generated = set(generated)
        self.made = {c.identity() for c in self.agent_changes}

    def verdict(self) -> list[RowChange]:
        """The missing gold changes: empty exactly when Δgold ⊆ Δagent up to a renaming."""
        return self.judge().missing

    def judge(self) -> DiffVerdict:
        """The missing gold changes and the collateral agent changes, under the renaming σ found.

        Collateral changes are the agent's changes that are not the image of a gold change under σ (the
        successful renaming, or on failure the closest one found for reporting): exactly the writes the
        task did not ask for.
        """
        if all(c.identity() in self.made for c in self.gold_changes):
            matched = {c.identity() for c in self.gold_changes}
            return DiffVerdict(missing=[], collateral=self._outside(matched))
        self._prepare()
        sigma = self._search()
        if sigma is None:
            # report against the unpruned candidates; a full renaming found here (possible only when the
            # search ran out of budget) is a success, so `covers` and `missing_changes` always agree
            self.cands = {row: self._local_candidates(row) for row in self.gold_rows}
            sigma = self._greedy()
        images = [self._image_identity(c, sigma) for c in self.gold_changes]
        missing = [
            c for c, i in zip(self.gold_changes, images, strict=True) if i is None or i not in self.made
        ]
        return DiffVerdict(missing=missing, collateral=self._outside({i for i in images if i is not None}))

    def _outside(self, matched: set[tuple[str, str, str, str, str]]) -> list[RowChange]:
        """The agent's changes that no gold change accounts for."""
        return [c for c in self.agent_changes if c.identity() not in matched]

    # --- reading both diffs -------------------------------------------------------------------------

    def _prepare(self) -> None:
        self.gold_rows = _created(self.gold_changes)
        self.agent_rows = _created(self.agent_changes)
        self.agent_keys: dict[str, set[str]] = {}
        self.agent_by_table: dict[str, list[tuple[_Row, dict[str, str]]]] = {}
        for (table, key), fields in self.agent_rows.items():
            self.agent_keys.setdefault(table, set()).add(key)
            canon = {f: _canonical(v) for f, v in fields.items()}
            self.agent_by_table.setdefault(table, []).append(((table, key), canon))
        self.home: dict[str, _Home] = {}
        for row in sorted(self.gold_rows):  # a value two created rows hold resolves to the first
            self.home.setdefault(row[1], (row, None))
        for row in sorted(self.gold_rows):
            for f, v in sorted(self.gold_rows[row].items()):
                if isinstance(v, str) and v in self.generated and v not in self.home:
                    self.home[v] = (row, f)
        # per gold row: fields that must equal, fields the world generated, and references
        self.plain: dict[_Row, dict[str, str]] = {}
        self.own: dict[_Row, list[tuple[str, str | None]]] = {}
        self.edges: list[tuple[_Row, str, _Home]] = []
        for row, fields in self.gold_rows.items():
            self.plain[row], self.own[row] = {}, []
            for f, v in fields.items():
                home = self._home(v)
                if v == row[1]:
                    self.own[row].append((f, None))
                elif home is not None and home == (row, f):
                    self.own[row].append((f, f))
                elif home is not None:
                    self.edges.append((row, f, home))
                else:
                    self.plain[row][f] = _canonical(v)
        # gold changes to rows that existed before: fixed, or pointing at a generated value
        self.fixed: list[RowChange] = []
        self.pointers: list[tuple[RowChange, _Home]] = []
        for c in self.gold_changes:
            if c.op == "insert":
                continue
            home = self._home(c.after)
            if home is None:
                self.fixed.append(c)
            else:
                self.pointers.append((c, home))
        self.cands = {row: self._local_candidates(row) for row in self.gold_rows}
        linked = {r for e in self.edges for r in (e[0], e[2][0])} | {h[0] for _, h in self.pointers}
        self.linked = sorted(linked, key=lambda r: (len(self.cands[r]), r))
        self.free = sorted(set(self.gold_rows) - linked)
        self.steps = 0

    def _home(self, value: Any) -> _Home | None:
        return self.home.get(value) if isinstance(value, str) else None

    def _image(self, agent_row: _Row, field: str | None) -> Any:
        """What a generated value is renamed to when its gold row maps to `agent_row`."""
        return agent_row[1] if field is None else self.agent_rows[agent_row].get(field)

    def _local_candidates(self, row: _Row) -> list[_Row]:
        """Agent-created rows of the same table whose content matches the gold row's, field by field."""
        refs = [(f, h) for r, f, h in self.edges if r == row]
        plain = list(self.plain[row].items())
        out = []
        for arow, canon in self.agent_by_table.get(row[0], ()):
            if any(canon.get(f) != v for f, v in plain):
                continue
            afields = self.agent_rows[arow]
            if any(afields.get(f) != arow[1] for f, hf in self.own[row] if hf is None):
                continue
            if any(afields.get(f) is None for f, hf in self.own[row] if hf is not None):
                continue
            if any(hf is None and afields.get(f) not in self.agent_keys.get(h[0], ()) for f, (h, hf) in refs):
                continue
            out.append(arow)
        return out

    # --- the search ---------------------------------------------------------------------------------

    def _propagate(self) -> bool:
        """Arc consistency over references and pointers; False when some created row has no candidate."""
        for c, (row, hf) in self.pointers:
            self.cands[row] = [
                a for a in self.cands[row]
                if (c.table, c.key, c.field, c.op, _canonical(self._image(a, hf))) in self.made
            ]  # fmt: skip
        changed = True
        while changed:
            changed = False
            for row, f, (target, hf) in self.edges:
                images = {_canonical(self._image(a, hf)) for a in self.cands[target]}
                kept = [a for a in self.cands[row] if _canonical(self.agent_rows[a].get(f)) in images]
                values = {_canonical(self.agent_rows[a].get(f)) for a in kept}
                kept_t = [a for a in self.cands[target] if _canonical(self._image(a, hf)) in values]
                if len(kept) != len(self.cands[row]) or len(kept_t) != len(self.cands[target]):
                    self.cands[row], self.cands[target] = kept, kept_t
                    changed = True
        return all(self.cands[r] for r in self.gold_rows)

    def _consistent(self, sigma: dict[_Row, _Row], row: _Row) -> bool:
        """Every reference between rows already mapped, one end being `row`, maps to its image."""
        for r, f, (t, hf) in self.edges:
            linked = (r == row or t == row) and r in sigma and t in sigma
            if linked and self.agent_rows[sigma[r]].get(f) != self._image(sigma[t], hf):
                return False
        return True

    def _match_free(self, used: set[_Row]) -> dict[_Row, _Row] | None:
        """A maximum bipartite matching of the unlinked gold rows into unused agent rows (Kuhn)."""
        owner: dict[_Row, _Row] = {}

        def augment(row: _Row, seen: set[_Row]) -> bool:
            for cand in self.cands[row]:
                if cand in used or cand in seen:
                    continue
                seen.add(cand)
                if cand not in owner or augment(owner[cand], seen):
                    owner[cand] = row
                    return True
            return False

        for row in self.free:
            if not augment(row, set()):
                return None
        return {row: cand for cand, row in owner.items()}

    def _search(self) -> dict[_Row, _Row] | None:
        """A renaming under which every gold change holds, or None (none exists, or the budget ran out)."""
        if any(c.identity() not in self.made for c in self.fixed) or not self._propagate():
            return None
        sigma: dict[_Row, _Row] = {}

        def extend(i: int) -> dict[_Row, _Row] | None:
            if i == len(self.linked):
                rest = self._match_free(set(sigma.values()))
                return None if rest is None else {**sigma, **rest}
            row = self.linked[i]
            for cand in self.cands[row]:
                self.steps += 1
                if self.steps > MAX_JUDGE_STEPS:
                    return None
                if cand in sigma.values():
                    continue
                sigma[row] = cand
                if self._consistent(sigma, row):
                    found = extend(i + 1)
                    if found is not None:
                        return found
                del sigma[row]
            return None

        return extend(0)

    # --- reporting ----------------------------------------------------------------------------------

    def _greedy(self) -> dict[_Row, _Row]:
        """A best-effort renaming for reporting: each row's first consistent unused candidate, else its
        first unused one (so a row whose only fault is one reference reports just that field)."""
        sigma: dict[_Row, _Row] = {}
        for row in [*self.linked, *self.free]:
            unused = [c for c in self.cands[row] if c not in sigma.values()]
            for cand in unused:
                sigma[row] = cand
                if self._consistent(sigma, row):
                    break
            else:
                if unused:
                    sigma[row] = unused[0]
        return sigma

    def _image_identity(self, c: RowChange, sigma: dict[_Row, _Row]) -> tuple[str, str, str, str, str] | None:
        """The identity gold change `c` takes in Δagent under a (possibly partial) renaming; None where
        σ leaves a row it needs unmapped."""
        home = self._home(c.after)
        want: Any = c.after
        if home is not None:
            if home[0] not in sigma:
                return None
            want = self._image(sigma[home[0]], home[1])
        if c.op == "insert":
            image = sigma.get((c.table, c.key))
            return None if image is None else (image[0], image[1], c.field, c.op, _canonical(want))
        return (c.table, c.key, c.field, c.op, _canonical(want))


def _created(changes: list[RowChange]) -> dict[_Row, dict[str, Any]]:
    rows: dict[_Row, dict[str, Any]] = {}
    for c in changes:
        if c.op == "insert":
            rows.setdefault((c.table, c.key), {})[c.field] = c.after
    return rows


@dataclass(frozen=True)
class DiffVerdict:
    """A world diff judged against Δgold: what the agent left undone and what it changed besides.

    `success` is the benchmark's SR (Δgold ⊆ Δagent up to a renaming σ); `strict_success` adds that
    nothing else changed: every change in Δagent is the image of a gold change under σ. Reads never
    appear in a diff, so a row the agent only read is never collateral.
    """

    missing: list[RowChange]
    collateral: list[RowChange]

    @property
    def success(self) -> bool:
        return not self.missing

    @property
    def strict_success(self) -> bool:
        return not self.missing and not self.collateral

    def collateral_rows(self) -> list[str]:
        """The rows the collateral changes touched, as `table/key`, sorted."""
        return sorted({f"{c.table}/{c.key}" for c in self.collateral})

    def missing_rows(self) -> list[str]:
        """The rows of the gold changes Δagent lacks, as `table/key`, sorted."""
        return sorted({f"{c.table}/{c.key}" for c in self.missing})

    def info(self) -> dict[str, Any]:
        """The verdict as an episode's outcome records it (`Outcome.info`; docs/formats.md)."""
        return {
            "missing_changes": len(self.missing),
            "missing_rows": self.missing_rows(),
            "strict_success": self.strict_success,
            "collateral_changes": len(self.collateral),
            "collateral_rows": self.collateral_rows(),
        }


def judge_diff(
    agent: Iterable[RowChange], gold: Iterable[RowChange], *, generated: Iterable[str] = ()
) -> DiffVerdict:
    """Δagent judged against Δgold: missing gold changes and collateral agent changes under one renaming σ."""
    return _Judgement(agent, gold, generated).judge()


def covers(agent: Iterable[RowChange], gold: Iterable[RowChange], *, generated: Iterable[str] = ()) -> bool:
    """Δgold ⊆ Δagent up to a renaming of generated keys: every change the gold path made, the agent
    made too, leaving the same value, where rows both created may carry each other's generated keys
    and running numbers (`generated`: Δgold's generated values other than keys, `Task.generated_values`)."""
    return not _Judgement(agent, gold, generated).verdict()


def missing_changes(
    agent: Iterable[RowChange], gold: Iterable[RowChange], *, generated: Iterable[str] = ()
) -> list[RowChange]:
    """The gold changes the agent did not make under the closest renaming found (empty when `covers` holds)."""
    return _Judgement(agent, gold, generated).verdict()


class UserInstruction(BaseModel):
    """The user simulator's private manual: it never names tools or the plan."""

    intent: str
    motivation: str = ""
    facts: dict[str, str] = Field(default_factory=dict)
    """What the user may disclose when asked, by a short name ("email", "order number")."""
    rules: list[str] = Field(default_factory=list)


class GoldCall(BaseModel):
    """One call of a task's gold path, with what it returned when the task was validated."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    function: str | None = None
    """The base capability this call implements (the element of the base function sequence)."""


class ScriptedTurn(BaseModel):
    """One turn of a conversation whose user messages are fixed (BFCL multi-turn, AgentDojo).

    The user opens the turn with `text`; the gold path's next `gold_calls` calls answer it, and `reply`
    (when set) is what the reference agent says to close it, for benchmarks that judge the final answer.
    """

    text: str
    gold_calls: int = Field(0, ge=0)
    reply: str | None = None
    new_tools: list[str] = Field(default_factory=list)
    """Tools first shown to the agent at this turn (BFCL miss-func's held-out functions): the agent loop
    leaves them out of the tools it offers before it. The world serves them throughout, as BFCL's
    instances do."""


class ExpectedAction(BaseModel):
    """An action a benchmark's evaluator expects the agent to take (τ²-bench's `Action`)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    compare_args: list[str] | None = None
    """The arguments a matching call must share; None: every argument the call was given."""
    action_id: str | None = None
    requestor: Literal["assistant", "user"] = "assistant"
    info: str | None = None


class JudgeCriteria(BaseModel):
    """What a benchmark's own evaluator checks an episode against (τ²-bench's `evaluation_criteria`)."""

    actions: list[ExpectedAction] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[str] = Field(default_factory=list)
    """Which checks multiply into the reward: DB, ACTION, COMMUNICATE, NL_ASSERTION, ENV_ASSERTION."""


class TaskRevision(BaseModel):
    """A recorded change to a task: tasks are never changed silently."""

    version: int
    reason: str
    fingerprint: str


class Task(BaseModel):
    """One validated task: what the user wants, how the gold path gets it, and the changes it must leave."""

    id: str
    domain: str
    version: int = 1
    public_request: str
    """The one line a user opens with."""
    instruction: UserInstruction
    gold_path: list[GoldCall]
    base_functions: list[str]
    """The capability sequence reference paths are computed over (one per gold call by default)."""
    expected_changes: list[RowChange]
    """Δgold: the row-level changes replaying the gold path from a fresh snapshot produces."""
    generated_values: list[str] = Field(default_factory=list)
    """Values in Δgold the world generated other than created rows' keys (running numbers such as a
    tracking number): judged like keys, so `covers(diff, task.expected_changes,
    generated=task.generated_values)` is the task's success."""
    split: Literal["train", "test"] | None = None
    difficulty: dict[str, Any] = Field(default_factory=dict)
    history: list[TaskRevision] = Field(default_factory=list)
    turns: list[ScriptedTurn] = Field(default_factory=list)
    """A fixed user script, turn by turn (empty: the user simulator converses freely). When set, the first
    turn's text is `public_request` and the turns' `gold_calls` add up to the gold path's length."""
    judge: str | None = None
    """Whose check judges an episode of this task: None is Δgold ⊆ Δagent; `bfcl-multi-turn-checker` and
    `agentdojo-utility` are those benchmarks' own checks (toolshift.world.external); `tau2-evaluator` is
    τ²-bench's reward over `criteria` (toolshift.world.tau2.evaluator)."""
    criteria: JudgeCriteria | None = None
    """The judge's own criteria, as data (τ²-bench's `evaluation_criteria` for `tau2-evaluator`)."""

    @model_validator(mode="after")
    def _turns_fit_gold_path(self) -> Task:
        if self.turns:
            if self.turns[0].text != self.public_request:
                raise ValueError("turns[0].text must be the public request")
            if sum(t.gold_calls for t in self.turns) != len(self.gold_path):
                raise ValueError("the turns' gold_calls must add up to the gold path's length")
        return self

    def turn_paths(self) -> list[list[GoldCall]]:
        """The gold path split by turn (one list per scripted turn; the whole path when there are none)."""
        if not self.turns:
            return [list(self.gold_path)]
        out, start = [], 0
        for turn in self.turns:
            out.append(list(self.gold_path[start : start + turn.gold_calls]))
            start += turn.gold_calls
        return out

    def covered_by(self, diff: Iterable[RowChange]) -> bool:
        """The task's success on a world diff: Δgold ⊆ diff up to a renaming of generated values."""
        return covers(diff, self.expected_changes, generated=self.generated_values)

    def missing_from(self, diff: Iterable[RowChange]) -> list[RowChange]:
        """The gold changes `diff` lacks under the closest renaming (empty exactly when `covered_by`)."""
        return missing_changes(diff, self.expected_changes, generated=self.generated_values)

    def verdict(self, diff: Iterable[RowChange]) -> DiffVerdict:
        """The task's verdict on a world diff: success, and strict success (no collateral write)."""
        return judge_diff(diff, self.expected_changes, generated=self.generated_values)

    def fingerprint(self) -> str:
        """A hash of what defines the task (not its history): changes when the task changes.

        `generated_values`, `turns`, `judge` and `criteria` count only when set, so tasks made before
        those fields existed keep the fingerprints they had.
        """
        exclude = {"history", "version", "split"}
        if not self.generated_values:
            exclude.add("generated_values")
        if not self.turns:
            exclude.add("turns")
        if self.judge is None:
            exclude.add("judge")
        if self.criteria is None:
            exclude.add("criteria")
        body = self.model_dump(mode="json", exclude=exclude)
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
