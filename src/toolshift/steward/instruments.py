"""Model-free measuring instruments of the Steward experiment (named as such, never a model pretending).

* `SkillFollower` executes what Steward supplies: it asks the user for the facts the candidate
  plans need, then (up to three times) for those the revised plan would need (`EpisodeSupply.ask_more`),
  lets the supply choose the plan, and runs its steps, asking for a fact when a step needs one and
  binding every argument from the user's facts or from earlier results by the skill's argument flow. It knows nothing else of the
  task: whether the library's knowledge is still usable is exactly what its success measures.
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
from toolshift.steward.distill import _same, get_path, parse_facts
from toolshift.steward.supply import ASK_ROUNDS, EpisodeSupply, Supply

SORRY = "I am sorry, I could not find a way to do that."


def _reply(text: str | None = None, call: tuple[str, str, dict[str, Any]] | None = None) -> ModelReply:
    calls = [ProposedCall(id=call[0], name=call[1], arguments=call[2])] if call else []
    return ModelReply(text=text, calls=calls, prompt_tokens=0, completion_tokens=0, cost=0.0)


def ask_text(phrases: list[str]) -> str:
    return "To help with that I need a few details. Could you tell me your " + "; ".join(phrases) + "?"


def coerce(value: Any, schema: dict[str, Any] | None) -> Any:
    """A fact's text as the type the parameter's schema asks for (integer, number, boolean)."""
    kind = (schema or {}).get("type")
    if not isinstance(value, str):
        return value
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


def _select(
    result: Any, path: list[Any], where: dict[str, str], facts: dict[str, str], each: bool
) -> list[Any]:
    if "*" not in path:
        value = get_path(result, path)
        if value is None:
            raise BindingError(f"no value at {'.'.join(map(str, path))}")
        return [value]
    at = path.index("*")
    items = get_path(result, path[:at])
    if not isinstance(items, list):
        raise BindingError(f"no list at {'.'.join(map(str, path[:at]))}")
    picked = [
        it
        for it in items
        if all(isinstance(it, dict) and p in facts and _same(it.get(f), facts[p]) for f, p in where.items())
    ]
    values = [get_path(it, path[at + 1 :]) for it in picked]
    values = [v for v in values if v is not None]
    if not values:
        raise BindingError("no result item matches " + ", ".join(f"{f} = the {p}" for f, p in where.items()))
    return values if each else values[:1]


def _by_name(name: str, results: list[Any]) -> Any:
    """An atomic skill's input: the latest earlier result holding a field of that name, at the top level
    or in nested objects and lists' first items (shallowest first, so a result nested under `data`
    still serves)."""
    for r in reversed(results):
        level = [r]
        for _ in range(4):
            for node in level:
                if isinstance(node, dict) and node.get(name) is not None:
                    return node[name]
            level = [
                c
                for node in level
                for c in (
                    node.values() if isinstance(node, dict) else node[:1] if isinstance(node, list) else []
                )
                if isinstance(c, dict | list)
            ]
    raise BindingError(f"no earlier result has a {name}")


def bind_step(
    step: dict[str, Any], facts: dict[str, str], results: list[Any], schema: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The concrete argument dicts of one plan step (several for an `each` step)."""
    props = (schema or {}).get("properties", {})
    fixed: dict[str, Any] = {}
    varying: tuple[str, list[Any]] | None = None
    for name, b in step.get("args", {}).items():
        if "fact" in b:
            if b["fact"] not in facts:
                raise MissingFact(b["fact"])
            fixed[name] = coerce(facts[b["fact"]], props.get(name))
        elif "step" in b:
            if not 0 <= b["step"] < len(results):
                raise BindingError(f"step {b['step']} has no result")
            values = _select(results[b["step"]], b["path"], b.get("where", {}), facts, bool(step.get("each")))
            if step.get("each") and "*" in b["path"] and varying is None:
                varying = (name, values)
            else:
                fixed[name] = values[0]
        elif "input" in b:
            fixed[name] = _by_name(b["input"], results)
        elif "value" in b:
            fixed[name] = b["value"]
        else:
            raise BindingError(f"argument {name} has no source")
    if varying is None:
        return [fixed]
    return [{**fixed, varying[0]: v} for v in varying[1]]


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
        self.calls = 0
        self.failure = ""
        self.asked: set[str] = set()
        self.rounds = 0
        self.known = 0
        self.pending: str | None = None

    @property
    def exposed(self) -> list[str]:
        return sorted(self.episode.exposed) if self.episode else []

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        users = [m for m in messages if m.get("role") == "user"]
        for m in users:
            self.facts.update(parse_facts(m.get("content") or ""))
        if self.phase == "start":
            self.episode = self.supply.episode(users[0].get("content") or "" if users else "")
            phrases = self.episode.ask()
            if not self.episode.candidates:
                return self._finish(SORRY, "no planning skill retrieved")
            self.phase = "asked"
            if phrases:
                self.asked.update(phrases)
                return _reply(ask_text(phrases))
        if self.phase == "asked":
            assert self.episode is not None
            if self.rounds < ASK_ROUNDS and (self.rounds == 0 or len(self.facts) > self.known):
                # again, for the facts the revised plan needs (the parts that could follow, or the
                # plans closest to fitting), while the last question brought new facts
                self.rounds += 1
                self.known = len(self.facts)
                phrases = self.episode.ask_more(self.facts, self.asked)
                if phrases:
                    self.asked.update(phrases)
                    return _reply(ask_text(phrases))
            view = self.episode.plan(self.facts)
            if view.plan is None:
                return self._finish(SORRY, "no candidate plan fits the user's facts")
            self.plan_steps = view.plan.body.get("steps", [])
            self.plan_id = view.plan.id
            self.phase = "run"
        if self.phase == "run":
            last = messages[-1] if messages else {}
            if self.pending is not None:
                self.pending = None  # the user answered (or not) the step's question: bind again
                return self._next_call()
            if last.get("role") == "tool":
                try:
                    value = json.loads(last.get("content") or "null")
                except json.JSONDecodeError:
                    value = None
                if isinstance(value, dict) and value.get("code") and value.get("message") and len(value) <= 3:
                    return self._finish(SORRY, f"call failed: {value.get('message')}")
                if len(self.results) <= self.queue_step:
                    self.results.append(value)
            return self._next_call()
        if self.phase == "told":
            self.phase = "ended"
            return _reply(call=("call_end", END_CONVERSATION, {}))
        return _reply(call=("call_end", END_CONVERSATION, {}))

    queue_step = -1

    def _next_call(self) -> ModelReply:
        if not self.queue:
            if self.step >= len(self.plan_steps):
                return self._finish(DONE_TEXT, "")
            step = self.plan_steps[self.step]
            tool = self.supply.catalog.tools.get(step["tool"])
            try:
                batch = bind_step(step, self.facts, self.results, tool.input_schema if tool else None)
            except MissingFact as exc:
                if exc.fact in self.asked:
                    return self._finish(SORRY, str(exc))
                # a step needs a fact nobody asked for yet: ask for it when the step needs it
                self.asked.add(exc.fact)
                self.pending = exc.fact
                return _reply(ask_text([exc.fact]))
            except BindingError as exc:
                return self._finish(SORRY, str(exc))
            self.queue = [(self.step, a) for a in batch]
            self.step += 1
        k, args = self.queue.pop(0)
        self.queue_step = k
        self.calls += 1
        return _reply(call=(f"call_{self.calls}", self.plan_steps[k]["tool"], args))

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
