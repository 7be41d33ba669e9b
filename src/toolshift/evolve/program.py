"""Task programs: a task as Python source whose `get_task()` returns one literal, parsed and never run.

A program (`toolshift.task-program/1`) is a small, fixed frame — a docstring, `DOMAIN = "<name>"` and
`def get_task() -> dict:` — around an EVOLVE-BLOCK holding `return {...}`. Proposers edit only the block.
Reading a program never executes it: the source is parsed with `ast`, the frame must be exactly ours,
the block must be a single `return` of a literal (dicts, lists, strings, numbers, True/False/None), and
the literal is checked against `TaskSpec`. A loop, a call, an import, a name or an operator is refused
with its line, whatever it would have done.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.models import GoldCall, RowChange, ScriptedTurn, UserInstruction

PROGRAM_FORMAT = "toolshift.task-program/1"
MAX_PROGRAM_CHARS = 64_000
MAX_LITERAL_NODES = 20_000
MAX_LITERAL_DEPTH = 24
MAX_TEXT = 4_000

START = "# EVOLVE-BLOCK-START"
END = "# EVOLVE-BLOCK-END"
_MARKER = re.compile(r"^[ \t]*#[ \t]*EVOLVE-BLOCK-(START|END)\b.*$")
_DOMAIN = re.compile(r'^DOMAIN = "([A-Za-z0-9_\-]{1,100})"$', re.M)
BLOCK_INDENT = "    "

FRAME_HEAD = '''"""A toolshift task program ({format}). Evolve only the dictionary between the EVOLVE-BLOCK markers.

`get_task` returns one Python literal: strings, numbers, True/False/None, lists and dicts. It is parsed,
never run, so code (calls, loops, imports, names, arithmetic) is refused.
"""

DOMAIN = "{domain}"


def get_task() -> dict:
'''


class ProgramError(ValueError):
    """A program that cannot be read as a task: the reason names the line or field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CallSpec(_Strict):
    """One tool call: a world tool's name and its arguments."""

    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)


class InstructionSpec(_Strict):
    """The user simulator's private manual (as `toolshift.models.UserInstruction`)."""

    intent: str = Field(min_length=1, max_length=MAX_TEXT)
    motivation: str = Field("", max_length=MAX_TEXT)
    facts: dict[str, str] = Field(default_factory=dict, max_length=60)
    rules: list[str] = Field(default_factory=list, max_length=30)


class ChangeSpec(_Strict):
    """One change the evaluation requires: a row's field left at a value (op defaults to any)."""

    table: str
    key: str
    field: str
    after: Any = None
    op: str | None = None


class CriteriaSpec(_Strict):
    """Optional evaluation criteria: only these changes are checked (each must be in the gold Δ)."""

    expected_changes: list[ChangeSpec] = Field(min_length=1, max_length=200)


class TurnSpec(_Strict):
    """One scripted user turn of a multi-turn benchmark task (BFCL): its message, how many ground-truth
    calls answer it, and which of the benchmark entry's turns it stands for (several when merged)."""

    text: str = Field(min_length=1, max_length=MAX_TEXT)
    calls: int = Field(ge=0, le=40)
    of: list[int] = Field(min_length=1, max_length=20)


class TaskSpec(_Strict):
    """What `get_task()` returns: the task as the proposer writes it."""

    public_request: str = Field(min_length=1, max_length=MAX_TEXT)
    """The user's opening line."""
    instruction: InstructionSpec
    initial_state: list[CallSpec] = Field(default_factory=list, max_length=20)
    """Calls applied to a fresh world before the episode begins (the task's starting state)."""
    ground_truth_calls: list[CallSpec] = Field(min_length=1, max_length=40)
    evaluation_criteria: CriteriaSpec | None = None
    turns: list[TurnSpec] = Field(default_factory=list, max_length=20)
    """A multi-turn benchmark task's scripted user turns (empty: one conversation with a user simulator)."""

    def user_instruction(self) -> UserInstruction:
        i = self.instruction
        return UserInstruction(
            intent=i.intent, motivation=i.motivation, facts=dict(i.facts), rules=list(i.rules)
        )


# --- rendering ------------------------------------------------------------------------------------


def literal_source(value: Any, indent: int = 0) -> str:
    """A Python literal for JSON-like data, one key or item per line (what proposers read and edit)."""
    pad, inner = "    " * indent, "    " * (indent + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{inner}{literal_source(str(k))}: {literal_source(v, indent + 1)}," for k, v in value.items()
        ]
        return "{\n" + "\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        if all(isinstance(v, str | int | float | bool) or v is None for v in value) and len(repr(value)) < 70:
            return "[" + ", ".join(literal_source(v) for v in value) + "]"
        items = [f"{inner}{literal_source(v, indent + 1)}," for v in value]
        return "[\n" + "\n".join(items) + f"\n{pad}]"
    if isinstance(value, float) and not math.isfinite(value):
        raise ProgramError(f"cannot write a non-finite number ({value!r}) as a literal")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a valid Python string literal, quoted as in the seed
    return repr(value)


def task_spec_data(spec: TaskSpec) -> dict[str, Any]:
    """The block's dictionary, in a stable key order, without empty optional parts."""
    data = spec.model_dump(mode="json", exclude_none=True)
    for part in ("initial_state", "turns"):
        if not data.get(part):
            data.pop(part, None)
    return data


def frame_head(domain: str) -> str:
    if not _DOMAIN.fullmatch(f'DOMAIN = "{domain}"'):
        raise ProgramError(f"domain {domain!r} cannot be written in a program")
    return FRAME_HEAD.format(format=PROGRAM_FORMAT, domain=domain)


def render_program(domain: str, spec: TaskSpec) -> str:
    """The program text for a task: our frame, and the block returning the task's literal."""
    body = "return " + literal_source(task_spec_data(spec))
    block = "\n".join(BLOCK_INDENT + line if line else line for line in body.split("\n"))
    return f"{frame_head(domain)}{BLOCK_INDENT}{START}\n{block}\n{BLOCK_INDENT}{END}\n"


# --- reading --------------------------------------------------------------------------------------


def split_block(text: str) -> tuple[str, str, str]:
    """(before, block, after): the frame around the one EVOLVE-BLOCK, markers kept in the frame parts."""
    lines = text.split("\n")
    marks = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _MARKER.match(line))]
    kinds = [k for _, k in marks]
    if kinds != ["START", "END"]:
        if not marks:
            raise ProgramError("no EVOLVE-BLOCK-START / EVOLVE-BLOCK-END markers")
        raise ProgramError(
            "exactly one EVOLVE-BLOCK is allowed: markers found on lines "
            + ", ".join(f"{i + 1} ({k})" for i, k in marks)
        )
    (s, _), (e, _) = marks
    before = "\n".join(lines[: s + 1])
    block = "\n".join(lines[s + 1 : e])
    after = "\n".join(lines[e:])
    return before, block, after


def with_block(frame_from: str, block_from: str) -> str:
    """`frame_from`'s frame around `block_from`'s block: edits outside the block are undone."""
    before, _, after = split_block(frame_from)
    _, block, _ = split_block(block_from)
    return f"{before}\n{block}\n{after}"


def program_domain(text: str) -> str:
    found = _DOMAIN.findall(text)
    if len(found) != 1:
        raise ProgramError('the frame must assign DOMAIN = "<name>" exactly once')
    return found[0]


def parse_program(text: str) -> tuple[str, TaskSpec]:
    """(domain, task) from a program's text, without running any of it. `ProgramError` says why not."""
    if not isinstance(text, str):
        raise ProgramError("a program is text")
    if len(text) > MAX_PROGRAM_CHARS:
        raise ProgramError(f"program is {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}")
    if "\x00" in text:
        raise ProgramError("program contains a NUL character")
    before, block, after = split_block(text)
    domain = program_domain(before)
    expected_head = frame_head(domain) + BLOCK_INDENT + START
    if before.rstrip() != expected_head.rstrip() or after.rstrip() != BLOCK_INDENT + END:
        raise ProgramError(
            "the code outside the EVOLVE-BLOCK is not the program frame (only the block may change)"
        )
    value = block_literal(block)
    if not isinstance(value, dict):
        raise ProgramError(f"get_task must return a dict, not a {type(value).__name__}")
    try:
        spec = TaskSpec.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "task"
        raise ProgramError(f"field {where!r}: {err['msg']}") from None
    return domain, spec


_ALLOWED = (ast.Dict, ast.List, ast.Tuple, ast.Constant, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load)


def block_literal(block: str) -> Any:
    """The value of the block's `return <literal>`; anything else in the block is refused with its line."""
    lines = [line for line in block.split("\n")]
    code = "\n".join(line[len(BLOCK_INDENT) :] if line.startswith(BLOCK_INDENT) else line for line in lines)
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        raise ProgramError(f"block line {exc.lineno}: not valid Python: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ProgramError(f"block cannot be parsed: {type(exc).__name__}") from None
    body = tree.body
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        first = next((s for s in body if not isinstance(s, ast.Return)), body[0] if body else None)
        what = type(first).__name__ if first is not None else "nothing"
        line = getattr(first, "lineno", 1)
        raise ProgramError(
            f"block line {line}: the block must be a single `return {{...}}` of a literal, found {what}"
        )
    expr = body[0].value
    _check_literal(expr)
    try:
        value = ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as exc:
        raise ProgramError(f"block line {expr.lineno}: not a literal: {exc}") from None
    return _plain(value)


def _check_literal(expr: ast.AST) -> None:
    """Only literal nodes, bounded in count and depth; names get a hint (JSON's true/false/null)."""
    stack: list[tuple[ast.AST, int]] = [(expr, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > MAX_LITERAL_NODES:
            raise ProgramError(f"the literal has more than {MAX_LITERAL_NODES:,} parts")
        if depth > MAX_LITERAL_DEPTH:
            raise ProgramError(
                f"block line {getattr(node, 'lineno', '?')}: nested deeper than {MAX_LITERAL_DEPTH}"
            )
        if isinstance(node, ast.Name):
            hint = {"true": "True", "false": "False", "null": "None"}.get(node.id)
            extra = f" (write {hint}: Python constants, not JSON)" if hint else ""
            raise ProgramError(f"block line {node.lineno}: name {node.id!r} is not a literal{extra}")
        if not isinstance(node, _ALLOWED):
            raise ProgramError(
                f"block line {getattr(node, 'lineno', '?')}: {type(node).__name__} is code, not a literal "
                "(programs are parsed, never run)"
            )
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes | complex | type(...)):
            raise ProgramError(
                f"block line {node.lineno}: {type(node.value).__name__} values are not allowed"
            )
        if isinstance(node, ast.UnaryOp) and not (
            isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int | float)
        ):
            raise ProgramError(f"block line {node.lineno}: a sign may only precede a number")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _plain(value: Any) -> Any:
    """Tuples as lists; non-finite floats refused (a world cannot store them)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ProgramError(f"number {value!r} is not finite")
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ProgramError(f"dict keys must be strings, not {type(k).__name__} ({k!r})")
            out[k] = _plain(v)
        return out
    return value


# --- conversions ----------------------------------------------------------------------------------


def spec_from_task(
    public_request: str,
    instruction: UserInstruction,
    gold: list[GoldCall],
    initial_state: list[GoldCall] | None = None,
    criteria: list[RowChange] | None = None,
    turns: list[ScriptedTurn] | None = None,
) -> TaskSpec:
    """The block's task for an existing task (a seed): its request, manual and gold calls."""
    return TaskSpec(
        public_request=public_request,
        instruction=InstructionSpec(
            intent=instruction.intent,
            motivation=instruction.motivation,
            facts=dict(instruction.facts),
            rules=list(instruction.rules),
        ),
        initial_state=[CallSpec(tool=c.tool, arguments=dict(c.arguments)) for c in initial_state or []],
        ground_truth_calls=[CallSpec(tool=c.tool, arguments=dict(c.arguments)) for c in gold],
        evaluation_criteria=CriteriaSpec(
            expected_changes=[
                ChangeSpec(table=c.table, key=c.key, field=c.field, after=c.after, op=c.op) for c in criteria
            ]
        )
        if criteria
        else None,
        turns=[TurnSpec(text=t.text, calls=t.gold_calls, of=[i]) for i, t in enumerate(turns or [])],
    )
