"""Reaching a row: the reads that find a record from what a user would know, through the dependency graph.

A mixin of the synthesizer (`bench.synthesis.Synthesizer`): from a row a write needs, walk the graph
backwards to a read that takes an identifier, a name or a unique value the user holds, directly, through
a parent's relation or through a row that refers to it (at most `MAX_DEPTH` hops, `PAGE` rows a page).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from toolshift.bench.drafts import Draft, Reach, Rejected, Step, add_fact
from toolshift.bench.graph import DependencyGraph, ToolSignature
from toolshift.bench.instructions import (
    attribute_phrase,
    entity_noun,
    fact_key,
    field_words,
    identified_phrase,
    row_value_text,
)
from toolshift.world.language.spec import DomainSpec, EntitySpec

if TYPE_CHECKING:
    from toolshift.world.state.world import World

MAX_DEPTH = 3
PAGE = 20


class Reaching:
    """Finds the reads that reach a row (the synthesizer's `reach`)."""

    world: World
    spec: DomainSpec
    ent: dict[str, EntitySpec]
    sigs: dict[str, ToolSignature]
    graph: DependencyGraph
    rng: random.Random
    by_kind: dict[tuple[str, str], str]
    relations_into: dict[str, list[ToolSignature]]

    def rows(self, entity: str) -> list[dict[str, Any]]:
        """Rows of an entity in the current state of the world (key order)."""
        return self.world.runtime.find(entity)

    def _unique_value(self, e: EntitySpec, row: dict[str, Any], among: list[dict[str, Any]], skip: set[str]):
        order = [e.label] if e.label else []
        order += [f.name for f in e.fields if f.type in ("date", "string", "money", "email", "datetime")]
        order += [f.name for f in e.fields if f.type in ("enum", "int", "float", "phone")]
        for name in dict.fromkeys(n for n in order if n):
            f = e.field(name)
            if f is None or name == e.key or name in skip or f.type == "ref":
                continue
            v = row.get(name)
            if v in (None, "") or isinstance(v, bool):
                continue
            if sum(1 for r in among if r.get(name) == v) == 1:
                return name, v
        return None

    def reach(
        self,
        entity: str,
        row: dict[str, Any],
        draft: Draft,
        depth: int = 0,
        visiting: frozenset[tuple[str, str]] = frozenset(),
    ) -> Reach:
        """Sample a read path from a query-type start to `row`; biased toward starting reads.

        A row whose entity has identifiers (`lookup`: the ones its domain's policy accepts) is named
        by one of them — looked up directly, searched, or picked from its listing — and reached
        through a parent's list only when none of those reads exists; a row without identifiers is
        named through a record that holds or lists it ("the line of order … whose sku is …").
        """
        e = self.ent[entity]
        key = str(row[e.key])
        if (entity, key) in draft.known:
            return Reach([], {}, draft.known[(entity, key)], None)
        noun = entity_noun(entity)
        options: list[tuple[float, str, Any]] = []
        if e.key in e.lookup and ("get", entity) in self.by_kind:
            options.append((3.0 if depth else 1.0, "direct", None))
        current = self.rows(entity)
        search = self.by_kind.get(("search", entity))
        if search:
            sig = self.sigs[search]
            for p in sig.params:
                if p.vtype.startswith("lookup:") and row.get(p.name) not in (None, ""):
                    val = row[p.name]
                    if sum(1 for r in current if r.get(p.name) == val) == 1:
                        options.append((3.0 if depth else 1.2, "search", p.name))
        lst = self.by_kind.get(("list", entity))
        if lst and self.sigs[lst].query_start and e.lookup:
            idx = next(i for i, r in enumerate(current) if str(r[e.key]) == key)
            lab = self._identifier_among(e, row, current)
            if idx < 100 and lab is not None:
                options.append((1.5 if depth else 0.6, "list", (idx, lab)))
        if depth < MAX_DEPTH and (not e.lookup or not options):
            for rel in self.relations_into.get(entity, []):
                via = self._via(rel)
                if via and row.get(via):
                    options.append((1.0 if depth else 2.2, "parent", (rel, via)))
        if depth < MAX_DEPTH and not e.lookup:
            for child, fname in self._children_of(entity):
                options.append((0.5 if depth else 1.2, "child", (child, fname)))
        self.rng.shuffle(options)
        tried = 0
        while options and tried < 4:
            tried += 1
            weights = [w for w, _, _ in options]
            i = self.rng.choices(range(len(options)), weights=weights)[0]
            _, how, extra = options.pop(i)
            try:
                got = self._reach_by(how, extra, e, row, noun, draft, depth, visiting | {(entity, key)})
                got.rows.append((entity, key, got.phrase))
                return got
            except Rejected:
                continue
        raise Rejected(f"unreachable:{entity}")

    @staticmethod
    def _identifier_among(e: EntitySpec, row: dict[str, Any], among: list[dict[str, Any]]) -> str | None:
        """The first identifier (`lookup` field, the key last) whose value tells `row` from `among`."""
        for name in sorted(e.lookup, key=lambda n: n == e.key):
            v = row.get(name)
            if v not in (None, "") and sum(1 for r in among if r.get(name) == v) == 1:
                return name
        return None

    def _via(self, rel: ToolSignature) -> str | None:
        name = rel.name.removeprefix(self.spec.tool_prefix)
        for r in self.spec.relations:
            if f"list_{r.from_}_{r.name}" == name:
                return r.via
        return None

    def _children_of(self, entity: str) -> list[tuple[str, str]]:
        out = []
        for e in self.spec.entities:
            for f in e.fields:
                if f.type == "ref" and f.ref == entity and e.name != entity:
                    out.append((e.name, f.name))
        return out

    def _reach_by(
        self,
        how: str,
        extra: Any,
        e: EntitySpec,
        row: dict[str, Any],
        noun: str,
        draft: Draft,
        depth: int,
        visiting: frozenset[tuple[str, str]],
    ) -> Reach:
        key = str(row[e.key])
        if how == "direct":
            step = Step(self.by_kind[("get", e.name)], {e.key: key})
            return Reach([step], {fact_key(noun, field_words(e.key, noun)): key}, f"{noun} {key}", step.tool)
        if how == "search":
            fname = extra
            val = row[fname]
            step = Step(self.by_kind[("search", e.name)], {fname: val})
            words = field_words(fname, noun)
            return Reach(
                [step],
                {fact_key(noun, words): row_value_text(val)},
                identified_phrase(noun, words, row_value_text(val)),
                step.tool,
            )
        if how == "list":
            idx, lab = extra
            args: dict[str, Any] = {"limit": 100} if idx >= PAGE else {}
            step = Step(self.by_kind[("list", e.name)], args)
            words = field_words(lab, noun)
            val = row_value_text(row[lab])
            return Reach([step], {fact_key(noun, words): val}, identified_phrase(noun, words, val), step.tool)
        if how == "parent":
            rel, via = extra
            parent_entity = rel.entity or ""
            pe = self.ent[parent_entity]
            parent = self.world.runtime.get(parent_entity, row[via])
            if parent is None:
                raise Rejected("dangling_ref")
            if (parent_entity, str(parent[pe.key])) in visiting:
                raise Rejected("cycle")
            siblings = self.world.runtime.find(e.name, **{via: row[via]})
            idx = next(i for i, r in enumerate(siblings) if str(r[e.key]) == key)
            if idx >= 100:
                raise Rejected("not_specific")
            if e.lookup:  # named by an identifier that is unique only among its parent's rows
                name = self._identifier_among(e, row, siblings)
                pick = None if name is None else (name, row[name])
            else:
                pick = self._unique_value(e, row, siblings, {via})
            if pick is None:
                raise Rejected("not_specific")
            pr = self.reach(parent_entity, parent, draft, depth + 1, visiting)
            args = {pe.key: str(parent[pe.key])}
            if idx >= PAGE:
                args["limit"] = 100
            step = Step(rel.name, args)
            fname, fval = pick
            words = field_words(fname, noun)
            # one "whose" per reference: a nested pick reads "with <attribute> <value>"
            attr = attribute_phrase(words, row_value_text(fval), nested="whose " in pr.phrase, noun=noun)
            phrase = f"the {noun} {attr} of {pr.phrase}"
            facts = dict(pr.facts)
            if pr.sibling_fact is not None:
                add_fact(facts, *pr.sibling_fact)
            own = (fact_key(noun, words), row_value_text(fval))
            return Reach([*pr.steps, step], facts, phrase, pr.start or step.tool, list(pr.rows), own)
        if how == "child":
            child, fname = extra
            ck = self.ent[child].key
            kids = [
                r
                for r in self.world.runtime.find(child, **{fname: key})
                if (child, str(r[ck])) not in visiting
            ]
            if not kids:
                raise Rejected(f"unreachable:{e.name}")
            kid = self.rng.choice(kids)
            cr = self.reach(child, kid, draft, depth + 1, visiting)
            if not cr.steps:
                raise Rejected(f"unreachable:{e.name}")
            phrase = f"the {noun} on {cr.phrase}"
            steps = list(cr.steps)
            getter = self.by_kind.get(("get", e.name))
            if getter and self.rng.random() < 0.5:
                # look the referenced row up by the key the child row holds
                steps.append(Step(getter, {e.key: key}))
            facts = dict(cr.facts)
            if cr.sibling_fact is not None:
                add_fact(facts, *cr.sibling_fact)
            return Reach(steps, facts, phrase, cr.start, list(cr.rows))
        raise Rejected("no_option")
