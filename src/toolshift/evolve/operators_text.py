"""The structural operators that change what the user says but not the path's shape: distractors, and values
given against a record's own (`add_derived_value`), each with its inverse (taken back through the lineage).

A mixin of `StructuralProposer` (which supplies `_undo`); split from `structural` to keep files short.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from toolshift.bench.instructions import entity_noun, row_value_text
from toolshift.evolve.edits import Edit, Replacement
from toolshift.evolve.program import TaskSpec
from toolshift.evolve.scene import Scene, free_name, relative, user_text
from toolshift.models import Task

if TYPE_CHECKING:
    from toolshift.evolve.structural import Lineage


class TextOperators:
    """Distractors and derived values (see `toolshift.evolve.structural` for the operator table)."""

    def _undo(self, op: str, spec: TaskSpec, lineage: Lineage) -> Any:  # supplied by StructuralProposer
        raise NotImplementedError

    # --- distractors ----------------------------------------------------------------------------------

    def add_distractor(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        tables = list(dict.fromkeys(c.table for c in task.expected_changes if c.table in scene.ent))
        if not tables:
            return None
        ent = tables[rng.randrange(len(tables))]
        e = scene.ent[ent]
        touched = {c.key for c in task.expected_changes if c.table == ent}
        others = scene.nameable_others(list(spec.initial_state), ent, touched)
        if not others:
            return None
        other = others[rng.randrange(len(others))]
        text = user_text(spec)
        by_id = any(k in text for k in touched)
        label = e.label or (e.lookup[0] if e.lookup else e.key)
        value = str(other[e.key]) if by_id or not other.get(label) else row_value_text(other[label])
        noun = entity_noun(ent)
        # a plain sentence of the request, as a person marks off a record that looks alike (no aside)
        templates = (
            f" Please leave {noun} {value} as it is.",
            f" It is not {noun} {value}; that one stays as it is.",
            f" {noun[:1].upper()}{noun[1:]} {value} needs no change.",
        )
        sentence = templates[rng.randrange(len(templates))]
        if sentence in spec.public_request:
            return None
        name = free_name(spec.instruction.facts, f"unrelated {noun}", value)
        return Edit(
            replacements=[Replacement(field="public_request", old="", new=sentence)],
            facts_added={name: value},
        ), (f"the opening line now mentions another {noun}, {value}")

    def remove_distractor(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        return self._undo("remove_distractor", spec, lineage)

    # --- derived values -------------------------------------------------------------------------------

    def add_derived_value(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        """A value the change sets, given relative to the record's current one ("5.00 more than it is
        now"): the agent reads the record and works the value out; the user states the change, a value."""
        facts, calls = spec.instruction.facts, spec.ground_truth_calls
        options = []
        for i, c in enumerate(calls):
            sig = scene.sigs.get(c.tool)
            if c.tool not in scene.writes or sig is None or not sig.key_params:
                continue
            kp = sig.key_params[0]
            if not isinstance(c.arguments.get(kp.name), str):
                continue
            for pname, v in c.arguments.items():
                if pname == kp.name or isinstance(v, bool) or not isinstance(v, int | float | str):
                    continue
                for k, fv in facts.items():
                    if fv in (str(v), row_value_text(v)) and fv in spec.instruction.intent:
                        options.append(
                            (i, kp.vtype.removeprefix("key:"), c.arguments[kp.name], pname, v, k, fv)
                        )
        rng.shuffle(options)
        for i, ent, key, pname, v, k, fv in options[:4]:
            world = scene.world_after([*spec.initial_state, *calls[:i]])
            try:
                row = world.runtime.get(ent, key)
            finally:
                world.close()
            made = relative(row.get(pname), v) if row else None
            if made is None:
                continue
            phrase, amount = made
            reps = [
                Replacement(field=fld, old=fv, new=phrase)  # type: ignore[arg-type]
                for fld, text in (
                    ("intent", spec.instruction.intent),
                    ("public_request", spec.public_request),
                )
                if fv in text
            ]
            name = free_name({kk: x for kk, x in facts.items() if kk != k}, f"change in {k}", amount)
            return Edit(replacements=reps, facts_removed={k: fv}, facts_added={name: amount}), (
                f"{k} {fv} is now given as {phrase} (the user states the change, {amount})"
            )
        return None

    def state_value(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        return self._undo("state_value", spec, lineage)
