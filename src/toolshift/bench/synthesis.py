"""Task synthesis: sample graph paths from query-type starts, instantiate them on seeded rows, keep what replays.

One attempt picks a write tool, then walks the dependency graph backwards from each row it needs
to a read that takes something a user would know (an email, a name, an order number): directly,
through a parent's relation traversal, or through a row that refers to it. Candidate rows are
tried on the live world until the write's preconditions hold. Difficulty grows by repeating the
write for several sibling rows picked by one attribute, and by splicing a second write that reuses
a row the path already found. The finished path is replayed on a fresh snapshot; a task is kept
only if every step succeeds and the filters (specific, coherent, covers its functions, not
true already, not solvable by reading) pass. Rejections are counted by reason.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from toolshift.bench.audit import TaskReader, delta_signature, same_delta
from toolshift.bench.drafts import (
    Draft,
    Reach,
    Rejected,
    Step,
    SynthesisReport,
    WriteIntent,
    add_fact,
    stable_rng,
)
from toolshift.bench.graph import (
    DependencyGraph,
    Param,
    ToolSignature,
    build_graph,
    require_usable,
    signatures,
)
from toolshift.bench.instructions import (
    attribute_phrase,
    entity_noun,
    fact_key,
    field_words,
    make_instruction,
    missing_facts,
    role_words,
    row_value_text,
)
from toolshift.bench.reaching import Reaching
from toolshift.bench.values import WriteValues, canonical, generated_values, managed_fields
from toolshift.models import GoldCall, RowChange, Task, UserInstruction, covers
from toolshift.world.language.spec import DomainSpec, EntitySpec
from toolshift.world.state.world import World

MAX_DEPTH = 3
CANDIDATES_PER_WRITE = 14
REPEAT_CHANCE = 0.45
"""Chance an attempt repeats its write over the anchor row's siblings (subpath repetition)."""
SPLICE_CHANCE = 0.55
"""Chance an attempt splices a second write on a row the path holds or refers to."""
PAGE = 20


class Synthesizer(Reaching, WriteValues):
    """Makes validated tasks for one compiled domain, deterministically from a seed."""

    def __init__(self, world: World, *, seed: int = 0) -> None:
        self.world = world
        self.spec: DomainSpec = world.domain.spec
        self.sigs: dict[str, ToolSignature] = signatures(world.tools, self.spec)
        self.graph: DependencyGraph = build_graph(self.spec, self.sigs)
        self.usable_writes = require_usable(self.graph)
        self.base = world.snapshot()
        self.seed = seed
        self.rng = stable_rng("synthesis", seed, self.spec.name)
        self.ent: dict[str, EntitySpec] = {e.name: e for e in self.spec.entities}
        self._tool_names = sorted(self.sigs, key=len, reverse=True)
        self.by_kind: dict[tuple[str, str], str] = {}
        for s in self.sigs.values():
            if s.kind in ("get", "list", "search", "create", "update", "delete") and s.entity:
                self.by_kind[(s.kind, s.entity)] = s.name
        self.candidate_rejections: Counter[str] = Counter()
        self.policy_codes: dict[str, tuple[str, ...]] = {
            t.name: tuple(t.meta.get("preconditions", ())) for t in world.tools
        }
        for act in self.spec.actions:
            name = self.spec.tool_prefix + act.name
            self.policy_codes[name] = self.policy_codes.get(name, ()) + tuple(_FAIL_CALL.findall(act.code))
        self.error_examples: dict[str, str] = {}
        """First message seen for each failure reason (a `call_error:*` usually means a spec bug)."""
        self.managed = managed_fields(self.spec)
        """Fields custom actions change: plain updates and creates leave them to the actions' policies."""
        self.relations_into: dict[str, list[ToolSignature]] = {}
        for s in self.sigs.values():
            if s.kind == "relation" and s.rows_of:
                self.relations_into.setdefault(s.rows_of, []).append(s)

    # --- state access -----------------------------------------------------------------------------

    def run(self, draft: Draft, step: Step) -> Any:
        res = self.world.call(step.tool, step.args)
        if not res.ok:
            err = res.error or {}
            code = err.get("code", "error")
            policy = code in self.policy_codes.get(step.tool, ())
            reason = f"precondition:{code}" if policy else f"call_error:{code}"
            self.error_examples.setdefault(reason, f"{step.tool}: {err.get('message', '')}")
            raise Rejected(reason)
        step.result = res.result
        draft.steps.append(step)
        return res.result

    # --- writes ------------------------------------------------------------------------------------

    def _candidate_rows(self, entity: str, draft: Draft, prefer_known: bool) -> list[dict[str, Any]]:
        rows = self.rows(entity)
        near = draft.known.keys() | draft.related
        known = [r for r in rows if (entity, str(r[self.ent[entity].key])) in near]
        rest = [r for r in rows if (entity, str(r[self.ent[entity].key])) not in near]
        self.rng.shuffle(rest)
        if prefer_known and known:
            self.rng.shuffle(known)
            return known + rest
        return rest + known

    def add_write(
        self, draft: Draft, tool: str, *, prefer_known: bool = False
    ) -> tuple[Step, dict[str, Any]]:
        """Instantiate one write with rows that satisfy its preconditions; append reads + write."""
        sig = self.sigs[tool]
        last: Rejected | None = None
        for _ in range(CANDIDATES_PER_WRITE):
            mark = len(draft.steps)
            saved = dict(draft.facts), dict(draft.known), dict(draft.sibling_facts), set(draft.related)
            try:
                return self._try_write(draft, sig, prefer_known)
            except Rejected as exc:
                last = exc
                self.candidate_rejections[exc.reason] += 1
                del draft.steps[mark:]
                draft.facts, draft.known, draft.sibling_facts, draft.related = saved
        raise last or Rejected(f"no_candidate:{tool}")

    def _pick_rows(self, sig: ToolSignature, draft: Draft, prefer_known: bool) -> dict[str, dict[str, Any]]:
        picked: dict[str, dict[str, Any]] = {}
        for p in sig.key_params:
            if not p.required and sig.kind not in ("create",):
                continue
            if not p.required and (
                self.rng.random() < 0.6 or p.name in self.managed.get(sig.entity or "", set())
            ):
                continue
            ent = p.vtype.removeprefix("key:")
            rows = self._candidate_rows(ent, draft, prefer_known)
            if not rows:
                raise Rejected(f"no_rows:{ent}")
            picked[p.name] = rows[0]
        return picked

    def _try_write(self, draft: Draft, sig: ToolSignature, prefer_known: bool) -> tuple[Step, dict[str, Any]]:
        picked = self._pick_rows(sig, draft, prefer_known)
        args: dict[str, Any] = {}
        details: list[tuple[str, str]] = []
        reaches: list[tuple[str, Reach]] = []
        for pname, row in picked.items():
            p = sig.param(pname)
            assert p is not None
            ent = p.vtype.removeprefix("key:")
            r = self.reach(ent, row, draft)
            reaches.append((pname, r))
            args[pname] = str(row[self.ent[ent].key])
        rows = list(picked.values())
        noun = entity_noun(sig.entity or self._anchor_entity(sig))
        kind = sig.kind
        if kind == "update":
            e = self.ent[sig.entity or ""]
            row = picked[e.key]
            choices = [
                f
                for f in e.fields
                if f.name != e.key
                and not f.unique
                and f.type not in ("ref",)
                and f.name not in self.managed.get(e.name, set())
                and (f.values or f.gen or f.type == "text")
            ]
            self.rng.shuffle(choices)
            n = 1 if self.rng.random() < 0.7 else 2
            for f in choices[:n]:
                p = Param(f.name, f"value:{f.type}", False, f.type, f.values)
                v = self.value_for(p, rows, e.name, row.get(f.name))
                for _ in range(4):
                    if v != row.get(f.name):
                        break
                    v = self.value_for(p, rows, e.name, row.get(f.name))
                if v == row.get(f.name):
                    continue
                args[f.name] = v
                details.append((field_words(f.name, noun), row_value_text(v)))
            if not details:
                raise Rejected("no_change")
        elif kind in ("create", "action"):
            for p in sig.params:
                if p.name in args or p.vtype.startswith("key:"):
                    continue
                if not p.required and self.rng.random() < (0.75 if kind == "create" else 0.6):
                    continue
                if (
                    kind == "create"
                    and not p.required
                    and p.name in self.managed.get(sig.entity or "", set())
                ):
                    continue
                v = self.value_for(p, rows, sig.entity)
                args[p.name] = v
                details.append((field_words(p.name, noun), row_value_text(v)))
        # reads first (they do not change state), then the write itself
        for pname, r in reaches:
            for s in r.steps:
                self.run(draft, Step(s.tool, s.args))
            for k, v in r.facts.items():
                add_fact(draft.facts, k, v)
            if r.sibling_fact is not None:
                ent = (sig.param(pname) or Param("", "key:", False, "")).vtype.removeprefix("key:")
                used = add_fact(draft.facts, *r.sibling_fact)
                draft.sibling_facts[(ent, str(picked[pname][self.ent[ent].key]))] = used
        anchor = reaches[0][1].phrase if reaches else ""
        for pname, r in reaches[1:]:
            details.append((role_words(pname), r.phrase))
        step = Step(sig.name, args)
        self.run(draft, step)
        for pname, row in picked.items():
            ent = (sig.param(pname) or Param("", "key:", False, "")).vtype.removeprefix("key:")
            phrase = next(r.phrase for n, r in reaches if n == pname)
            draft.known[(ent, str(row[self.ent[ent].key]))] = phrase
            for r_ent, r_key, r_phrase in next(r.rows for n, r in reaches if n == pname):
                draft.known.setdefault((r_ent, r_key), r_phrase)
            for f in self.ent[ent].fields:
                if f.type != "ref" or not f.ref or not row.get(f.name):
                    continue
                ref = (f.ref, str(row[f.name]))
                if self.ent[f.ref].lookup:
                    draft.related.add(ref)  # a row with identifiers is named by one if used later
                elif ref not in draft.known:
                    draft.known[ref] = f"the {entity_noun(f.ref)} of {phrase}"
        for fact_name, fact_value in details:
            if not fact_value.startswith("the "):
                add_fact(draft.facts, fact_name, fact_value)
        target_phrase = anchor
        if kind == "create":
            verb = "create"
            created_noun = entity_noun(sig.entity or "")
            target_phrase = (
                f"a {created_noun}" if created_noun.startswith("new ") else f"a new {created_noun}"
            )
            if anchor:
                details.insert(0, ("for", anchor))
        elif kind == "update":
            verb = "update"
        elif kind == "delete":
            verb = "delete"
        else:
            verb = (sig.action or sig.name).replace("_", " ")
        draft.intents.append(WriteIntent(kind, verb, noun, target_phrase, details))
        return step, picked

    def _anchor_entity(self, sig: ToolSignature) -> str:
        kp = sig.key_params
        return kp[0].vtype.removeprefix("key:") if kp else "record"

    def repeat_write(self, draft: Draft, first: Step, picked: dict[str, dict[str, Any]]) -> None:
        """Apply the same change to the anchor row's siblings that share one attribute (2–3 rows in all).

        The siblings come from a relation traversal of the anchor's parent; the traversal is added to
        the path unless the path already made it.
        """
        sig = self.sigs[first.tool]
        if not sig.key_params or sig.kind == "create":
            return
        anchor_param = sig.key_params[0].name
        ent = sig.key_params[0].vtype.removeprefix("key:")
        e = self.ent[ent]
        row = picked.get(anchor_param)
        if row is None:
            return
        rels = [r for r in self.relations_into.get(ent, []) if row.get(self._via(r) or "")]
        if not rels:
            return
        rel = self.rng.choice(rels)
        via = self._via(rel) or ""
        parent_entity = rel.entity or ""
        pe = self.ent[parent_entity]
        parent_key = str(row[via])
        siblings = self.world.runtime.find(ent, **{via: parent_key})
        if len(siblings) > PAGE:
            return
        listed = any(s.tool == rel.name and s.args.get(pe.key) == parent_key for s in draft.steps)
        parent_phrase = draft.known.get((parent_entity, parent_key))
        enums = [f for f in e.fields if f.type == "enum" and f.name not in first.args]
        self.rng.shuffle(enums)
        for f in enums:
            # the anchor as it was before the first write, plus the siblings that still match it
            group = [row] + [
                s for s in siblings if str(s[e.key]) != str(row[e.key]) and s.get(f.name) == row.get(f.name)
            ]
            if not 2 <= len(group) <= 3:
                continue
            mark = len(draft.steps)
            try:
                if not listed:
                    self.run(draft, Step(rel.name, {pe.key: parent_key}))
                for s in group:
                    if str(s[e.key]) == first.args.get(anchor_param):
                        continue
                    args = dict(first.args)
                    args[anchor_param] = str(s[e.key])
                    self.run(draft, Step(sig.name, args))
            except Rejected:
                del draft.steps[mark:]
                raise
            words = field_words(f.name, entity_noun(ent))
            value = row_value_text(row[f.name])
            intent = draft.intents[-1]
            intent.repeat = len(group)
            noun = entity_noun(ent)
            if parent_phrase is None:
                # the user named the anchor by its own identifier: the others are its siblings
                anchor_phrase = draft.known.get((ent, str(row[e.key])), f"{noun} {row[e.key]}")
                attr = attribute_phrase(words, value, nested="whose " in anchor_phrase, noun=noun)
                intent.target = (
                    f"{anchor_phrase} and every other {noun} of the same {entity_noun(parent_entity)} "
                    f"{attr} ({len(group)} in all)"
                )
            else:
                attr = attribute_phrase(words, value, nested="whose " in parent_phrase, noun=noun)
                intent.target = f"every {noun} of {parent_phrase} {attr} ({len(group)} of them)"
                # the attribute that told the anchor from its siblings no longer describes the target
                draft.facts.pop(draft.sibling_facts.pop((ent, str(row[e.key])), ""), None)
            add_fact(draft.facts, fact_key(entity_noun(ent), words), value)
            draft.repeated = len(group)
            return

    # --- one attempt ---------------------------------------------------------------------------------

    def _pick_write(self, exclude: set[str] | None = None) -> str:
        writes = [w for w in self.usable_writes if not exclude or w not in exclude]
        weights = []
        for w in writes:
            k = self.sigs[w].kind
            weights.append({"action": 3.0, "update": 1.2, "create": 1.0, "delete": 0.4}.get(k, 1.0))
        return self.rng.choices(writes, weights=weights)[0]

    def attempt(self) -> Draft:
        self.world.restore(self.base)
        draft = Draft()
        tool = self._pick_write()
        first, picked = self.add_write(draft, tool)
        if self.rng.random() < REPEAT_CHANCE:
            mark = len(draft.steps)
            try:
                self.repeat_write(draft, first, picked)
            except Rejected:
                del draft.steps[mark:]
                self._replay_prefix(draft)
        if self.rng.random() < SPLICE_CHANCE:
            known_types = {f"key:{ent}" for ent, _ in draft.known.keys() | draft.related}
            second = [
                w
                for w in self.usable_writes
                if w != tool and any(p.vtype in known_types for p in self.sigs[w].key_params[:1])
            ]
            if second:
                mark = len(draft.steps)
                snap = (
                    dict(draft.facts), dict(draft.known), list(draft.intents), dict(draft.sibling_facts),
                    set(draft.related),
                )  # fmt: skip
                try:
                    self.add_write(draft, self.rng.choice(second), prefer_known=True)
                    draft.spliced = True
                except Rejected:
                    del draft.steps[mark:]
                    draft.facts, draft.known, draft.intents, draft.sibling_facts, draft.related = snap
                    self._replay_prefix(draft)
        return draft

    def _replay_prefix(self, draft: Draft) -> None:
        """Bring the world back to the state after the draft's kept steps."""
        self.world.restore(self.base)
        for s in draft.steps:
            self.world.call(s.tool, s.args)

    # --- validation ---------------------------------------------------------------------------------

    def check(self, draft: Draft, instruction: UserInstruction) -> tuple[list[RowChange], list[str]]:
        """Replay from a fresh snapshot; apply the filters; return Δgold and its generated values, or
        raise Rejected(reason)."""
        self.world.restore(self.base)
        step_changes: list[list[RowChange]] = []
        for s in draft.steps:
            res = self.world.call(s.tool, s.args)
            if not res.ok:
                raise Rejected("replay_failed")
            if canonical(res.result) != canonical(s.result):
                raise Rejected("replay_nondeterministic")
            step_changes.append(res.changes)
        delta = self.world.diff(self.base)
        if not delta:
            raise Rejected("empty_delta")
        seen_calls = set()
        for s in draft.steps:
            sig = canonical([s.tool, s.args])
            if sig in seen_calls:
                raise Rejected("incoherent:repeated_call")
            seen_calls.add(sig)
        # covers its functions: every read feeds a later argument; every write leaves a net change
        for i, s in enumerate(draft.steps):
            if self.sigs[s.tool].effect == "read":
                text = canonical(s.result)
                later = [v for t in draft.steps[i + 1 :] for v in _key_args(self.sigs[t.tool], t.args)]
                if not any(f'"{v}"' in text for v in later):
                    raise Rejected("uncovered:unused_read")
        final = {(c.table, c.key, c.field): c for c in delta}
        for s, made in zip(draft.steps, step_changes, strict=True):
            if self.sigs[s.tool].effect != "write":
                continue
            if not any(
                (c.table, c.key, c.field) in final and final[(c.table, c.key, c.field)].after == c.after
                for c in made
            ):
                raise Rejected("uncovered:write_without_net_effect")
        # flow: every key argument is a fact the user gives or a value an earlier result returned
        facts_text = set(instruction.facts.values())
        for i, s in enumerate(draft.steps):
            earlier = canonical([t.result for t in draft.steps[:i]])
            for v in _key_args(self.sigs[s.tool], s.args):
                if v not in facts_text and f'"{v}"' not in earlier:
                    raise Rejected("incoherent:value_from_nowhere")
        # not already true, and a read-only agent fails
        generated = generated_values(self.spec, [s.args for s in draft.steps], step_changes)
        self.world.restore(self.base)
        if covers([], delta, generated=generated):
            raise Rejected("already_true")
        for s in draft.steps:
            if self.sigs[s.tool].effect == "read":
                self.world.call(s.tool, s.args)
        if covers(self.world.diff(self.base), delta, generated=generated):
            raise Rejected("read_only_passes")
        # the intent states every fact the user holds (a paraphrase is checked against them)
        if missing_facts(instruction, instruction.intent):
            raise Rejected("incoherent:fact_not_in_intent")
        # specific, and never names a function
        text = " ".join([instruction.intent, instruction.motivation, *instruction.facts.values()]).lower()
        bare = {n.removeprefix(self.spec.tool_prefix) for n in self.sigs} | set(self.sigs)
        if any(n in text for n in bare if "_" in n):
            raise Rejected("names_function")
        return delta, generated

    # --- the loop -----------------------------------------------------------------------------------

    def synthesize(
        self, target: int, *, max_attempts: int | None = None, progress=None
    ) -> tuple[list[Task], SynthesisReport]:
        report = SynthesisReport(self.spec.name, target)
        tasks: list[Task] = []
        seen: set[str] = set()
        seen_deltas: dict[str, list[Task]] = {}
        reader = TaskReader(self.world)
        budget = max_attempts or max(200, target * 30)
        while len(tasks) < target and report.attempts < budget:
            report.attempts += 1
            try:
                draft = self.attempt()
                instruction, request = make_instruction(self.spec, draft, self.rng)
                delta, generated = self.check(draft, instruction)
            except Rejected as exc:
                report.rejections[exc.reason] += 1
                continue
            sig = canonical([[s.tool, s.args] for s in draft.steps])
            if sig in seen:
                report.rejections["duplicate"] += 1
                continue
            seen.add(sig)
            gold = [
                GoldCall(tool=s.tool, arguments=s.args, result=s.result, function=s.tool) for s in draft.steps
            ]
            writes = sum(1 for s in draft.steps if self.sigs[s.tool].effect == "write")
            task = Task(
                id=f"{self.spec.name}-{len(tasks) + 1:04d}",
                domain=self.spec.name,
                public_request=request,
                instruction=instruction,
                gold_path=gold,
                base_functions=[s.tool for s in draft.steps],
                expected_changes=delta,
                generated_values=generated,
                difficulty={
                    "path_length": len(draft.steps),
                    "functions": len({s.tool for s in draft.steps}),
                    "writes": writes,
                    "spliced": draft.spliced,
                    "repeated": draft.repeated,
                    "start": draft.steps[0].tool if self.sigs[draft.steps[0].tool].effect == "read" else None,
                },
            )
            self.world.restore(self.base)
            conflicts = reader.policy_conflicts(task)
            if conflicts:
                report.rejections[f"policy:{conflicts[0].split(' ', 1)[0]}"] += 1
                continue
            same = seen_deltas.setdefault(delta_signature(task), [])
            if any(same_delta(task, t) for t in same):
                report.rejections["duplicate_delta"] += 1
                continue
            same.append(task)
            tasks.append(task)
            if progress is not None:
                progress(len(tasks))
        report.made = len(tasks)
        report.candidates = Counter(self.candidate_rejections)
        self.world.restore(self.base)
        return tasks, report


_FAIL_CALL = re.compile(r"""fail\(\s*["']([A-Za-z0-9_]+)["']""")


def _key_args(sig: ToolSignature, args: dict[str, Any]) -> list[str]:
    out = []
    for p in sig.params:
        if p.vtype.startswith("key:") and args.get(p.name) not in (None, ""):
            out.append(str(args[p.name]))
    return out
