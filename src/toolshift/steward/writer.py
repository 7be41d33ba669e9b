"""`--model` distillation: a chat model (any of `toolshift run`'s) writes and revises each skill's instructions.

Model-free distillation extracts the workflow (steps, argument flow); with a model, every skill the
maintainer writes (an `add` or a `revise` edit) also gets instructions the model wrote from it —
the skill's description, its steps and where each argument comes from, the tools' descriptions, and
on a revision the instructions it had — stored in the skill's body (`instructions`, `written_by`) and
rendered in its SKILL.md. Every prompt and completion token is counted into the version's `work`
row, so maintenance tokens per task are reported as the seed reports them. State edits (activate,
deactivate) cost no tokens.
"""

from __future__ import annotations

import asyncio
from typing import Any

from toolshift.agents.chat import ChatModel
from toolshift.steward.catalog import Catalog
from toolshift.steward.library import Skill

SYSTEM = (
    "You maintain a library of skills for a customer-service agent that calls tools. Given one skill, "
    "write its instructions: two to four short sentences telling the agent when to use it and how, "
    "in order, naming each tool and where each argument comes from. Plain text, no lists."
)
MAX_CHARS = 2000


def _source(b: dict[str, Any]) -> str:
    if "fact" in b:
        return f"the user's {b['fact']}"
    if "template" in b:
        return f"the text {b['template']!r} with the user's facts put in"
    if "step" in b:
        where = ", ".join(f"{f} = the {p}" for f, p in b.get("where", {}).items())
        path = ".".join(map(str, b.get("path", [])))
        return f"step {b['step'] + 1}'s result {path}" + (f" where {where}" if where else "")
    if "input" in b:
        return f"an earlier result's {b['input']}"
    return f"the value {b.get('value')!r}"


def prompt(skill: Skill, catalog: Catalog | None = None) -> str:
    """What the model is shown for one skill."""
    lines = [f"Skill ({skill.level}, {skill.domain}): {skill.description}"]
    steps = skill.body.get("steps", skill.body.get("calls", []))
    for k, step in enumerate(steps, 1):
        args = "; ".join(f"{n} from {_source(b)}" for n, b in step.get("args", {}).items())
        lines.append(
            f"Step {k}: {step['tool']}"
            + (f" ({args})" if args else "")
            + (" for each" if step.get("each") else "")
        )
    for name in skill.tools:
        tool = catalog.tools.get(name) if catalog is not None else None
        if tool is not None:
            lines.append(f"Tool {name}: {tool.description[:300]}")
    for note in skill.body.get("notes", [])[:5]:
        lines.append(f"Note: {note}")
    if skill.body.get("instructions"):
        lines.append(
            f"Its instructions so far (revise them for the steps above): {skill.body['instructions']}"
        )
    return "\n".join(lines)


class ModelWriter:
    """A `Maintainer` reviser: the skill with model-written instructions, and the tokens they cost."""

    def __init__(self, model: ChatModel, catalog: Catalog | None = None) -> None:
        self.model = model
        self.catalog = catalog
        self.calls = 0

    def __call__(self, skill: Skill) -> tuple[Skill, int]:
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": prompt(skill, self.catalog)},
        ]
        reply = asyncio.run(self.model.complete(messages, []))
        self.calls += 1
        tokens = (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        text = (reply.text or "").strip()[:MAX_CHARS]
        if not text:
            return skill, tokens
        name = getattr(self.model, "name", type(self.model).__name__)
        body = {**skill.body, "instructions": text, "written_by": str(name)}
        return Skill(skill.id, skill.level, skill.domain, skill.description, body, skill.tools), tokens
