"""The structural proposer: model-free mutation operators over our task model and the world's schema.

Operators come from the seed's feature taxonomy, each with an inverse:

| harder | feature | easier (inverse) |
|---|---|---|
| `hide_identifier`: a value the user states becomes a lookup ("the patient with email …") | intermediate tool call | `reveal_identifier`: a looked-up value is stated, the lookups it needed dropped |
| `withhold_from_request`: a value leaves the opening line (asked for later) | intermediate tool call | `state_in_request`: the opening line states a value the calls need |
| `add_follow_on`: a second change to the same record (or one it refers to) | multi-step | `drop_step`: the last added change (or a seed's second clause) is dropped |
| `add_filter`: the same change for every sibling record sharing an attribute | constraint & filter | `remove_filter` |
| `add_distractor`: the opening names another record of the same kind | distractor | `remove_distractor` |
| `add_derived_value`: a number or date is given relative to the record's current one | reasoning | `state_value` |

Every operator works on the live world (rows, relations, policy checks through real calls), writes new
ground-truth calls, and returns an `Edit`; the child is then rendered, parsed and verified like any
other. The direction follows the parent's completion rate: above 0.7 harder, below 0.3 easier, between
either; operators that made the step's inspirations weigh more. With `moves="fine"` the fine moves of
`toolshift.evolve.fine` (the path kept, only which values the user gives and when changed) are tried first.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolshift.bench.instructions import _intent_clause, entity_noun, field_words, row_value_text
from toolshift.bench.synthesis import Draft, Rejected, Synthesizer
from toolshift.errors import BadInputError
from toolshift.evolve.edits import Edit, EditError, PlacedCall, Replacement, apply_edit, undo
from toolshift.evolve.fine import FINE_EASIER, FINE_HARDER, FINE_INVERSE_OF, FineOperators
from toolshift.evolve.operators_text import TextOperators
from toolshift.evolve.program import CallSpec, TaskSpec
from toolshift.evolve.scene import (
    SENTENCE_END,
    SENTENCE_SPLIT,
    Scene,
    canon,
    free_name,
    mention,
    user_text,
)
from toolshift.models import Task

HARDER = (
    "hide_identifier",
    "withhold_from_request",
    "add_follow_on",
    "add_filter",
    "add_distractor",
    "add_derived_value",
)
EASIER = (
    "reveal_identifier",
    "state_in_request",
    "drop_step",
    "remove_filter",
    "remove_distractor",
    "state_value",
)
INVERSE_OF = {
    "hide_identifier": "reveal_identifier",
    "withhold_from_request": "state_in_request",
    "reveal_identifier": "hide_identifier",
    "state_in_request": "withhold_from_request",
    "drop_step": "add_follow_on",
    "remove_filter": "add_filter",
    "remove_distractor": "add_distractor",
    "state_value": "add_derived_value",
    **FINE_INVERSE_OF,
}
MOVES = ("coarse", "fine")
FILTER_RULE = "Every record matching your description must be handled, not just one of them."
ONE_MORE = " There is one more thing after that, too."
_THEN = "; then you also want to "


@dataclass
class Lineage:
    """A program's ancestors' structural edits, nearest first: (operator, edit)."""

    edits: list[tuple[str, Edit]] = field(default_factory=list)


@dataclass
class Proposal:
    spec: TaskSpec
    operator: str
    description: str
    edit: Edit


class StructuralProposer(TextOperators, FineOperators):
    """Proposes a child task from a parent by one structural operator (seeded, model-free).

    `moves="fine"` tries the fine moves of the direction first (`toolshift.evolve.fine`), the coarse
    operators only when none of them applies; `"coarse"` (the default) uses the coarse ones alone."""

    name = "structural"

    def __init__(self, moves: str = "coarse") -> None:
        if moves not in MOVES:
            raise ValueError(f"moves must be one of {MOVES}, not {moves!r}")
        self.moves = moves
        self._scenes: dict[str, Scene] = {}

    def scene(self, domain: str) -> Scene:
        if domain not in self._scenes:
            self._scenes[domain] = Scene(domain)
        return self._scenes[domain]

    def propose(
        self,
        task: Task,
        spec: TaskSpec,
        completion: float | None,
        lineage: Lineage,
        rng: random.Random,
        favoured: dict[str, int] | None = None,
        known: Callable[[TaskSpec], bool] | None = None,
    ) -> Proposal:
        """One child: operators of the direction the parent's completion rate calls for, tried in a
        weighted random order until one applies and makes a program `known` does not already hold.
        `EditError` when none does."""
        c = 0.0 if completion is None else completion
        if c > 0.7:
            harder = True
        elif c < 0.3:
            harder = False
        else:
            harder = rng.random() < 0.5
        tiers = [list(HARDER if harder else EASIER)]
        if self.moves == "fine":
            tiers.insert(0, list(FINE_HARDER if harder else FINE_EASIER))
        order: list[str] = []
        for family in tiers:
            weights = {op: 1.0 + (favoured or {}).get(op, 0) for op in family}
            while weights:
                ops = sorted(weights)
                pick = rng.choices(ops, weights=[weights[o] for o in ops])[0]
                order.append(pick)
                del weights[pick]
        scene = self.scene(task.domain)
        tried: list[str] = []
        for op in order:
            try:
                made = getattr(self, op)(scene, task, spec, lineage, rng)
                if made is None:
                    tried.append(f"{op}: does not apply")
                    continue
                edit, description = made
                child = apply_edit(spec, edit)
            except (EditError, Rejected, BadInputError) as exc:  # BadInputError: the world's graph cannot
                tried.append(f"{op}: {exc}")  # synthesise this (a τ² world has no query-type start)
                continue
            if known is not None and known(child):
                tried.append(f"{op}: makes a program the archive holds")
                continue
            return Proposal(child, op, description, edit)
        raise EditError("no operator applies (" + "; ".join(tried)[:400] + ")")

    # --- inverses by lineage ------------------------------------------------------------------------

    def _undo(self, op: str, spec: TaskSpec, lineage: Lineage) -> tuple[Edit, str] | None:
        forward = INVERSE_OF[op]
        for name, edit in lineage.edits:
            if name != forward:
                continue
            try:
                undo(spec, edit)
            except EditError:
                continue
            inverse = edit.inverse()
            # the calls to take out, found by content in this program (the ancestor's indices are stale)
            taken: set[int] = set()
            calls = spec.ground_truth_calls
            for placed in inverse.calls_removed:
                at = next(
                    i for i in range(len(calls) - 1, -1, -1)
                    if i not in taken and calls[i].tool == placed.call.tool and calls[i].arguments == placed.call.arguments
                )  # fmt: skip
                taken.add(at)
                placed.index = at
            return inverse, f"took back an earlier {forward}"
        return None

    # --- intermediate tool calls --------------------------------------------------------------------

    def hide_identifier(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        back = self._undo("hide_identifier", spec, lineage)
        if back is not None:
            return back
        facts = spec.instruction.facts
        said = set(facts.values())
        calls = spec.ground_truth_calls
        setup = spec.initial_state
        options: list[tuple[int, str, str]] = []
        seen: set[str] = set()
        for i, call in enumerate(calls):
            earlier = canon([g.result for g in task.gold_path[:i]])
            for pname, v in call.arguments.items():
                ent = scene.key_entity(call.tool, pname)
                if ent is None or not isinstance(v, str) or v in seen:
                    continue
                seen.add(v)
                if (v in said or v in spec.public_request) and f'"{v}"' not in earlier:
                    options.append((i, ent, v))
        rng.shuffle(options)
        for i, ent, v in options[:4]:
            world = scene.world_after([*setup, *calls[:i]])
            try:
                row = world.runtime.get(ent, v)
                if row is None:
                    continue
                synth = Synthesizer(world, seed=rng.randrange(1 << 30))
                for _ in range(4):
                    try:
                        reach = synth.reach(ent, row, Draft())
                    except Rejected:
                        continue
                    if (
                        not reach.steps
                        or v in reach.facts.values()
                        or any(v in canon(s.args) for s in reach.steps)
                    ):
                        continue
                    return self._hide_edit(
                        spec, i, ent, v, reach
                    ), f"hid {ent} {v} behind a lookup: {reach.phrase}"
            finally:
                world.close()
        return None

    def _hide_edit(self, spec: TaskSpec, i: int, ent: str, v: str, reach: Any) -> Edit:
        facts = spec.instruction.facts
        removed = {k: x for k, x in facts.items() if x == v}
        kept = {k: x for k, x in facts.items() if x != v}
        added: dict[str, str] = {}
        new_facts = {**reach.facts}
        if reach.sibling_fact is not None:
            new_facts[reach.sibling_fact[0]] = reach.sibling_fact[1]
        for k, x in new_facts.items():
            name = free_name({**kept, **added}, k, x)
            if kept.get(name) != x:
                added[name] = x
        noun = entity_noun(ent)
        reps: list[Replacement] = []
        for fld, text in (("public_request", spec.public_request), ("intent", spec.instruction.intent)):
            form = mention(text, noun, v)
            if form is not None:
                reps.append(Replacement(field=fld, old=form, new=reach.phrase))  # type: ignore[arg-type]
        if not any(r.field == "intent" for r in reps):
            reps.append(Replacement(field="intent", old="", new=f" The {noun} you mean is {reach.phrase}."))
        placed = [
            PlacedCall(index=i + j, call=CallSpec(tool=s.tool, arguments=dict(s.args)))
            for j, s in enumerate(reach.steps)
        ]
        return Edit(replacements=reps, facts_removed=removed, facts_added=added, calls_inserted=placed)

    def reveal_identifier(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        back = self._undo("reveal_identifier", spec, lineage)
        if back is not None:
            return back
        text = user_text(spec)
        calls = spec.ground_truth_calls
        options: list[tuple[int, str, str]] = []
        for j, call in enumerate(calls):
            for pname, v in call.arguments.items():
                if not isinstance(v, str) or len(v) < 3 or v in text or not any(ch.isdigit() for ch in v):
                    continue
                if any(f'"{v}"' in canon(g.result) for g in task.gold_path[:j] if g.tool not in scene.writes):
                    options.append((j, pname, v))
        if not options:
            return None
        j, pname, v = options[rng.randrange(len(options))]
        ent = scene.key_entity(calls[j].tool, pname)
        words = f"{entity_noun(ent)} number" if ent else field_words(pname)
        name = free_name(spec.instruction.facts, words, v)
        sentence = f" The {words} is {v}."
        revealed = text + sentence
        removed = self._unneeded_reads(scene, task, spec, revealed)
        return Edit(
            replacements=[Replacement(field="intent", old="", new=sentence)],
            facts_added={name: v},
            calls_removed=[PlacedCall(index=k, call=calls[k]) for k in removed],
        ), f"stated {words} {v}" + (f" and dropped {len(removed)} lookup(s)" if removed else "")

    def _unneeded_reads(
        self, scene: Scene, task: Task, spec: TaskSpec, text: str, drop: set[int] | None = None
    ) -> list[int]:
        """Reads (indices) whose results no remaining later call needs, given what the user now says."""
        calls = spec.ground_truth_calls
        gone = set(drop or ())
        changed = True
        while changed:
            changed = False
            for r in range(len(calls)):
                if r in gone or calls[r].tool in scene.writes:
                    continue
                result = canon(task.gold_path[r].result) if r < len(task.gold_path) else ""
                needed = any(
                    isinstance(v, str) and v not in text and f'"{v}"' in result
                    for j in range(r + 1, len(calls))
                    if j not in gone
                    for v in calls[j].arguments.values()
                )
                if not needed:
                    gone.add(r)
                    changed = True
        return sorted(gone - set(drop or ()))

    def withhold_from_request(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        back = self._undo("withhold_from_request", spec, lineage)
        if back is not None:
            return back
        used = {
            v
            for c in spec.ground_truth_calls
            for v in c.arguments.values()
            if isinstance(v, str) and len(v) >= 3
        }
        request = spec.public_request
        hits = [v for v in sorted(used) if v in request]
        if not hits:
            return None
        v = hits[rng.randrange(len(hits))]
        ent = next(
            (
                scene.key_entity(c.tool, p)
                for c in spec.ground_truth_calls
                for p, x in c.arguments.items()
                if x == v
            ),
            None,
        )
        noun = entity_noun(ent) if ent else "record"
        sentences = [x for x in SENTENCE_SPLIT.split(request) if x]
        holding = [x for x in sentences if v in x]
        if len(sentences) > 1 and len(holding) < len(sentences):
            reps = [
                Replacement(field="public_request", old=" " + x if request.find(x) > 0 else x, new="")
                for x in holding
            ]
        elif f"{noun} {v}" in request:
            reps = [Replacement(field="public_request", old=f"{noun} {v}", new=f"my {noun}")]
        else:
            return None
        facts: dict[str, str] = {}
        if v not in spec.instruction.facts.values():
            facts[free_name(spec.instruction.facts, f"{noun} number", v)] = v
        return Edit(
            replacements=reps, facts_added=facts
        ), f"took {v} out of the opening line (the user gives it when asked)"

    def state_in_request(
        self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random
    ):
        back = self._undo("state_in_request", spec, lineage)
        if back is not None:
            return back
        used = [
            v
            for c in spec.ground_truth_calls
            if c.tool in scene.writes
            for v in c.arguments.values()
            if isinstance(v, str)
        ]
        facts = [
            (k, v) for k, v in spec.instruction.facts.items() if v in used and v not in spec.public_request
        ]
        if not facts:
            return None
        k, v = facts[rng.randrange(len(facts))]
        sentence = f" My {k} is {v}."
        return Edit(
            replacements=[Replacement(field="public_request", old="", new=sentence)]
        ), f"stated {k} {v} in the opening line"

    # --- steps ------------------------------------------------------------------------------------

    def add_follow_on(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        rows = list(dict.fromkeys((c.table, c.key) for c in task.expected_changes if c.table in scene.ent))
        if not rows:
            return None
        world = scene.world_after([*spec.initial_state, *spec.ground_truth_calls])
        try:
            synth = Synthesizer(world, seed=rng.randrange(1 << 30))
            table, key = rows[rng.randrange(len(rows))]
            row = world.runtime.get(table, key)
            if row is None:
                return None
            noun = entity_noun(table)
            known_types = {f"key:{table}"}
            base: dict[tuple[str, str], str] = {(table, key): f"the same {noun}"}
            for f in scene.ent[table].fields:
                if f.type == "ref" and f.ref and row.get(f.name):
                    base[(f.ref, str(row[f.name]))] = f"the {entity_noun(f.ref)} of the same {noun}"
                    known_types.add(f"key:{f.ref}")
            made = {c.tool for c in spec.ground_truth_calls}
            tools = [
                w for w in synth.usable_writes
                if w not in made and any(p.vtype in known_types for p in scene.sigs[w].key_params)
            ]  # fmt: skip
            rng.shuffle(tools)
            tools.sort(key=lambda w: scene.sigs[w].kind != "action")  # the domain's own actions first
            for tool in tools[:6]:
                draft = Draft(known=dict(base))
                mark = world.snapshot()
                try:
                    synth.add_write(draft, tool, prefer_known=True)
                    changed = bool(world.diff(mark))
                except Rejected:
                    changed = False
                if not changed:  # refused by the world's policy, or a change that changes nothing
                    world.restore(mark)
                    mark.close()
                    continue
                mark.close()
                clause = _intent_clause(draft.intents[-1])
                sentence = f" Then you also want to {clause}."
                added = {}
                for k, x in draft.facts.items():
                    if spec.instruction.facts.get(k) != x:
                        added[free_name({**spec.instruction.facts, **added}, k, x)] = x
                n = len(spec.ground_truth_calls)
                placed = [
                    PlacedCall(index=n + j, call=CallSpec(tool=s.tool, arguments=dict(s.args)))
                    for j, s in enumerate(draft.steps)
                ]
                reps = [Replacement(field="intent", old="", new=sentence)]
                if ONE_MORE not in spec.public_request:
                    reps.append(Replacement(field="public_request", old="", new=ONE_MORE))
                return Edit(
                    replacements=reps, facts_added=added, calls_inserted=placed
                ), f"added a follow-on change: {clause}"
        finally:
            world.close()
        return None

    def drop_step(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        back = self._undo("drop_step", spec, lineage)
        if back is not None:
            return back
        intent = spec.instruction.intent
        at = intent.rfind(_THEN)
        calls = spec.ground_truth_calls
        writes = [i for i, c in enumerate(calls) if c.tool in scene.writes]
        if at < 0 or len(writes) < 2:
            return None
        stop = SENTENCE_END.search(intent, at)
        clause = intent[at : stop.start() if stop else len(intent)]
        last = writes[-1]
        remaining = intent.replace(clause, "", 1)
        text = " ".join([spec.public_request, remaining, *spec.instruction.facts.values()])
        reads = self._unneeded_reads(scene, task, spec, text, drop={last})
        reps = [Replacement(field="intent", old=clause, new="")]
        if ONE_MORE in spec.public_request and _THEN not in remaining:
            reps.append(Replacement(field="public_request", old=ONE_MORE, new=""))
        removed = sorted({last, *reads})
        return Edit(replacements=reps, calls_removed=[PlacedCall(index=k, call=calls[k]) for k in removed]), (
            f"dropped the last change ({calls[last].tool}) and {len(reads)} lookup(s) only it needed"
        )

    # --- filters ------------------------------------------------------------------------------------

    def add_filter(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        calls = spec.ground_truth_calls
        options = []
        for w, call in enumerate(calls):
            sig = scene.sigs.get(call.tool)
            if sig is None or sig.kind not in ("update", "action", "delete") or not sig.key_params:
                continue
            p = sig.key_params[0]
            if isinstance(call.arguments.get(p.name), str):
                options.append((w, p.name, p.vtype.removeprefix("key:")))
        rng.shuffle(options)
        for w, pname, ent in options[:3]:
            made = self._filter_for(scene, spec, w, pname, ent, rng)
            if made is not None:
                return made
        return None

    def _filter_for(self, scene: Scene, spec: TaskSpec, w: int, pname: str, ent: str, rng: random.Random):
        calls = spec.ground_truth_calls
        e = scene.ent.get(ent)
        if e is None:
            return None
        k = calls[w].arguments[pname]
        world = scene.world_after([*spec.initial_state, *calls[:w]])
        try:
            row = world.runtime.get(ent, k)
            rels = list(scene.relations_into.get(ent, []))
            rng.shuffle(rels)
            for tool, parent, via in rels:
                if row is None or not row.get(via):
                    continue
                siblings = world.runtime.find(ent, **{via: row[via]})
                if len(siblings) > 20:
                    continue
                enums = [f for f in e.fields if f.type == "enum" and f.name not in calls[w].arguments]
                rng.shuffle(enums)
                for f in enums:
                    group = [s for s in siblings if s.get(f.name) == row.get(f.name) and str(s[e.key]) != k]
                    if not 1 <= len(group) <= 2 or len(siblings) - len(group) - 1 < 1:
                        continue
                    pe = scene.ent[parent]
                    listing = CallSpec(tool=tool, arguments={pe.key: str(row[via])})
                    inserted: list[PlacedCall] = []
                    at = w
                    if not any(c.tool == tool and c.arguments == listing.arguments for c in calls[:w]):
                        inserted.append(PlacedCall(index=w, call=listing))
                        at = w + 1
                    for j, s in enumerate(group):
                        args = {**calls[w].arguments, pname: str(s[e.key])}
                        inserted.append(
                            PlacedCall(index=at + 1 + j, call=CallSpec(tool=calls[w].tool, arguments=args))
                        )
                    edit = Edit(calls_inserted=inserted)
                    if not scene.replays([*spec.initial_state, *apply_edit(spec, edit).ground_truth_calls]):
                        continue
                    parent_row = world.runtime.get(parent, row[via]) or {}
                    label = pe.label or (pe.lookup[0] if pe.lookup else pe.key)
                    pval = row_value_text(parent_row.get(label, row[via]))
                    pnoun, noun = entity_noun(parent), entity_noun(ent)
                    value = row_value_text(row.get(f.name))
                    sentence = (
                        f" Do the same for every other {noun} of the {pnoun} {pval} whose "
                        f"{field_words(f.name, noun)} is {value}: all of them, not just one."
                    )
                    facts: dict[str, str] = {}
                    for name, x in (
                        (f"{pnoun} {field_words(label, pnoun)}", pval),
                        (f"{noun} {field_words(f.name, noun)}", value),
                    ):
                        if x not in spec.instruction.facts.values():
                            facts[free_name({**spec.instruction.facts, **facts}, name, x)] = x
                    edit.replacements = [Replacement(field="intent", old="", new=sentence)]
                    edit.facts_added = facts
                    if FILTER_RULE not in spec.instruction.rules:
                        edit.rules_added = [FILTER_RULE]
                    return (
                        edit,
                        f"the change now applies to every {noun} of the {pnoun} whose {f.name} is {value}",
                    )
        finally:
            world.close()
        return None

    def remove_filter(self, scene: Scene, task: Task, spec: TaskSpec, lineage: Lineage, rng: random.Random):
        return self._undo("remove_filter", spec, lineage)
