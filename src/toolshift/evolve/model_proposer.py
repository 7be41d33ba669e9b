"""The model proposer: any configured model rewrites the parent's program, shown five inspirations.

The instructions are the seed's proposer prompts (its appendix A) in our words: act as a developer
improving a program whose scores should rise; the program's `get_task` returns one Python literal with
Python constants; change only the EVOLVE-BLOCK; the solver starts blind and learns the task only from
a simulated user who holds the instruction; the ground-truth calls must solve the new scenario and are
replayed on a fresh world before anything else; aim for tasks the solver completes about half the
time. The reply is a SEARCH/REPLACE diff or a full rewrite (OpenEvolve's formats, `diffs.py`).
"""

from __future__ import annotations

import json

from toolshift.evolve.archive import Cost, ProgramRecord
from toolshift.evolve.diffs import DIVIDER, REPLACE, SEARCH, apply_response
from toolshift.evolve.fitness import METRICS
from toolshift.evolve.modelcalls import complete
from toolshift.evolve.program import ProgramError
from toolshift.world import load_domain

SYSTEM = f"""You are an expert software developer. You improve a program step by step so that its scores \
on the evaluation metrics go up (larger is better). Follow good Python practice.

The program defines `get_task()`, which returns one Python dictionary describing a tool-use task for a \
solver agent. Rules for your change:
- Change only what lies between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END comments; keep the markers.
- The block stays a single `return {{...}}` of a literal: strings, numbers, lists, dicts and the Python \
constants True, False and None (not JSON's true/false/null). No code: no calls, names, loops or imports. \
The program is parsed, never run, and anything else is refused.
- The solver starts blind: it never sees the dictionary. A simulated user opens with `public_request` and \
answers from `instruction` (its `intent`, and `facts` it gives only when asked). To make a new task, \
rewrite the user's side: `public_request` and `instruction`.
- `ground_truth_calls` must be the tool calls (name and arguments) that solve the new task. They are \
replayed on a fresh copy of the world before the solver sees the task; if any call fails, or the calls \
change nothing, the task is rejected with the world's error. Success is judged by the state changes \
they leave. `initial_state` (optional) lists calls that set up the world before the episode.
- Never name a tool in the user's text.

The overarching goal is to stress-test the solver: tasks it solves about half the time, neither always \
nor never. Make tasks harder when they are solved too often (hide identifiers behind lookups, add steps, \
constraints, distractors or a value to compute) and easier when they are rarely solved. Each task is tried \
10 times; a task never solved perfectly scores nothing.

Reply with your change in this exact format (one or more blocks; each SEARCH must match the current \
program exactly, once):
{SEARCH}
<lines to find>
{DIVIDER}
<lines to put instead>
{REPLACE}
or with the whole new program in one ```python fenced block."""


class UnusableResponse(ProgramError):
    """The model answered, but with no change we can apply: the reason, the response and what it cost."""

    def __init__(self, reason: str, response: str, cost: Cost) -> None:
        super().__init__(reason)
        self.response = response
        self.cost = cost


def _scores(r: ProgramRecord) -> str:
    if not r.evaluated:
        return f"rejected at {r.stage}: {r.reason}"
    parts = [f"completion rate {r.completion:.2f}", f"mean trajectory length {r.length or 0:.1f}"]
    parts += [f"{m} {r.scores[m]:.3f}" for m in METRICS]
    return "; ".join(parts) + ("" if r.feasible else " (infeasible: never solved perfectly)")


MAX_TOOLS = 24


def _tool_lines(domain: str, used: set[str]) -> list[str]:
    """The tools a change to this task is likely to need: those of the entities its calls touch, the
    relations between them and the domain's own actions (at most 24, the task's own first)."""
    compiled = load_domain(domain)
    entities = {str(t.meta.get("entity")) for t in compiled.tools if t.name in used and t.meta.get("entity")}
    for t in compiled.tools:
        if t.name in used and t.meta.get("to"):
            entities.add(str(t.meta["to"]))
    picked = [t for t in compiled.tools if t.name in used]
    picked += [
        t for t in compiled.tools
        if t.name not in used
        and (t.meta.get("entity") in entities or t.meta.get("to") in entities or t.meta.get("kind") == "action")
    ]  # fmt: skip
    lines = []
    for t in picked[:MAX_TOOLS]:
        props = (t.input_schema or {}).get("properties") or {}
        req = set((t.input_schema or {}).get("required") or [])
        args = ", ".join(f"{k}{'' if k in req else '?'}" for k in props if k not in ("limit", "offset"))
        lines.append(f"- {t.name}({args}) [{t.effect}]: {t.description.splitlines()[0][:110]}")
    if len(compiled.tools) > len(lines):
        lines.append(f"(and {len(compiled.tools) - len(lines)} more tools of this world)")
    return lines


def proposer_messages(parent: ProgramRecord, inspirations: list[ProgramRecord]) -> list[dict[str, str]]:
    """The messages for one step: world tools, the parent's program and scores, and the inspirations."""
    task = parent.task
    used = {g.tool for g in task.gold_path} if task is not None else set()
    results = ""
    if task is not None:
        shown = [{"tool": g.tool, "result": g.result} for g in task.gold_path]
        text = json.dumps(shown, default=str)
        results = (
            f"\n\nWhat the parent's ground-truth calls returned (for real ids and values):\n{text[:3000]}"
        )
    others = []
    for i, r in enumerate(inspirations, 1):
        instruction = r.task.public_request + " / " + r.task.instruction.intent if r.task else "(not a task)"
        others.append(
            f"### Inspiration {i}\nInstruction: {instruction[:600]}\nScores: {_scores(r)}\n"
            f"Feedback: {r.feedback[:500] or '(none)'}"
        )
    user = (
        f"# World: {parent.domain}\nTools:\n" + "\n".join(_tool_lines(parent.domain, used)) + "\n\n"
        f"# Current program\n```python\n{parent.program}```\n"
        f"Scores: {_scores(parent)}\nFeedback on the solver's failures: {parent.feedback or '(none)'}"
        f"{results}\n\n# Other programs of the archive\n" + ("\n\n".join(others) or "(none yet)") + "\n\n"
        "Propose one change to the current program that raises its mean score."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def propose_with_model(
    spec: str,
    parent: ProgramRecord,
    inspirations: list[ProgramRecord],
    *,
    timeout: float,
    seed: int,
    base_url: str | None = None,
    max_tokens: int = 4096,
) -> tuple[str, str, str, Cost]:
    """(child program, "diff" | "rewrite", the model's response, cost); `ModelCallFailed` when the call fails,
    `UnusableResponse` (a `ProgramError` carrying the response and its cost) when it gives no usable change."""
    messages = proposer_messages(parent, inspirations)
    text, cost = complete(
        spec, messages, timeout=timeout, seed=seed, base_url=base_url, max_tokens=max_tokens
    )
    try:
        child, kind = apply_response(parent.program, text)
    except ProgramError as exc:
        raise UnusableResponse(str(exc), text, cost) from None
    return child, kind, text, cost


def describe_response(text: str, limit: int = 300) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:limit]
