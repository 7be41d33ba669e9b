"""Model-free measuring instruments of the Steward experiment (named as such, never a model pretending).

* `SkillFollower` executes what Steward supplies: it asks the user what they want in their own words,
  lets the supply choose the plan from the conversation's words (`EpisodeSupply.choose`; never from
  fact names, D174), asks for the facts the plan binds, and runs its steps, asking for a fact when a
  step needs one, binding every argument from the user's facts (normalised to the schema: enum members,
  numbers) or from earlier results by the skill's argument flow; a lookup by a fact the user lacks is
  rebound to another field its tool searches by, and a write's optional field the user cannot give is
  left out (D175). It knows nothing else of the task: whether the library's knowledge is still usable
  is exactly what its success measures.
* `FactReplay` produces training trajectories: it asks for a training task's facts by name, then
  replays a given call sequence (the version's reference path), so the episode shows the dialogue
  and calls a successful agent would have had. Steward only ever sees the resulting episodes.
"""

from __future__ import annotations

import json
from typing import Any

from toolshift.agents.chat import ModelReply, ProposedCall, ToolDef
from toolshift.agents.policies import DONE_TEXT
from toolshift.agents.users import END_CONVERSATION
from toolshift.steward.catalog import arg_roots, field_enums
from toolshift.steward.compose import fact_argument
from toolshift.steward.distill import _same, fill_template, get_path, nest, normal, parse_facts
from toolshift.steward.naming import said_of, same_fact
from toolshift.steward.ordinal import by_clause, unnamed_keys
from toolshift.steward.repeat import Repeat, Repetition, find, items_of, parse_repeat
from toolshift.steward.retrieval import tokens
from toolshift.steward.routes import PAGING, lookup_alternatives, other_routes
from toolshift.steward.supply import EpisodeSupply, Supply, clauses, plan_facts

SORRY = "I am sorry, I could not find a way to do that."
DESCRIBE = "Could you tell me, in your own words, everything you would like me to take care of?"


def _reply(text: str | None = None, call: tuple[str, str, dict[str, Any]] | None = None) -> ModelReply:
    calls = [ProposedCall(id=call[0], name=call[1], arguments=call[2])] if call else []
    return ModelReply(text=text, calls=calls, prompt_tokens=0, completion_tokens=0, cost=0.0)


def ask_text(phrases: list[str]) -> str:
    return "To help with that I need a few details. Could you tell me your " + "; ".join(phrases) + "?"


def coerce(value: Any, schema: dict[str, Any] | None, members: list[Any] | None = None) -> Any:
    """A fact's text as the parameter's schema holds it: the enum member it names ("fixed amount" →
    `fixed_amount`, "Strong hire" → `strong_hire`), else the type asked for (integer, number, boolean).
    A string parameter without an enum takes a member of `members` (the field's elsewhere in the domain,
    `field_enums`) the text names (D198)."""
    schema = schema or {}
    if not isinstance(value, str):
        return value
    members = schema.get("enum") or (members if schema.get("type") in (None, "string") else None)
    if isinstance(members, list):
        return next((m for m in members if normal(m) == normal(value)), value)
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean" and value.lower() in ("true", "false", "yes", "no"):
        return value.lower() in ("true", "yes")
    return value


class BindingError(Exception):
    """An argument the plan's flow cannot fill from the facts and results at hand."""


class MissingFact(BindingError):
    """An argument bound to a fact the user has not given (yet)."""

    def __init__(self, fact: str) -> None:
        super().__init__(f"the user did not give their {fact}")
        self.fact = fact


class NoMatch(BindingError):
    """No item of an earlier step's result list matches: the record may be on a later page."""

    def __init__(self, step: int, message: str) -> None:
        super().__init__(message)
        self.step = step


def _key(name: Any) -> str:
    return str(name).replace("_", "").lower()


def _field(item: Any, name: str) -> Any:
    """An item's field by name, or by the same name in another case or spelling (`invoice_number` →
    `invoiceNumber`: an interface that renamed its output fields' style)."""
    if not isinstance(item, dict):
        return None
    if name in item:
        return item[name]
    return next((v for k, v in item.items() if _key(k) == _key(name)), None)


def _loose_path(value: Any, path: list[Any]) -> Any:
    for k in path:
        value = _field(value, k) if isinstance(k, str) else get_path(value, [k])
        if value is None:
            return None
    return value


def _holds(value: Any, fact: str) -> bool:
    """Does a result field hold the user's fact? The same value, or, for a value a version wrapped in an
    object (`base_salary: {"amount": "118000.00", "currency": "USD"}` for `118000.00`), one of that
    object's own plain fields (D236)."""
    if _same(value, fact):
        return True
    return isinstance(value, dict) and any(
        _same(v, fact) for v in value.values() if not isinstance(v, dict | list)
    )


def _select(
    result: Any, path: list[Any], where: dict[str, str], facts: dict[str, str], each: bool
) -> list[Any]:
    if "*" not in path:
        value = _loose_path(result, path)
        if value is None:
            raise BindingError(f"no value at {'.'.join(map(str, path))}")
        return [value]
    at = path.index("*")
    items = _loose_path(result, path[:at])
    if not isinstance(items, list) and path[:at] == ["items"]:
        items = items_of(result) or None  # a list nested deeper (`data.items`) than a route assumed
    if not isinstance(items, list):
        raise BindingError(f"no list at {'.'.join(map(str, path[:at]))}")
    # a condition on a fact the user did not give cannot pick: the lookup itself chose the items
    where = {f: p for f, p in where.items() if p in facts}
    hits = [sum(_holds(_field(it, f), facts[p]) for f, p in where.items()) for it in items]
    picked = [it for it, n in zip(items, hits, strict=True) if n == len(where)]
    if not picked and not each and len(where) > 1 and hits:
        # no item meets every condition (one of them a coincidence of training values): the one item
        # that meets the most of them, if one does
        best = max(hits)
        if best > 0 and hits.count(best) == 1:
            picked = [items[hits.index(best)]]
    values = [_loose_path(it, path[at + 1 :]) for it in picked]
    values = [v for v in values if v is not None]
    if len(values) > 1 and not each:
        # several records left to take one from: the one whose value the user named (`MDF-0073` of a
        # partner's four requests), never the list's first by position
        named = [v for v in values if any(_same(v, given) for given in facts.values())]
        if len(named) == 1:
            values = named
    if not values:
        raise BindingError("no result item matches " + ", ".join(f"{f} = the {p}" for f, p in where.items()))
    return values if each else values[:1]


def _by_name(name: str, results: list[Any]) -> Any:
    """An atomic skill's input: the latest earlier result holding a field of that name, at the top level
    or in nested objects and lists' first items (shallowest first, so a result nested under `data`
    still serves)."""
    value = find(name, results, depth=4)
    if value is not None:
        return value
    raise BindingError(f"no earlier result has a {name}")


def bind_step(
    step: dict[str, Any],
    facts: dict[str, str],
    results: list[Any],
    schema: dict[str, Any] | None,
    unknown: frozenset[str] = frozenset(),
    enums: dict[str, list[Any]] | None = None,
    texts: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The concrete argument dicts of one plan step (several for an `each` step). An optional argument
    (not in the schema's `required`) bound to a fact the user was asked for and did not give (`unknown`)
    is left out: the user has nothing to set it to. `texts`: the results as the server wrote them, for a
    text argument bound to a whole result that parses as JSON (a file of JSON copied as it is, D364)."""
    props = (schema or {}).get("properties", {})
    required = set((schema or {}).get("required", []))
    fixed: dict[str, Any] = {}
    varying: tuple[str, list[Any]] | None = None
    for name, b in step.get("args", {}).items():
        if "fact" in b:
            if b["fact"] not in facts and b["fact"] in unknown and name not in required:
                continue
            if b["fact"] not in facts:
                raise MissingFact(b["fact"])
            fixed[name] = coerce(facts[b["fact"]], _field_schema(props, name), (enums or {}).get(name))
        elif "step" in b:
            if not 0 <= b["step"] < len(results):
                raise BindingError(f"step {b['step']} has no result")
            try:
                values = _select(
                    results[b["step"]], b["path"], b.get("where", {}), facts, bool(step.get("each"))
                )
            except BindingError as exc:
                raise NoMatch(b["step"], str(exc)) from exc
            if step.get("each") and "*" in b["path"] and varying is None:
                varying = (name, values)
            elif (
                not b["path"]
                and texts is not None
                and b["step"] < len(texts)
                and not isinstance(values[0], str)
                and (_field_schema(props, name) or {}).get("type") == "string"
            ):
                fixed[name] = texts[b["step"]]
            else:
                fixed[name] = values[0]
        elif "template" in b:  # a text around the user's facts (D364)
            absent = [f for f in b.get("facts", []) if f not in facts]
            if absent:
                raise MissingFact(absent[0])
            fixed[name] = fill_template(b["template"], facts)
        elif "input" in b:
            fixed[name] = _by_name(b["input"], results)
        elif "value" in b:
            fixed[name] = b["value"]
        else:
            raise BindingError(f"argument {name} has no source")
    if varying is None:
        return [nest(fixed)]
    return [nest({**fixed, varying[0]: v}) for v in varying[1]]


def _field_schema(props: dict[str, Any], name: str) -> Any:
    """The schema of an argument, or of a field of an object argument bound under a dotted name."""
    root, _, field = name.partition(".")
    if not field:
        return props.get(name)
    return (props.get(root) or {}).get("properties", {}).get(field)


class SkillFollower:
    """Runs Steward's supplied plan through the agent loop (an instrument: no model)."""

    name = "steward-skill-follower"

    def __init__(self, supply: Supply) -> None:
        self.supply = supply
        self.episode: EpisodeSupply | None = None
        self.facts: dict[str, str] = {}
        self.phase = "start"
        self.queue: list[tuple[int, dict[str, Any]]] = []
        self.step = 0
        self.results: list[Any] = []
        self.texts: list[str] = []
        """Each result as the server wrote it (a JSON file's text, beside its parsed value)."""
        self.calls = 0
        self.failure = ""
        self.asked: set[str] = set()
        self.rounds = 0
        self.known = 0
        self.pending: str | None = None
        self.conversation = ""
        """The user's words the plan was chosen from."""
        self.rebinding: dict[str, tuple[int, str, str]] = {}
        self.aliased: set[str] = set()
        self.open_asked: set[str] = set()
        self.made: dict[int, dict[str, Any]] = {}
        self.repeat: Repeat | None = None
        self.repetition: Repetition | None = None
        self.repeat_tried = False
        self.parts: list[str] = []
        self.routes: list[tuple[str, list[dict[str, Any]]]] = []
        self.routes_tried = False
        self.repeat_result: Any = None

    @property
    def exposed(self) -> list[str]:
        return sorted(self.episode.exposed) if self.episode else []

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        users = [m for m in messages if m.get("role") == "user"]
        for m in users:
            self.facts.update(parse_facts(m.get("content") or ""))
        if self.phase == "run":
            self._alias()
        if self.phase == "start":
            # first, what the user wants in their own words: the plan is chosen from the conversation
            self.episode = self.supply.episode(users[0].get("content") or "" if users else "")
            self.phase = "described"
            return _reply(DESCRIBE)
        if self.phase == "described":
            assert self.episode is not None
            conversation = " ".join(m.get("content") or "" for m in users)
            offered = frozenset(t.name for t in tools) if tools else None
            self.conversation = conversation
            view = self.episode.choose(conversation, offered)
            if view.plan is None:
                return self._finish(SORRY, "no planning skill retrieved")
            self.plan_steps = view.plan.body.get("steps", [])
            self.plan_id = view.plan.id
            # "… and every other lot of the same drug product whose status is available": the plan's
            # write made again on the parent's other records once the plan has run (D191)
            self.repeat = parse_repeat(conversation)
            self.parts = clauses(conversation)
            self.phase = "run"
            # then the chosen plan's facts, in the order its steps bind them (a step asks again for one
            # the user has not given when it comes to it)
            phrases = [f for f in plan_facts(self.plan_steps) if f not in self.facts]
            if phrases:
                phrases += self._said_alternatives(phrases, conversation)
                # with them, the fields the plan's writes may set and it binds to nothing: the user
                # answers those they hold (a question naming none of their facts would end the talk)
                self.open_asked = {p for p in self._open_fields() if p not in phrases}
                phrases += sorted(self.open_asked, key=self._open_fields().index)
                self.asked.update(phrases)
                self.pending = "facts"
                return _reply(ask_text(phrases))
        if self.phase == "run":
            last = messages[-1] if messages else {}
            if self.pending is not None:
                self.pending = None  # the user answered (or not) the step's question: bind again
                if self.rebinding and self._rebind():
                    self.routes = []  # the lookup takes the field the user gave; no other route needed
                if self.routes:
                    self._take_route()
                return self._next_call()
            if last.get("role") == "tool":
                content = last.get("content") or ""
                if content.startswith("error:"):  # the loop's refusal of the call's arguments (schema)
                    return self._finish(SORRY, f"call failed: {content[6:].strip()[:300]}")
                try:
                    value = json.loads(content or "null")
                except json.JSONDecodeError:
                    value = content  # a server whose results are text (a file's content): bound as it is
                if isinstance(value, dict) and value.get("code") and value.get("message") and len(value) <= 3:
                    return self._finish(SORRY, f"call failed: {value.get('message')}")
                if self.repetition is not None:
                    self.repeat_result = value
                elif self.paging is not None:
                    self._add_page(value)
                elif len(self.results) <= self.queue_step:
                    self.results.append(value)
                    self.texts.append(content)
            return self._next_call()
        if self.phase == "told":
            self.phase = "ended"
            return _reply(call=("call_end", END_CONVERSATION, {}))
        return _reply(call=("call_end", END_CONVERSATION, {}))

    queue_step = -1
    paging: int | None = None
    pages = 0

    def _plan_phrases(self) -> set[str]:
        return set(plan_facts(self.plan_steps))

    def _alias(self) -> None:
        """A phrase of the plan the user answered under their own name for it ("supplier site code" for
        "supplier site supplier code") binds that answer."""
        wanted = [p for p in [*plan_facts(self.plan_steps), *self.rebinding] if p not in self.facts]
        for phrase in wanted:
            # an answer to a field the writes may set is that field's new value, never a lookup's key
            given = [
                f
                for f in self.facts
                if f not in self._plan_phrases()
                and f not in self.open_asked
                and same_fact(phrase, f)
                and not self._picks_records(f)
            ]
            if len(given) == 1:
                self.facts[phrase] = self.facts[given[0]]
                self.aliased.add(given[0])

    def _spare(self) -> list[str]:
        """Facts the user gave that no binding of the plan has used."""
        used = self._plan_phrases() | self.aliased
        return [f for f in self.facts if f not in used and not self._picks_records(f)]

    def _picks_records(self, fact: str) -> bool:
        """A multi-record request's filter ("… whose status is open": the user's "ticket status" is open)
        picks the records; it is never a field a write sets (D191)."""
        rep = self.repeat
        return rep is not None and same_fact(rep.field, fact) and _same(self.facts[fact], rep.value)

    def _said_alternatives(self, phrases: list[str], conversation: str) -> list[str]:
        """For a lookup's fact the conversation never says ("customer order number"), the other fields its
        tool searches by that the conversation does name ("customer email"), asked with it: a question
        naming none of the user's facts ends the talk before the lookup could be rebound to one."""
        said = said_of(conversation)
        out: list[str] = []
        for step in self.plan_steps:
            tool = self.supply.catalog.tools.get(step["tool"])
            for b in step.get("args", {}).values():
                fact = b.get("fact")
                if fact not in phrases or all(w in said for w in tokens(fact)):
                    continue
                for phrase, _ in lookup_alternatives(step, fact, tool):
                    if phrase not in phrases and phrase not in out and all(w in said for w in tokens(phrase)):
                        out.append(phrase)
        return out

    def _open_fields(self) -> list[str]:
        """Fields the plan's writes may set and it binds to nothing, as phrases ("scheduled date")."""
        out = []
        for step in self.plan_steps:
            tool = self.supply.catalog.tools.get(step["tool"])
            if tool is None or tool.effect == "read":
                continue
            for prop, schema in tool.input_schema.get("properties", {}).items():
                if prop in step.get("args", {}) or prop in PAGING or prop.endswith("_id"):
                    continue
                if isinstance(schema, dict) and schema.get("type") in ("array", "object"):
                    continue
                out.append(prop.replace("_", " "))
        return list(dict.fromkeys(out))

    def _with_given(self, step: dict[str, Any], tool: Any) -> dict[str, Any]:
        """A write step with every field it binds to nothing that a fact the user gave names (by the
        schema's property names) bound to that fact."""
        if tool is None or tool.effect == "read":
            return step
        props = tool.input_schema.get("properties", {})
        args = dict(step.get("args", {}))
        for fact in self._spare():
            prop = fact_argument(fact, props)
            if prop is not None and prop not in arg_roots(args) and prop not in PAGING:
                args[prop] = {"fact": fact}
                self.aliased.add(fact)
        return {**step, "args": args}

    def _next_call(self) -> ModelReply:
        if not self.queue:
            if self.step >= len(self.plan_steps):
                return self._repeat_next() or self._finish(DONE_TEXT, "")
            step = self.plan_steps[self.step]
            tool = self.supply.catalog.tools.get(step["tool"])
            steps = unnamed_keys(self.plan_steps, self.parts, self.supply.catalog)  # D199
            if len(self.parts) > 1:  # a fact the request names twice: the value of this step's clause (D194)
                steps = by_clause(steps, self.parts, self.facts, self.supply.catalog)
            step = steps[self.step]
            step = self._with_given(step, tool)
            # a write leaves out an optional field the user could not give; a lookup asks for another key
            writes = tool is not None and tool.effect != "read"
            unknown = frozenset(self.asked - set(self.facts)) if writes else frozenset()
            try:
                enums = field_enums(self.supply.catalog, tool.domain) if writes and tool else None
                batch = bind_step(
                    step,
                    self.facts,
                    self.results,
                    tool.input_schema if tool else None,
                    unknown,
                    enums,
                    self.texts,
                )
            except MissingFact as exc:
                if exc.fact in self.asked and not self.rebinding:
                    # a lookup by a fact the user lacks: look the record up by another field its tool's
                    # schema searches by, one the user gave already or, asked for, gives
                    options = lookup_alternatives(step, exc.fact, tool)
                    if options:
                        self.rebinding = {phrase: (self.step, exc.fact, prop) for phrase, prop in options}
                        if self._rebind():
                            return self._next_call()
                        self.rebinding = {phrase: (self.step, exc.fact, prop) for phrase, prop in options}
                        phrases = list(self.rebinding) + self._said_routes(exc.fact, tool)
                        self.asked.update(phrases)
                        self.pending = "rebind"
                        return _reply(ask_text(phrases))
                if (
                    exc.fact in self.asked
                    and not self.routes_tried
                    and tool is not None
                    and tool.effect == "read"
                ):
                    # no field of the lookup's tool the user has: another route to the records the plan
                    # lists by the fact, from the catalog's schemas (D192)
                    self.routes_tried = True
                    routes = other_routes(self.plan_steps, exc.fact, self.supply.catalog)
                    self.routes = list(routes)
                    if routes and self._take_route():
                        return self._next_call()
                    if routes:
                        self.routes = routes
                        phrases = list(dict.fromkeys(p for p, _ in routes))
                        self.asked.update(phrases)
                        self.pending = "route"
                        return _reply(ask_text(phrases))
                if exc.fact in self.asked:
                    return self._finish(SORRY, str(exc))
                # a step needs a fact nobody asked for yet: ask for it when the step needs it
                self.asked.add(exc.fact)
                self.pending = exc.fact
                return _reply(ask_text([exc.fact]))
            except NoMatch as exc:
                page = self._next_page(exc.step)
                if page is not None:
                    return page
                return self._finish(SORRY, str(exc))
            except BindingError as exc:
                return self._finish(SORRY, str(exc))
            self.queue = [(self.step, a) for a in batch]
            self.step += 1
        k, args = self.queue.pop(0)
        self.queue_step = k
        self.calls += 1
        self.made.setdefault(k, args)
        return _reply(call=(f"call_{self.calls}", self.plan_steps[k]["tool"], args))

    def _repeat_next(self) -> ModelReply | None:
        """The next call of a multi-record request's repetition (D191), None when there is none (more)."""
        if self.repetition is None:
            rep, self.repeat = self.repeat, None
            self.repetition = Repetition.start(
                rep, self.plan_steps, self.made, self.results, self.supply.catalog
            )
            if self.repetition is None:
                return None
        nxt = self.repetition.next(self.repeat_result)
        if nxt is None:
            return None
        self.calls += 1
        return _reply(call=(f"call_{self.calls}", *nxt))

    def _next_page(self, k: int) -> ModelReply | None:
        """No item of step k's list matches: when its result says there is a next page and its tool pages
        by `offset`, the same call again for that page (at most 10 pages an episode)."""
        result = self.results[k] if 0 <= k < len(self.results) else None
        tool = self.supply.catalog.tools.get(self.plan_steps[k]["tool"]) if k < len(self.plan_steps) else None
        nxt = result.get("next_offset") if isinstance(result, dict) else None
        if nxt is None or tool is None or "offset" not in tool.input_schema.get("properties", {}):
            return None
        if self.pages >= 10 or k not in self.made:
            return None
        self.pages += 1
        self.paging = k
        self.calls += 1
        return _reply(call=(f"call_{self.calls}", tool.name, {**self.made[k], "offset": nxt}))

    def _add_page(self, value: Any) -> None:
        """A later page's items joined to the step's first result."""
        k, self.paging = self.paging, None
        first = self.results[k]
        if isinstance(value, dict) and isinstance(first, dict):
            for key, items in value.items():
                if isinstance(items, list) and isinstance(first.get(key), list):
                    first[key] = [*first[key], *items]
            first["next_offset"] = value.get("next_offset")

    def _rebind(self) -> bool:
        """The lookup step takes the field the user gave instead of the fact they lacked; False when the
        user gave none of the fields."""
        given = [(phrase, at) for phrase, at in self.rebinding.items() if phrase in self.facts]
        if not given:
            # a fact the user named in their own words that names one of the fields
            props = {prop: phrase for phrase, (_, _, prop) in self.rebinding.items()}
            for fact in self._spare():
                prop = fact_argument(fact, dict.fromkeys(props))
                if prop is not None:
                    self.facts[props[prop]] = self.facts[fact]
                    self.aliased.add(fact)
                    given = [(props[prop], self.rebinding[props[prop]])]
                    break
        self.rebinding = {}
        if not given:
            return False
        phrase, (k, missing, prop) = given[0]
        step = dict(self.plan_steps[k])
        args = {n: b for n, b in step.get("args", {}).items() if b.get("fact") != missing}
        args[prop] = {"fact": phrase}
        self.plan_steps = [*self.plan_steps[:k], {**step, "args": args}, *self.plan_steps[k + 1 :]]
        return True

    def _said_routes(self, fact: str, tool: Any) -> list[str]:
        """Asked with a lookup's other fields: the phrases of the catalog's other routes to the records
        (D192) that the conversation says ("candidate email" when the plan lists a job opening's
        applications): none of the lookup's own fields said, the user could give only those."""
        if self.routes_tried or tool is None or tool.effect != "read":
            return []
        said = said_of(self.conversation)
        routes = [
            (phrase, steps)
            for phrase, steps in other_routes(self.plan_steps, fact, self.supply.catalog)
            if all(w in said for w in tokens(phrase))
        ]
        if not routes:
            return []
        self.routes_tried, self.routes = True, routes
        return [p for p in dict.fromkeys(p for p, _ in routes) if p not in self.rebinding]

    def _take_route(self) -> bool:
        """The first route whose phrase the user gave (under that name or their own for it) replaces the
        plan's steps from the current one on (steps before it have run and are the same in the route)."""
        routes, self.routes = self.routes, []
        for phrase, steps in routes:
            given = [f for f in self._spare() if same_fact(phrase, f)]
            if phrase not in self.facts and len(given) == 1:
                self.facts[phrase] = self.facts[given[0]]
                self.aliased.add(given[0])
            if phrase in self.facts:
                self.plan_steps = steps
                return True
        return False

    def _finish(self, text: str, failure: str) -> ModelReply:
        self.failure = failure
        self.phase = "told"
        return _reply(text)


class FactReplay:
    """Asks for a training task's facts by name, then makes the given calls (an instrument: no model)."""

    name = "steward-fact-replay"

    def __init__(self, facts: list[str], calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.facts = facts
        self.calls = calls
        self._next = -1 if facts else 0

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        if self._next == -1:
            self._next = 0
            return _reply(ask_text(self.facts))
        if self._next < len(self.calls):
            name, args = self.calls[self._next]
            self._next += 1
            return _reply(call=(f"call_{self._next}", name, dict(args)))
        if self._next == len(self.calls):
            self._next += 1
            return _reply(DONE_TEXT)
        return _reply(call=("call_end", END_CONVERSATION, {}))
