"""Structural edits of a task: text replacements, facts, rules and ground-truth calls, and their undoing.

A structural operator's change is an `Edit`; it is stored with the child (`Mutation.added`) so a later
inverse operator can take exactly that change back from a descendant — drop the step it added, remove
the filter or distractor, state the value again — as long as what it added is still there.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from toolshift.evolve.program import CallSpec, InstructionSpec, TaskSpec

TextField = Literal["intent", "public_request"]


class Replacement(BaseModel):
    field: TextField
    old: str
    new: str


class PlacedCall(BaseModel):
    index: int
    call: CallSpec


class Edit(BaseModel):
    """One operator's change to a task."""

    replacements: list[Replacement] = Field(default_factory=list)
    facts_removed: dict[str, str] = Field(default_factory=dict)
    facts_added: dict[str, str] = Field(default_factory=dict)
    rules_added: list[str] = Field(default_factory=list)
    rules_removed: list[str] = Field(default_factory=list)
    calls_removed: list[PlacedCall] = Field(default_factory=list)
    """Indices in the parent's ground truth."""
    calls_inserted: list[PlacedCall] = Field(default_factory=list)
    """Indices in the child's ground truth (after removals)."""

    def inverse(self) -> Edit:
        return Edit(
            replacements=[
                Replacement(field=r.field, old=r.new, new=r.old) for r in reversed(self.replacements)
            ],
            facts_removed=dict(self.facts_added),
            facts_added=dict(self.facts_removed),
            rules_added=list(self.rules_removed),
            rules_removed=list(self.rules_added),
            calls_removed=list(self.calls_inserted),
            calls_inserted=list(self.calls_removed),
        )


class EditError(ValueError):
    """The edit does not fit the task (a text, fact or call it needs is not there)."""


def _same(a: CallSpec, b: CallSpec) -> bool:
    return a.tool == b.tool and a.arguments == b.arguments


def apply_edit(spec: TaskSpec, edit: Edit, *, by_content: bool = False) -> TaskSpec:
    """The task with `edit` applied; `by_content` finds removed calls by content instead of index (undo)."""
    texts: dict[str, str] = {"intent": spec.instruction.intent, "public_request": spec.public_request}
    for r in edit.replacements:
        if r.old not in texts[r.field]:
            raise EditError(f"{r.field} no longer contains {r.old[:60]!r}")
        texts[r.field] = texts[r.field].replace(r.old, r.new, 1) if r.old else texts[r.field] + r.new
    facts = dict(spec.instruction.facts)
    for k, v in edit.facts_removed.items():
        if facts.get(k) != v:
            raise EditError(f"fact {k!r} is not {v!r}")
        del facts[k]
    for k, v in edit.facts_added.items():
        if k in facts and facts[k] != v:
            raise EditError(f"fact {k!r} already holds another value")
        facts[k] = v
    rules = [r for r in spec.instruction.rules if r not in edit.rules_removed]
    rules += [r for r in edit.rules_added if r not in rules]
    calls = list(spec.ground_truth_calls)
    for placed in sorted(edit.calls_removed, key=lambda p: -p.index):
        if by_content:
            at = next((i for i in range(len(calls) - 1, -1, -1) if _same(calls[i], placed.call)), None)
            if at is None:
                raise EditError(f"the ground truth no longer makes {placed.call.tool}")
            del calls[at]
        else:
            if placed.index >= len(calls) or not _same(calls[placed.index], placed.call):
                raise EditError(f"call {placed.index} is not {placed.call.tool}")
            del calls[placed.index]
    for placed in sorted(edit.calls_inserted, key=lambda p: p.index):
        calls.insert(min(placed.index, len(calls)), placed.call)
    if not calls:
        raise EditError("the ground truth would be empty")
    if not texts["intent"].strip() or not texts["public_request"].strip():
        raise EditError("the instruction would be empty")
    return spec.model_copy(
        update={
            "public_request": texts["public_request"],
            "instruction": InstructionSpec(
                intent=texts["intent"],
                motivation=spec.instruction.motivation,
                facts=facts,
                rules=rules,
            ),
            "ground_truth_calls": calls,
        }
    )


def undo(spec: TaskSpec, edit: Edit) -> TaskSpec:
    """Take an ancestor's edit back from a descendant (`EditError` when it is no longer all there)."""
    return apply_edit(spec, edit.inverse(), by_content=True)


def edit_json(edit: Edit) -> dict[str, Any]:
    return edit.model_dump(mode="json")
