"""Supply: the task view Steward builds for an agent from the library and the current catalog.

This is the reusable component the MCP front (`steward serve`) and the gateway mount:

    supply = Supply(library, catalog)              # indices over active skills and the catalog
    episode = supply.episode(request)              # one per conversation: counters and exposure
    view = episode.choose(conversation_text)       # plan chosen from the conversation's words (D174)
    episode.ask()                                  # fact names the candidate plans need
    view = episode.plan(disclosed_facts)           # or: the fact-fitting merge, for a caller holding facts
    episode.retrieve_tools(query)                  # on demand: ≤ 5 tools
    episode.explore_capabilities(query)            # on demand: ≤ 3 per episode, ≤ 8 tools, ≤ 4,000 chars
    episode.exposed                                # every tool the agent has been shown (⊆ catalog)

Initial supply follows the seed: the top 5 planning skills retrieved for the request form the
candidate plan; the model-free merge keeps, among the usable plans of the candidates' domains, one
whose facts the user has (most facts used, then relevance to the request, then recency) and
appends parts for facts it leaves unused (D92). At each of its steps at most 5
atomic skills are retrieved (score ≥ threshold × best, then MMR) and those that perform the step
with the plan's tools kept (where the seed's model picks); the top 3 tools retrieved directly for the conversation so far
(request and fact names, in the plan's domain) are added; all unioned with the plan's and skills'
tool dependencies and intersected with the current catalog. When no plan fits, the view falls back
to the initial supply (`initial()`: the candidates' tools and the top 3 tools for the request), never
an empty one (D132). A skill whose tools are not all in the catalog is never supplied, whatever its
stored state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolshift.steward.catalog import Catalog, CatalogTool, arg_roots
from toolshift.steward.compose import (
    adapt,
    as_plan,
    drop_steps,
    grounded,
    is_key,
    providers,
    self_contained,
    valid,
)
from toolshift.steward.distill import continues
from toolshift.steward.library import Library, Skill, dependencies_present, plan_facts
from toolshift.steward.naming import heard_as, said_of, unsaid
from toolshift.steward.retrieval import BM25Index, mmr, tokens
from toolshift.steward.routes import catalog_write

PLANS = 5
ATOMIC_PER_STEP = 5
TOOLS_PER_STEP = 3
RETRIEVE_TOOLS = 5
EXPLORE_PER_EPISODE = 3
EXPLORE_TOOLS = 8
EXPLORE_CHARS = 4000


@dataclass
class StepSupply:
    step: int
    tool: str
    atomic: list[str]
    tools: list[str]


@dataclass
class SupplyView:
    plan: Skill | None
    candidates: list[Skill]
    steps: list[StepSupply] = field(default_factory=list)
    exposed: frozenset[str] = frozenset()


class Supply:
    """Retrieval indices over one library's usable skills and one catalog version."""

    def __init__(
        self,
        library: Library | list[Skill],
        catalog: Catalog,
        *,
        threshold: float = 0.8,
        mmr_lambda: float = 0.7,
    ) -> None:
        skills = library.skills() if isinstance(library, Library) else list(library)
        names = catalog.names()
        usable = [s for s in skills if s.active and dependencies_present(s, names)]
        self.catalog = catalog
        self.threshold, self.mmr_lambda = threshold, mmr_lambda
        self.plans = [s for s in usable if s.level == "planning"]
        self.atomics = [s for s in usable if s.level == "atomic"]
        self.tool_skills = {s.tools[0]: s for s in usable if s.level == "tool"}
        self._plan_index = BM25Index([s.text() for s in self.plans])
        self._atomic_index = BM25Index([s.text() for s in self.atomics])
        self._atomic_domain = np.array([s.domain for s in self.atomics])
        self.tool_names = sorted(catalog.tools)
        self._tool_index = BM25Index([catalog.tools[n].text() for n in self.tool_names])
        self._tool_domain = np.array([catalog.tools[n].domain for n in self.tool_names])
        self.heard = heard_as(self.plans, catalog)

    def episode(self, request: str) -> EpisodeSupply:
        return EpisodeSupply(self, request)

    # --- retrieval --------------------------------------------------------------------------------

    def candidates(self, request: str, k: int = PLANS) -> list[Skill]:
        return [self.plans[i] for i, _ in self._plan_index.top(request, k)]

    def ranked_plans(self, request: str, domains: set[str]) -> tuple[list[Skill], list[float]]:
        """Every usable plan of `domains`, best first for the request, with its score relative to the best."""
        scores = self._plan_index.scores(request)
        idx = [i for i, p in enumerate(self.plans) if p.domain in domains]
        idx.sort(key=lambda i: (-scores[i], i))
        best = max((scores[i] for i in idx), default=0.0) or 1.0
        return [self.plans[i] for i in idx], [float(scores[i]) / best for i in idx]

    def ranked_atomics(self, query: str, domain: str) -> list[Skill]:
        """Every usable atomic skill of `domain`, best first for the query (no threshold, no MMR)."""
        scores = self._atomic_index.scores(query)
        idx = [i for i, a in enumerate(self.atomics) if a.domain == domain]
        return [self.atomics[i] for i in sorted(idx, key=lambda i: (-scores[i], i))]

    def atomic_for(self, query: str, domain: str | None, k: int = ATOMIC_PER_STEP) -> list[Skill]:
        allowed = None if domain is None else self._atomic_domain == domain
        ranked = self._atomic_index.top(query, max(4 * k, 20), allowed)
        picked = mmr(
            ranked, self._atomic_index.doc_tokens, k=k, threshold=self.threshold, lam=self.mmr_lambda
        )
        return [self.atomics[i] for i in picked]

    def tools_for(self, query: str, domain: str | None, k: int) -> list[str]:
        allowed = None if domain is None else self._tool_domain == domain
        return [self.tool_names[i] for i, _ in self._tool_index.top(query, k, allowed)]

    def best_part(self, query: str, domain: str) -> Skill | None:
        """The planning or atomic skill of `domain` ranked first for `query` (a clause of the request)."""
        plans = [
            (float(x), 0, i)
            for i, x in enumerate(self._plan_index.scores(query))
            if self.plans[i].domain == domain
        ]
        atoms = [
            (float(x), 1, i)
            for i, x in enumerate(self._atomic_index.scores(query))
            if self.atomics[i].domain == domain
        ]
        best = max((x for x in plans + atoms if x[0] > 0), key=lambda x: (x[0], -x[1], -x[2]), default=None)
        if best is None:
            return None
        return (self.plans if best[1] == 0 else self.atomics)[best[2]]

    def unsaid(self, tool: str, said: set[str]) -> float:
        """`unsaid` with what the library learned: 0 where the conversation says every word of a stored
        request that named this write (`heard_as`), the words its users name it by ("approve credit
        memo" for `…_sign_off_credit_memo`)."""
        share = unsaid(tool, said, self.catalog)
        if share > 0 and any(r <= said for r in self.heard.get(tool, ())):
            return 0.0
        return share

    def unnamed(self, skill: Skill, said: set[str]) -> float:
        """How much of what the skill writes the conversation leaves unnamed: per write tool, the share of
        its name's words (domain prefix left out) that no word of the conversation matches, halved."""
        return sum(self.unsaid(t, said) for t in self.own_writes(skill)) / 2

    def writes(self, skill: Skill) -> set[str]:
        """The skill's tools that change the world (catalog effect other than read)."""
        return {t for t in skill.tools if t in self.catalog.tools and self.catalog.tools[t].effect != "read"}

    def own_writes(self, skill: Skill) -> set[str]:
        """The skill's writes less the later calls of a start → set → commit operation (the start's
        write, counted once and never dropped alone)."""
        return {t for t in self.writes(skill) if not continues(self.catalog.tools[t])}

    def tool_card(self, name: str) -> dict[str, Any]:
        t = self.catalog.tools[name]
        return {"name": t.name, "description": t.description, "input_schema": t.input_schema}


_CLAUSE = re.compile(r";\s*then\b|\bthen\b|\bafter that\b|\band also\b", re.IGNORECASE)


def clauses(text: str) -> list[str]:
    """The parts a request names one after another ("…; then …", "after that"), in order."""
    return [c.strip() for c in _CLAUSE.split(text) if c.strip()]


def repeats(plan: Skill) -> bool:
    """Does the plan repeat a step over the items of a list (an `each` step)?"""
    return any(st.get("each") for st in plan.body.get("steps", plan.body.get("calls", [])))


def trim(plan: Skill, said: set[str], supply: Supply) -> Skill:
    """The plan without the write steps whose tool the conversation leaves at least half unnamed while
    it names another write of the plan better (a stored workflow's other part the request does not ask
    for: "quarantine" before the "dispose" asked for), and the lookups that fed only them."""
    steps = plan.body.get("steps", [])
    writes = supply.own_writes(plan)
    miss = {k: supply.unsaid(st["tool"], said) for k, st in enumerate(steps) if st["tool"] in writes}
    if not miss:
        return plan
    drop = {k for k, m in miss.items() if m >= 0.5 and m > min(miss.values())}
    return (drop_steps(plan, drop, supply.catalog) if drop else None) or plan


def once(plan: Skill, conversation: str, supply: Supply) -> Skill:
    """The plan with each write tool made at most as many times as the conversation has clauses naming it
    (at least once), the lookups that fed only the dropped calls dropped too (D210): a stored plan of
    "reject the application and every other application of the same opening whose stage is …" rejects
    a second record from the opening's list; "reject the application whose applied date is …" asks for
    one. Only for a conversation that asks for no "every" or "all" records."""
    steps = plan.body.get("steps", [])
    parts = [said_of(c) for c in clauses(conversation)] or [said_of(conversation)]
    made: dict[str, int] = {}
    drop = set()
    for k, st in enumerate(steps):
        t = supply.catalog.tools.get(st["tool"])
        if t is None or t.effect == "read" or continues(t):
            continue
        made[t.name] = made.get(t.name, 0) + 1
        if made[t.name] > max(1, sum(supply.unsaid(t.name, p) < 0.5 for p in parts)):
            drop.add(k)
    return (drop_steps(plan, drop, supply.catalog) if drop else None) or plan


def swap_writes(plan: Skill, said: set[str], supply: Supply) -> Skill:
    """Each write of the plan the conversation names less well than another write tool of the catalog's
    same domain names it, replaced by that tool, when the step binds every argument that tool requires or
    `_said_rest` binds the rest (the lookup that found the record feeds it as well): "complete production
    order" asked, a stored plan that cancels one, the catalog's `…_complete_production_order` taking the
    same key; "refund order … (amount: …)", the refund's amount a fact (D197)."""
    steps = [dict(st) for st in plan.body.get("steps", [])]
    cat = supply.catalog
    changed = False
    for k, st in enumerate(steps):
        tool = cat.tools.get(st["tool"])
        if tool is None or tool.effect == "read" or continues(tool) or supply.unsaid(tool.name, said) == 0:
            continue
        args = st.get("args", {})
        options = [
            (supply.unsaid(t.name, said), t.name)
            for t in cat.tools.values()
            if t.domain == tool.domain and t.effect != "read" and t.name != tool.name and not continues(t)
            and set(t.input_schema.get("required", []))
            and _said_rest(t, args, said) is not None
        ]  # fmt: skip
        best = min(options, default=None)
        if best is None or best[0] >= supply.unsaid(tool.name, said):
            continue
        props = cat.tools[best[1]].input_schema.get("properties", {})
        rest = _said_rest(cat.tools[best[1]], args, said) or {}
        steps[k] = {
            **st,
            "tool": best[1],
            "args": {
                **{n: b for n, b in args.items() if n.partition(".")[0] in props},
                **rest,
            },
        }
        changed = True
    if not changed:
        return plan
    tools = tuple(dict.fromkeys(st["tool"] for st in steps))
    facts = sorted({f for f in plan_facts(steps)})
    body = {**plan.body, "steps": steps, "facts": facts, "steps_tools": [st["tool"] for st in steps]}
    body["swapped_from"] = plan.id
    out = Skill(f"{plan.id}~swap", "planning", plan.domain, plan.description, body, tools)
    return out if valid(out, cat) else plan


def _stem(key: str) -> str:
    """A key argument's record, its `_id` / `_ref` suffix left out (`order_ref`, `order_id` → order)."""
    return re.sub(r"_(id|ref)$", "", key)


def _said_rest(tool: CatalogTool, args: dict[str, Any], said: set[str]) -> dict[str, dict[str, Any]] | None:
    """Bindings for the required arguments of `tool` a step binding `args` leaves unbound (D197): a
    record's key takes the step's binding of a key to the same record (`order_id` ← `order_ref`), a plain
    value every word of whose name the conversation says a fact of that name ("refund order … (amount:
    …; reason: …)" → `amount`, `reason`); None when one is neither."""
    props = tool.input_schema.get("properties", {})
    bound = arg_roots(args)
    out: dict[str, dict[str, Any]] = {}
    for r in tool.input_schema.get("required", []):
        if r in bound:
            continue
        if is_key(r, props.get(r)):
            same = [n for n in args if "." not in n and is_key(n, None) and _stem(n) == _stem(r)]
            if len(same) != 1:
                return None
            out[r] = args[same[0]]
        elif set(tokens(r)) <= said:
            out[r] = {"fact": r.replace("_", " ")}
        else:
            return None
    return out


def covered(plan: Skill, said: set[str]) -> float:
    """The share of the plan's fact words the conversation has said (0 for a plan needing none)."""
    words = [w for f in plan.body.get("facts", []) for w in tokens(f)]
    return sum(w in said for w in words) / len(words) if words else 0.0


def _facts(s: Skill) -> set[str]:
    return set(s.body.get("facts", []))


def choose_plan(
    pool: list[Skill],
    disclosed: dict[str, str],
    parts: list[Skill] | None = None,
    relevance: list[float] | None = None,
    catalog: Catalog | None = None,
) -> Skill | None:
    """The model-free merge of candidate plans (`pool` in retrieval order): the plan whose every fact the
    user gave and that uses the most of them; while facts remain unused, the planning or atomic skill
    (`parts`, best first) of the same domain using the most of the rest is appended (the seed's spliced
    tasks: "one more thing after that"), its lookups shared with earlier steps where they are the same
    call. With the `catalog`, parts are adapted to the facts by their tools' schemas and, when no plan
    fits, a plan is composed from the parts (`toolshift.steward.compose`), validated before it is given."""
    have = set(disclosed)
    rel = relevance or [1.0] * len(pool)
    fitting = [(len(_facts(s)), -k, s) for k, s in enumerate(pool) if _facts(s) <= have]

    def fit(part: Skill, rest: set[str], after: bool = True) -> Skill | None:
        got = adapt(part, have, rest, catalog, after=after) if catalog is not None else part
        return got if got is not None and _facts(got) <= have else None

    if fitting:
        # most facts used; then relevance to the request (to a tenth of the best); then the most recently
        # added or revised (it reflects the current catalog); then rank
        plan = max(fitting, key=lambda x: (x[0], round(rel[-x[1]], 1), x[2].catalog_version, x[1]))[2]
    elif catalog is not None:
        # no stored plan fits: compose one, starting from the self-contained part using the most facts
        feeds = providers([*pool, *(parts or [])])
        firsts = []
        for k, p in enumerate(parts or []):
            start = p if self_contained(p) else grounded(p, feeds)
            if start is not None and (a := fit(start, set(), after=False)) is not None and _facts(a):
                firsts.append((len(_facts(a)), -k, a))
        if not firsts:
            return None
        plan = as_plan(max(firsts, key=lambda x: (x[0], x[1]))[2])
    else:
        return None
    if catalog is not None and have - _facts(plan):
        # facts the plan leaves unused that name an argument of its own writes are bound there first
        plan = adapt(plan, have, have - _facts(plan), catalog, after=True) or plan
    rest = have - _facts(plan)
    used = {plan.id, *plan.body.get("composed_of", [])}
    for _ in range(3):
        options = []
        # stored plans that fit as they are, then atomic skills adapted to the facts at hand
        candidates = [(s, s) for _, _, s in fitting] + [(p, fit(p, rest)) for p in parts or []]
        for k, (s, got) in enumerate(candidates):
            if s.domain != plan.domain or s.id in used or not rest or got is None:
                continue
            if _facts(got) & rest:
                options.append((len(_facts(got) & rest), -k, s, got))
        if not options:
            break
        *_, part, got = max(options, key=lambda x: x[:2])
        used.add(part.id)
        plan = compose(plan, got)
        rest -= _facts(got)
    if plan.body.get("composed") and catalog is not None and not valid(plan, catalog):
        return None
    return plan


def compose(a: Skill, b: Skill) -> Skill:
    """Plan `a` then plan `b`; a step of `b` identical to an earlier one (same tool, same bindings) is not repeated."""
    steps = [dict(x) for x in a.body.get("steps", [])]
    index: dict[int, int] = {}
    for k, step in enumerate(b.body.get("steps", b.body.get("calls", []))):
        args = {
            n: ({**bd, "step": index[bd["step"]]} if "step" in bd else bd)
            for n, bd in step.get("args", {}).items()
        }
        moved = {**step, "args": args}
        same = next(
            (
                j
                for j, x in enumerate(steps)
                if x["tool"] == moved["tool"] and x["args"] == args and not x.get("each")
            ),
            None,
        )
        if same is not None and moved["tool"] not in [x["tool"] for x in steps[same + 1 :]]:
            index[k] = same
            continue
        index[k] = len(steps)
        steps.append(moved)
    body = {
        **a.body,
        "facts": sorted(_facts(a) | _facts(b)),
        "steps": steps,
        "composed_of": [*a.body.get("composed_of", [a.id]), b.id],
        "steps_tools": [x["tool"] for x in steps],
    }
    tools = tuple(dict.fromkeys([*a.tools, *b.tools]))
    return Skill(
        f"{a.id}+{b.id}", "planning", a.domain, f"{a.description}; then {b.description}", body, tools
    )


@dataclass
class EpisodeSupply:
    """One conversation's supply: what it has been shown, and the on-demand caps it has used."""

    supply: Supply
    request: str
    candidates: list[Skill] = field(default_factory=list)
    view: SupplyView | None = None
    exposed: set[str] = field(default_factory=set)
    explorations: int = 0

    def __post_init__(self) -> None:
        self.candidates = self.supply.candidates(self.request)

    def ask(self) -> list[str]:
        """Fact names to ask the user for: the union over the candidate plans, in rank order."""
        return list(dict.fromkeys(f for s in self.candidates for f in s.body.get("facts", [])))

    def initial(self) -> frozenset[str]:
        """The view before any fact is known (a harness that cannot ask first): the candidate plans' tools
        and the top 3 tools retrieved directly for the request, in the best candidate's domain."""
        s = self.supply
        domain = self.candidates[0].domain if self.candidates else None
        tools = {t for c in self.candidates for t in c.tools if c.domain == domain}
        tools.update(s.tools_for(self.request, domain, TOOLS_PER_STEP))
        view = frozenset(tools & s.catalog.names())
        self.exposed |= view
        return view

    def plan(self, disclosed: dict[str, str]) -> SupplyView:
        """The initial supply once the user's facts are known: chosen plan, per-step skills and tools."""
        s = self.supply
        context = " ".join([self.request, *disclosed])
        domains = {p.domain for p in [*self.candidates[:3], *s.candidates(context, 3)]}
        pool, relevance = s.ranked_plans(self.request, domains)
        top = pool[0].domain if pool else (self.candidates[0].domain if self.candidates else None)
        parts = s.ranked_atomics(context, top) if top else []
        chosen = choose_plan(pool, disclosed, parts, relevance, s.catalog)
        if chosen is not None:
            view = self._view(chosen, context)
        else:
            # no plan fits: fall back to the initial supply (the candidates' tools and the top 3 tools
            # for the request), never an empty view
            view = SupplyView(None, self.candidates)
            view.exposed = self.initial()
        self.view = view
        self.exposed |= view.exposed
        return view

    def choose(self, conversation: str, offered: frozenset[str] | None = None) -> SupplyView:
        """The plan for what the conversation so far asks, chosen from its words alone (D174): the usable
        plan of the request's domain that retrieval ranks first for the whole conversation; each later
        clause it names ("…; then …") whose writes that plan does not make adds the skill (planning or
        atomic, same domain) ranked first for that clause, composed after it (`compose`). The user's
        facts play no part in the choice: they only bind the chosen plan's arguments. With `offered` (the
        tools the agent was given), only plans it can call are considered; among plans writing the same,
        the one whose facts the conversation says most of is taken; writes the conversation leaves
        unnamed while it names another of the plan's are dropped (`trim`)."""
        s = self.supply
        domains = {p.domain for p in s.candidates(conversation, 3)}
        if offered is not None:
            domains |= {s.catalog.tools[t].domain for t in offered if t in s.catalog.tools}
        pool, relevance = s.ranked_plans(conversation, domains)
        if offered is not None:
            keep = [i for i, p in enumerate(pool) if set(p.tools) <= offered]
            pool, relevance = [pool[i] for i in keep], [relevance[i] for i in keep]
        view = SupplyView(None, self.candidates)
        if pool:
            said = said_of(conversation)

            # relevance, less what the plan would write that the conversation does not name
            # a plan that repeats a write over a list fits a request for "every" or "all" records only
            many = re.search(r"\b(every|all)\b", conversation.lower()) is not None

            def score(i: int) -> float:
                fit = relevance[i] - s.unnamed(pool[i], said) + covered(pool[i], said) / 2
                return fit - (0.5 if repeats(pool[i]) != many else 0.0)

            top = range(min(len(pool), 2 * PLANS))
            k = max(top, key=lambda i: (score(i), -i))
            # among plans writing the same (another part they write but the conversation does not name
            # trimmed first), the one whose facts the conversation says most of
            alt = {i: trim(pool[i], said, s) for i in top}
            same = [i for i in top if s.writes(alt[i]) == s.writes(alt[k])]
            k = max(same, key=lambda i: (covered(alt[i], said), i == k, -i))
            plan = alt[k]
            if s.unnamed(plan, said) > 0:
                # the best stored plan writes what the conversation does not name: an atomic skill
                # (grounded by the lookups stored plans show) that writes only what it names, instead
                feeds = providers(pool)
                for atom in s.ranked_atomics(conversation, plan.domain)[:PLANS]:
                    start = atom if self_contained(atom) else grounded(atom, feeds)
                    if (
                        start is not None
                        and s.writes(start)  # a lookup alone never stands in for a write asked for
                        and s.unnamed(start, said) < s.unnamed(plan, said)
                        and valid(start, s.catalog)
                    ):
                        plan = as_plan(start)
                        break
            if s.writes(plan) and s.unnamed(plan, said) > 0:
                # nothing the library holds writes what the conversation names: the catalog's write
                # it names, its key from a stored lookup or the user's number for the record (D193)
                named = catalog_write(plan.domain, said, s.catalog, providers(pool))
                least = min(s.unsaid(t, said) for t in s.writes(plan))
                plan = named if named is not None and named.body["named"] < least else plan
            plan = swap_writes(trim(plan, said, s), said, s)
            plan = plan if many else once(plan, conversation, s)
            for clause in clauses(conversation)[1:]:
                part = s.best_part(clause, plan.domain)
                part = trim(part, said_of(clause), s) if part is not None else None
                if part is None or s.writes(part) <= s.writes(plan):
                    continue
                # the clause names a write the plan already makes better than any the part adds: the
                # part's other writes were its training request's, not this clause's (D212)
                heard = said_of(clause)
                new = s.writes(part) - s.writes(plan)
                if min(s.unsaid(t, heard) for t in s.writes(plan)) < min(s.unsaid(t, heard) for t in new):
                    continue
                plan = compose(plan, part)
            view = self._view(plan, conversation)
        if view.plan is None:
            view.exposed = self.initial()
        self.view = view
        self.exposed |= view.exposed
        return view

    def _view(self, chosen: Skill, context: str) -> SupplyView:
        """The chosen plan's per-step atomic skills and tools, and everything exposed."""
        s = self.supply
        view = SupplyView(chosen, self.candidates)
        deps: set[str] = set(chosen.tools)
        direct = s.tools_for(context, chosen.domain, TOOLS_PER_STEP)
        for k, step in enumerate(chosen.body.get("steps", [])):
            tool = s.catalog.tools.get(step["tool"])
            found = s.atomic_for(f"{context} {tool.text() if tool else step['tool']}", chosen.domain)
            atoms = [a for a in found if step["tool"] in a.tools and set(a.tools) <= set(chosen.tools)]
            view.steps.append(StepSupply(k, step["tool"], [a.id for a in atoms], direct))
            deps.update(t for a in atoms for t in a.tools)
            deps.update(direct)
        view.exposed = frozenset(deps & s.catalog.names())
        return view

    def retrieve_tools(self, query: str, k: int = RETRIEVE_TOOLS) -> list[dict[str, Any]]:
        """On demand: at most `k` (≤ 5) tools of the current catalog for a query, with their schemas."""
        domain = self.view.plan.domain if self.view and self.view.plan else None
        names = self.supply.tools_for(query, domain, min(k, RETRIEVE_TOOLS))
        self.exposed.update(names)
        return [self.supply.tool_card(n) for n in names]

    def explore_capabilities(self, query: str) -> dict[str, Any]:
        """On demand, at most 3 times an episode: skills and tools of the whole catalog for a goal, each
        tool's schema checked present; at most 8 tools and 4,000 characters of skill text."""
        if self.explorations >= EXPLORE_PER_EPISODE:
            return {"error": f"explore_capabilities may be used {EXPLORE_PER_EPISODE} times an episode"}
        self.explorations += 1
        s = self.supply
        plans = s.candidates(query, 3)
        atoms = s.atomic_for(query, None)
        names = list(
            dict.fromkeys([t for p in plans for t in p.tools] + s.tools_for(query, None, EXPLORE_TOOLS))
        )
        names = [
            n for n in names if n in s.catalog.tools and isinstance(s.catalog.tools[n].input_schema, dict)
        ]
        names = names[:EXPLORE_TOOLS]
        texts, used = [], 0
        for sk in [*plans, *atoms]:
            text = f"{sk.id}: {sk.description}"
            if used + len(text) > EXPLORE_CHARS:
                break
            texts.append(text)
            used += len(text)
        self.exposed.update(names)
        return {
            "skills": texts,
            "tools": [s.tool_card(n) for n in names],
            "explorations_left": EXPLORE_PER_EPISODE - self.explorations,
        }
