"""The models every capability shares: tool effects, row-level state changes, and the one task model.

A world's state change (Δ) is a list of `RowChange`s; task success everywhere in toolshift is
"Δgold ⊆ Δagent" (`covers`). The `Task` model is the one produced by benchmark synthesis and
consumed by agent runs, metrics and task evolution.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
    return json.dumps(value, sort_keys=True, default=str)


def covers(agent: Iterable[RowChange], gold: Iterable[RowChange]) -> bool:
    """Δgold ⊆ Δagent: every change the gold path made, the agent made too, leaving the same value."""
    made = {c.identity() for c in agent}
    return all(c.identity() in made for c in gold)


def missing_changes(agent: Iterable[RowChange], gold: Iterable[RowChange]) -> list[RowChange]:
    """The gold changes the agent did not make (empty when `covers` holds)."""
    made = {c.identity() for c in agent}
    return [c for c in gold if c.identity() not in made]


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
    split: Literal["train", "test"] | None = None
    difficulty: dict[str, Any] = Field(default_factory=dict)
    history: list[TaskRevision] = Field(default_factory=list)

    def fingerprint(self) -> str:
        """A hash of what defines the task (not its history): changes when the task changes."""
        body = self.model_dump(mode="json", exclude={"history", "version", "split"})
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
