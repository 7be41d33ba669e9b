"""How naturally a task's intent is written: a rubric scored by rules, or by a judge model where configured.

The seed filters templates with an LLM evaluator (motivation clarity, coherence, function coverage,
naturalness, specificity). Coverage, coherence and specificity are checked mechanically at synthesis
(D20); this rubric scores the wording. Rules (each pass/fail per instruction; score = 1 + 4 × share
passed, so 1–5 like the judge's):

- `names_by_identifier`: no row is reached through another record while the user states its own
  identifier and a read looks rows up by it;
- `short_references`: no reference runs through more than two other records;
- `no_echo`: no record's noun recurs within one reference ("the category of the category …");
- `one_whose`: at most one "whose" per clause;
- `plain_words`: no raw field or value names (`_`), no doubled words;
- `readable_length`: no clause over 30 words;
- `natural_values`: no yes/no attribute read out as "whose reissued is no".

A judge model (`--judge MODEL`, any `toolshift run` model) scores the intent 1–5 with the same rubric
in its prompt; its scores are cached beside the build by model and task fingerprint.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolshift.errors import BadInputError
from toolshift.fileio import read_json
from toolshift.models import Task

RULES = (
    "names_by_identifier",
    "short_references",
    "no_echo",
    "one_whose",
    "plain_words",
    "readable_length",
    "natural_values",
)
MAX_HOPS = 2
MAX_CLAUSE_WORDS = 30
_PIECES = re.compile(r"; then you also want to |[();]")


@dataclass
class RubricScore:
    passed: dict[str, bool]

    @property
    def score(self) -> float:
        return 1 + 4 * sum(self.passed.values()) / len(self.passed)


def clauses(intent: str) -> list[str]:
    """The intent cut at clause boundaries (each change, and each parenthesised detail)."""
    return [p.strip() for p in _PIECES.split(intent.removeprefix("You want to ").rstrip(".")) if p.strip()]


def rule_score(task: Task, nouns: list[str], routed_despite_identifier: bool) -> RubricScore:
    """The rubric by rules; `nouns` are the domain's entity nouns, longest first."""
    pieces = clauses(task.instruction.intent)
    alternatives = "|".join(re.escape(n) for n in sorted(nouns, key=len, reverse=True))
    noun_re = re.compile(rf"\b(?:{alternatives})\b") if alternatives else None
    hop_re = re.compile(rf"\b(?:of|on) (?:the |every |an? )?(?:{alternatives})\b") if alternatives else None

    def hops(p: str) -> int:
        return len(hop_re.findall(p)) if hop_re else 0

    def echoes(p: str) -> bool:
        if noun_re is None or not hops(p):
            return False
        found = noun_re.findall(re.sub(rf"\bevery other (?:{alternatives})\b", "", p))
        return len(found) != len(set(found))

    text = task.instruction.intent
    passed = {
        "names_by_identifier": not routed_despite_identifier,
        "short_references": all(hops(p) <= MAX_HOPS for p in pieces),
        "no_echo": not any(echoes(p) for p in pieces),
        "one_whose": all(p.count("whose ") <= 1 for p in pieces),
        "plain_words": "_" not in text and not re.search(r"\b(\w+) \1\b", text),
        "readable_length": all(len(p.split()) <= MAX_CLAUSE_WORDS for p in pieces),
        "natural_values": not re.search(r"\bwhose [\w ]+ is (?:yes|no)\b", text),
    }
    return RubricScore(passed)


JUDGE_PROMPT = (
    "You rate how naturally a task request is written, as a person would describe their own errand to a "
    "colleague. Consider: is the motivation clear, is it coherent, is each record named the way a person "
    "who knows it would name it (by its own number, email or name, not through a chain of other records), "
    "and is the wording plain English rather than field names? Reply with a single digit from 1 (machine-"
    "like, hard to follow) to 5 (fully natural)."
)


def model_judge(spec: str, *, seed: int = 0) -> Callable[[str], int | None]:
    """A 1–5 scorer backed by an agents chat model (`embedded`, `openai:<name>`, `anthropic:<name>`)."""
    import asyncio

    from toolshift.agents.config import RunConfig, make_model

    model = make_model(spec, RunConfig(world="bench", model=spec, temperature=0.0), seed=seed)

    def judge(text: str) -> int | None:
        messages = [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": text}]
        reply = asyncio.run(model.complete(messages, []))
        found = re.search(r"[1-5]", reply.text or "")
        return int(found.group()) if found else None

    return judge


class JudgeCache:
    """Judge scores by (model, task fingerprint), kept in `DIR/naturalness.json` (written atomically)."""

    def __init__(self, path: Path, model: str) -> None:
        self.path, self.model = path, model
        try:
            data = read_json(path, what="naturalness cache")
        except BadInputError:
            data = {}
        self.data: dict[str, dict[str, int | None]] = data if isinstance(data, dict) else {}

    def score(self, task: Task, judge: Callable[[str], int | None]) -> int | None:
        scores = self.data.setdefault(self.model, {})
        fp = task.fingerprint()
        if fp not in scores:
            scores[fp] = judge(task.instruction.intent)
        return scores[fp]

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
