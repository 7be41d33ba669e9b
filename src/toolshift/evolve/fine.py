"""The structural proposer's fine moves: changes of what the user says, and when, that leave the path as it is.

A mixin of `StructuralProposer` (which supplies `_undo`). The coarse operators add or remove a step; for a
small solver each such step was a cliff (D206: 1.0 → 0.0 and 0.0 → 0.0 on every one of generation 1's
children). What its generation-1 episodes showed (D207): it writes the first identifier it is given, and an
attempt succeeded when the user's first reply named the record to change (by the fact asked for, or by
restating the request) and failed when it named another value, which it then chased. The fine moves change
only that — which values the user gives, in what order, and when — so each child keeps its parent's
ground-truth calls and is verified on a fresh world like any other:

| harder | easier (inverse) |
|---|---|
| `ask_for_target`: the intent says "my appointment" for the record's identifier; the user gives it only when asked for it by name | `name_target` (lineage) |
| `add_late_distractor`: the intent, after the record it names, names another of its kind that needs no change | `remove_late_distractor` (lineage) |
| `add_related_fact`: the user also knows a value of the record (its doctor's id), and gives it when asked | `drop_related_fact` (lineage) |
| `unstate_intent` / `unstate_lookup_value` (lineage) | `state_intent`: the opening line states the change the intent asks for; `state_lookup_value`: the opening line states a value a lookup needs ("My full name is Ana Abbott.") |
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from toolshift.bench.instructions import entity_noun
from toolshift.evolve.edits import Edit, Replacement
from toolshift.evolve.program import TaskSpec
from toolshift.evolve.scene import SENTENCE_SPLIT, Scene, free_name
from toolshift.models import Task

if TYPE_CHECKING:
    from toolshift.evolve.structural import Lineage

FINE_HARDER = (
    "ask_for_target",
    "add_late_distractor",
    "add_related_fact",
    "unstate_intent",
    "unstate_lookup_value",
)
FINE_EASIER = (
    "name_target",
    "remove_late_distractor",
    "drop_related_fact",
    "state_intent",
    "state_lookup_value",
)
FINE_INVERSE_OF = {
    "ask_for_target": "name_target",
    "name_target": "ask_for_target",
    "add_late_distractor": "remove_late_distractor",
    "remove_late_distractor": "add_late_distractor",
    "add_related_fact": "drop_related_fact",
    "drop_related_fact": "add_related_fact",
    "state_intent": "unstate_intent",
    "unstate_intent": "state_intent",
    "state_lookup_value": "unstate_lookup_value",
    "unstate_lookup_value": "state_lookup_value",
}
_NOT_A_VERB = frozenset(("i", "my", "the", "a", "an", "this", "that", "it", "we", "our", "your", "please"))
_ID_WORDS = frozenset(("id", "number", "code"))


def targets(scene: Scene, spec: TaskSpec) -> list[tuple[int, str, str]]:
    """The records the path's writes change, named by their key: (call index, entity, identifier)."""
    out: list[tuple[int, str, str]] = []
    for i, c in enumerate(spec.ground_truth_calls):
        sig = scene.sigs.get(c.tool)
        if c.tool not in scene.writes or sig is None or not sig.key_params:
            continue
        kp = sig.key_params[0]
        v = c.arguments.get(kp.name)
        if isinstance(v, str) and kp.vtype.startswith("key:") and all(v != t[2] for t in out):
            out.append((i, kp.vtype.removeprefix("key:"), v))
    return out


class FineOperators:
    """The fine moves (see the module's table)."""

    def _undo(self, op: str, spec: TaskSpec, lineage: Lineage) -> Any:  # supplied by StructuralProposer
        raise NotImplementedError

    # --- when the record's identifier is given -----------------------------------------------------------

    def ask_for_target(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        """The intent stops naming the record by its identifier ("Cancel my appointment."); the value stays a
        fact, so the user gives it when asked for it by name, and restating the request no longer does."""
        back = self._undo("ask_for_target", spec, lineage)
        if back is not None:
            return back
        intent, facts = spec.instruction.intent, spec.instruction.facts
        options = []
        for _, _ent, v in targets(scene, spec):
            if v in spec.public_request:
                continue
            for k, fv in facts.items():
                base = " ".join(w for w in k.split() if w not in _ID_WORDS)
                if fv != v or not base:
                    continue
                for form in (f"{base} {v}", f"{base.capitalize()} {v}"):
                    if form in intent:
                        mine = "my" if form[0].islower() else "My"
                        options.append((form, f"{mine} {base}", v))
        if not options:
            return None
        form, new, v = options[rng.randrange(len(options))]
        if intent.count(v) != 1:
            return None  # the identifier said twice: taking one out would leave it said
        return Edit(replacements=[Replacement(field="intent", old=form, new=new)]), (
            f"the request says {new!r} for {v}, which the user gives only when asked for it"
        )

    def name_target(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        return self._undo("name_target", spec, lineage)

    # --- another record, after the one meant -------------------------------------------------------------

    def add_late_distractor(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        """Another record of the changed kind, named after the one meant and only in the request the user
        restates (the intent), never in the opening line: a solver reading in order meets the right one first."""
        back = self._undo("add_late_distractor", spec, lineage)
        if back is not None:
            return back
        found = targets(scene, spec)
        if not found:
            return None
        _, ent, v = found[rng.randrange(len(found))]
        if v not in spec.instruction.intent:
            return None
        e = scene.ent.get(ent)
        if e is None:
            return None
        touched = {t[2] for t in found}
        others = [str(r[e.key]) for r in scene.nameable_others(list(spec.initial_state), ent, touched)]
        if not others:
            return None
        other = others[rng.randrange(len(others))]
        noun = entity_noun(ent)
        sentence = f" {noun[:1].upper()}{noun[1:]} {other} needs no change."
        if "needs no change." in spec.instruction.intent:
            return None
        name = free_name(spec.instruction.facts, f"unrelated {noun}", other)
        return Edit(
            replacements=[Replacement(field="intent", old="", new=sentence)], facts_added={name: other}
        ), f"the request, after {noun} {v}, names another {noun}, {other}, that needs no change"

    def remove_late_distractor(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        return self._undo("remove_late_distractor", spec, lineage)

    # --- a value the user knows and the path does not need -----------------------------------------------

    def add_related_fact(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        """The user also knows the identifier of a record the changed one refers to (its doctor, its
        patient) and gives it when asked for it: a true fact the path does not need."""
        back = self._undo("add_related_fact", spec, lineage)
        if back is not None:
            return back
        found = targets(scene, spec)
        said = set(spec.instruction.facts.values())
        used = {str(v) for c in spec.ground_truth_calls for v in c.arguments.values()}
        options = []
        world = scene.world_after(list(spec.initial_state))
        try:
            for _, ent, v in found:
                e = scene.ent.get(ent)
                row = world.runtime.get(ent, v) if e is not None else None
                if e is None or row is None:
                    continue
                for f in e.fields:
                    x = row.get(f.name)
                    if f.type != "ref" or not f.ref or not isinstance(x, str) or x in said or x in used:
                        continue
                    options.append((f"{entity_noun(f.ref)} id", x, entity_noun(ent)))
        finally:
            world.close()
        options = [o for o in options if o[0] not in spec.instruction.facts]
        if not options:
            return None
        name, x, noun = options[rng.randrange(len(options))]
        return Edit(
            facts_added={name: x}
        ), f"the user also knows the {noun}'s {name}, {x}, and gives it when asked"

    def drop_related_fact(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        return self._undo("drop_related_fact", spec, lineage)

    # --- what the opening line says ----------------------------------------------------------------------

    def state_intent(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        """The opening line goes on to say the change itself ("I want to cancel shipment SHP-000001 and
        return its pallets to zone Z-002."): the intent's first sentence, when it names a value the writes
        need that the opening line does not."""
        back = self._undo("state_intent", spec, lineage)
        if back is not None:
            return back
        first = next((s for s in SENTENCE_SPLIT.split(spec.instruction.intent.strip()) if s), "")
        words = first.split()
        if not words or words[0].lower() in _NOT_A_VERB or not first.endswith("."):
            return None
        needed = {
            str(v)
            for c in spec.ground_truth_calls
            if c.tool in scene.writes
            for v in c.arguments.values()
            if isinstance(v, str) and len(v) >= 3
        }
        if not any(v in first and v not in spec.public_request for v in needed):
            return None
        sentence = f" I want to {words[0].lower()} {' '.join(words[1:])}".rstrip()
        return Edit(replacements=[Replacement(field="public_request", old="", new=sentence)]), (
            "the opening line now states the change: " + sentence.strip()
        )

    def unstate_intent(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        return self._undo("unstate_intent", spec, lineage)

    def state_lookup_value(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        """The opening line states a fact only the path's lookups need (a name to search by), which the
        user otherwise gives only when asked for it by name."""
        back = self._undo("state_lookup_value", spec, lineage)
        if back is not None:
            return back
        calls = spec.ground_truth_calls
        reads = {
            v for c in calls if c.tool not in scene.writes for v in c.arguments.values() if isinstance(v, str)
        }
        writes = {
            v for c in calls if c.tool in scene.writes for v in c.arguments.values() if isinstance(v, str)
        }
        text = spec.public_request + " " + spec.instruction.intent
        options = [
            (k, v)
            for k, v in spec.instruction.facts.items()
            if v in reads and v not in writes and v not in text
        ]
        if not options:
            return None
        k, v = options[rng.randrange(len(options))]
        sentence = f" My {k} is {v}."
        return Edit(replacements=[Replacement(field="public_request", old="", new=sentence)]), (
            f"stated {k} {v}, which a lookup needs, in the opening line"
        )

    def unstate_lookup_value(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        return self._undo("unstate_lookup_value", spec, lineage)
