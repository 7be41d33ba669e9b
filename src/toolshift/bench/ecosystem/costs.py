"""Execution cost of an implementation: a 1–10 score from its declared work, fixed while it is unchanged.

The seed scores each implementation 1–10 with a model reading its definition; here the default is a
deterministic rubric over what the implementation declares it does (`Work`): the rows it reads
(one row, or a page), the tables it touches, the row writes and policy checks it makes, whether it
is destructive, how wide its rows are, and for a merged call how many of its steps write inside its
one transaction. A score is given once, when an implementation is created, and carried unchanged to
every later version: a renamed tool, or one with a renamed or added parameter or a new output
format, does the same work and keeps its source's score. An optional model scorer (`ModelScorer`,
any model `toolshift run` supports) replaces the rubric's score with the model's, cached by the
exact prompt, falling back to the rubric when a reply holds no score.

Rubric (docs/decisions.md, D67): score = clamp(1, 10,
  1                              a call
  + pages                        each page of rows returned (search, list, relation, find in an action)
  + (tables − 1)                 each further table read, written or checked (joins, references)
  + writes                       each row insert, update or delete
  + destructive                  1 if it deletes or irreversibly changes rows
  + [checks ≥ 2]                 1 for two or more policy checks
  + [wide and pages]             1 for a page of rows of 10 or more fields
  + 2 × (write steps − 1)        a merged call holding several steps' writes in one transaction)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from toolshift.errors import BadInputError
from toolshift.fileio import read_json
from toolshift.world.state.compiler import CompiledDomain
from toolshift.world.state.tools import Tool

MIN_SCORE, MAX_SCORE = 1, 10
WIDE_ROW = 10
"""Fields per row from which a page of rows counts as a heavy payload."""
_OP = re.compile(r"\b(get|find|insert|update|delete)\(\s*['\"](\w+)['\"]")


@dataclass(frozen=True)
class Work:
    """What one call of an implementation declares it does."""

    pages: int = 0
    tables: frozenset[str] = frozenset()
    writes: int = 0
    destructive: bool = False
    checks: int = 0
    fields: int = 0
    write_steps: int = 0
    """Steps of the call that write (1 for a single writing tool; a merged call sums its parts')."""

    def summary(self) -> str:
        """One line a person or a model reads."""
        return (
            f"returns {self.pages} page(s) of rows, touches {len(self.tables)} table(s)"
            f" ({', '.join(sorted(self.tables)) or 'none'}), makes {self.writes} row write(s) in"
            f" {self.write_steps} step(s), {self.checks} policy check(s),"
            f" {'destructive' if self.destructive else 'not destructive'}, rows of up to {self.fields} fields"
        )


def rubric_score(work: Work) -> int:
    """The deterministic 1–10 score of a call's declared work (module docstring)."""
    score = 1 + work.pages + max(0, len(work.tables) - 1) + work.writes + int(work.destructive)
    score += int(work.checks >= 2) + int(work.fields >= WIDE_ROW and work.pages > 0)
    score += 2 * max(0, work.write_steps - 1)
    return max(MIN_SCORE, min(MAX_SCORE, score))


def declared_work(tool: Tool, domain: CompiledDomain) -> Work:
    """The work a compiled (v1) tool declares: from its kind, its entity's schema, or its action's code."""
    meta = tool.meta
    kind = meta.get("kind")
    tables = domain.spec.entities
    by_name = {e.name: e for e in tables}
    entity = by_name.get(str(meta.get("entity", "")))
    width = len(entity.fields) if entity else 0
    refs = frozenset(f.ref for f in entity.fields if f.type == "ref" and f.ref) if entity else frozenset()
    own = frozenset({entity.name}) if entity else frozenset()
    if kind == "get":
        return Work(tables=own, fields=width)
    if kind in ("list", "search"):
        return Work(pages=1, tables=own, fields=width)
    if kind == "relation":
        dst = by_name.get(str(meta.get("to", "")))
        return Work(pages=1, tables=own | {str(meta.get("to"))}, fields=len(dst.fields) if dst else 0)
    if kind in ("create", "update"):
        return Work(tables=own | refs, writes=1, fields=width, write_steps=1)
    if kind == "delete":
        referrers = frozenset(
            e.name for e in tables for f in e.fields if f.type == "ref" and entity and f.ref == entity.name
        )
        return Work(tables=own | referrers, writes=1, destructive=True, write_steps=1)
    if kind == "action":
        act = next((a for a in domain.spec.actions if a.name == meta.get("action")), None)
        if act is None:
            return Work(writes=int(tool.effect == "write"), write_steps=int(tool.effect == "write"))
        ops = _OP.findall(act.code)
        param_refs = {p.ref for p in act.params if p.type == "ref" and p.ref}
        named = {t for _, t in ops} | param_refs
        writes = sum(1 for op, _ in ops if op in ("insert", "update", "delete"))
        if tool.effect == "write":
            writes = max(1, writes)
        widths = [len(by_name[t].fields) for op, t in ops if op == "find" and t in by_name]
        return Work(
            pages=int(any(op == "find" for op, _ in ops)),
            tables=frozenset(named),
            writes=writes,
            destructive=tool.destructive,
            checks=len(act.preconditions),
            fields=max(widths, default=0),
            write_steps=int(tool.effect == "write"),
        )
    return Work(writes=int(tool.effect == "write"), write_steps=int(tool.effect == "write"))


def merged_work(parts: Sequence[Work]) -> Work:
    """The declared work of one call that runs `parts` in order inside one transaction."""
    return Work(
        pages=sum(p.pages for p in parts),
        tables=frozenset().union(*(p.tables for p in parts)),
        writes=sum(p.writes for p in parts),
        destructive=any(p.destructive for p in parts),
        checks=sum(p.checks for p in parts),
        fields=max((p.fields for p in parts), default=0),
        write_steps=sum(p.write_steps for p in parts),
    )


DRAFT_WORK = Work()
"""A split's start and set calls only hold arguments in a pending draft: one call, no rows."""


def commit_work(source: Work) -> Work:
    """A split's commit runs the source's work."""
    return replace(source)


# --- the optional model scorer ---------------------------------------------------------------------

COST_PROMPT = (
    "You rate the execution cost of one tool of a company's tool catalog on a scale from 1 (trivial: "
    "reads one row) to 10 (very expensive: many rows and tables, several writes, destructive). Consider "
    "rows read and written, tables joined, side effects and payload size. Answer with one integer from 1 "
    "to 10 and nothing else.\n\nTool: {name}\nDescription: {description}\nParameters: {params}\n"
    "Declared work: {work}"
)
COST_CACHE_FORMAT = "toolshift.bench-cost-scores/1"
SCORE_TOKENS = 12
"""Tokens the embedded scorer may write: a score and little else."""
_INT = re.compile(r"\b(10|[1-9])\b")


def cost_prompt(tool: Tool, work: Work) -> str:
    params = ", ".join(tool.params) or "none"
    return COST_PROMPT.format(
        name=tool.name, description=tool.description, params=params, work=work.summary()
    )


def parse_score(text: str | None) -> int | None:
    """The first integer 1–10 in a reply, or None."""
    m = _INT.search(text or "")
    return int(m.group(1)) if m else None


class ModelScorer:
    """Scores implementations with a chat model, cached by model and exact prompt in a JSON file.

    The cache makes a score a fixed property: the same definition is never scored twice, and an
    interrupted evolve resumes without asking again. `asked` and `fallbacks` count model calls and
    replies that held no score (the rubric's score is used for those, and cached too).
    """

    def __init__(self, model: str, cache: Path, *, make: Callable[[], object] | None = None) -> None:
        self.model_spec = model
        self.cache_path = cache
        self._make = make
        self._model: object | None = None
        self.cache: dict[str, dict[str, object]] = {}
        if cache.is_file():
            try:
                self.cache = read_json(cache, what="cost cache").get("scores", {})
            except (BadInputError, AttributeError):
                self.cache = {}
        self.asked = 0
        self.fallbacks = 0

    def _chat(self) -> object:
        if self._model is None:
            if self._make is not None:
                self._model = self._make()
            elif self.model_spec == "embedded":
                from toolshift.agents.embedded import EmbeddedModel

                # its `user` role answers in free text (its agent role must call a tool); a score is short
                self._model = EmbeddedModel(temperature=0.0, seed=0, role="user", max_tokens=SCORE_TOKENS)
            else:
                from toolshift.agents.config import RunConfig, make_model

                config = RunConfig(world="bench-costs", model=self.model_spec, temperature=0.0)
                self._model = make_model(self.model_spec, config, seed=0)
        return self._model

    def score(self, tool: Tool, work: Work) -> int:
        prompt = cost_prompt(tool, work)
        key = hashlib.sha256(f"{self.model_spec}\n{prompt}".encode()).hexdigest()[:20]
        hit = self.cache.get(key)
        if hit is not None:
            return int(hit["score"])  # type: ignore[call-overload]
        model = self._chat()
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": "Your score (1-10):"}]
        reply = asyncio.run(model.complete(messages, []))  # type: ignore[attr-defined]
        self.asked += 1
        got = parse_score(reply.text)
        fallback = got is None
        if got is None:
            self.fallbacks += 1
            got = rubric_score(work)
        self.cache[key] = {"tool": tool.name, "score": got, "model": self.model_spec, "fallback": fallback}
        return got

    def save(self) -> None:
        """Write the cache beside, then rename (an interrupted save loses nothing already cached)."""
        body = {"format": COST_CACHE_FORMAT, "scores": self.cache}
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_path.with_name(self.cache_path.name + ".tmp")
        tmp.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.cache_path)
