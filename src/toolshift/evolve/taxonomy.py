"""The seed's five task features (Table 1), labelled by rules over a task's ground truth and text.

- specification: the instruction asks for an exact form (format words, or a quoted value it must write);
- reasoning: a written number or date appears neither in what the user says nor in an earlier result
  (it has to be computed);
- distractor: the user holds a fact the ground truth never uses, or a read returns several records of
  which exactly one is used;
- intermediate_tool_call: a later call needs a value the user never says, found in an earlier result;
- constraint_filter: conditional or restricting words (only, unless, except, if ...), or a read returns
  three or more records of which some but not all are acted on.

A judge model can label the same features instead (`judge.py`); these rules are what runs offline.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolshift.models import Task

FEATURES = ("specification", "reasoning", "distractor", "intermediate_tool_call", "constraint_filter")

_FILTER_WORDS = re.compile(
    r"\b(only|unless|except|if|but not|at least|more than|fewer than|less than|whichever)\b"
)
_FORMAT_WORDS = re.compile(r"\b(exactly|format|formatted|in the form|word for word|verbatim|spelled)\b")
_QUOTED = re.compile(r"['\"“‘]([^'\"”’]{3,})['\"”’]")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _text(task: Task) -> str:
    i = task.instruction
    return " ".join([task.public_request, i.intent, *i.facts.values()]).lower()


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False).lower()


def _number_forms(v: float | int) -> list[str]:
    forms = {str(v)}
    if isinstance(v, float):
        forms |= {f"{v:.2f}", f"{v:g}", f"{v:.1f}"}
        if v.is_integer():
            forms.add(str(int(v)))
    return sorted(forms)


def _items(result: Any) -> list[dict[str, Any]]:
    if isinstance(result, dict) and isinstance(result.get("items"), list):
        return [r for r in result["items"] if isinstance(r, dict)]
    return []


def _item_ids(item: dict[str, Any]) -> set[str]:
    return {
        str(v).lower() for k, v in item.items() if isinstance(v, str) and (k.endswith("_id") or k == "id")
    }


def task_features(task: Task, writes: set[str]) -> list[str]:
    """The features the rules find in `task`, in the taxonomy's order."""
    text = _text(task)
    found: set[str] = set()
    gold = task.gold_path
    later_args: list[str] = []
    for i, call in enumerate(gold):
        earlier = " ".join(_canon(g.result) for g in gold[:i])
        for v in call.arguments.values():
            if isinstance(v, str) and len(v) >= 3:
                low = v.lower()
                if low not in text and low in earlier:
                    found.add("intermediate_tool_call")
            if call.tool in writes and not isinstance(v, bool):
                if isinstance(v, int | float):
                    if not any(f in text for f in _number_forms(v)) and not any(
                        f in earlier for f in _number_forms(v)
                    ):
                        found.add("reasoning")
                elif (
                    isinstance(v, str)
                    and _DATE.match(v)
                    and v.lower() not in text
                    and v.lower() not in earlier
                ):
                    found.add("reasoning")
    for i, call in enumerate(gold):
        items = _items(call.result)
        if len(items) < 2:
            continue
        later_args = [str(v).lower() for g in gold[i + 1 :] for v in g.arguments.values()]
        used = [it for it in items if _item_ids(it) & set(later_args)]
        if len(used) == 1:
            found.add("distractor")
        elif len(items) >= 3 and 2 <= len(used) < len(items):
            found.add("constraint_filter")
    used_text = " ".join(_canon(g.arguments) + " " + _canon(g.result) for g in gold)
    for value in task.instruction.facts.values():
        if value.strip() and value.lower() not in used_text:
            found.add("distractor")
    intent = " ".join([task.public_request, task.instruction.intent]).lower()
    if _FILTER_WORDS.search(intent):
        found.add("constraint_filter")
    if _FORMAT_WORDS.search(intent):
        found.add("specification")
    written = {
        str(v).lower()
        for g in gold
        if g.tool in writes
        for v in g.arguments.values()
        if isinstance(v, str) and len(v) >= 3
    }
    if any(q.lower() in written for q in _QUOTED.findall(task.instruction.intent)):
        found.add("specification")
    return [f for f in FEATURES if f in found]
