"""BFCL multi-turn tasks as worlds: BFCL's own API classes, state and checker, from the `bfcl-eval` package.

A world `bfcl:<entry id>` (e.g. `bfcl:multi_turn_base_0`) holds instances of the entry's involved classes
(GorillaFileSystem, MathAPI, MessageAPI, TwitterAPI, TicketAPI, TradingBot, TravelAPI, VehicleControlAPI),
each loaded from the entry's initial config by BFCL's own `_load_scenario`, exactly as BFCL's harness does.
Its tools are BFCL's function docs for those classes, with BFCL's own type mapping into JSON Schema.

Judging is BFCL's `multi_turn_checker` (state and response checks, turn by turn), reached as BFCL's eval
runner reaches it. That checker runs call strings through Python's `eval`, so it is only ever given strings
toolshift wrote: every call — the agent's, and the possible answer's, which is parsed with `ast` (literals
only, never evaluated) — is re-serialised from a validated method name and JSON values with `repr`.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import itertools
import pickle
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import loads_json, read_text
from toolshift.models import GoldCall, ScriptedTurn, Task, UserInstruction
from toolshift.world.external.objects import ExternalDomain, ExternalSpec, ObjectWorld, View, jsonable
from toolshift.world.state.tools import Tool, argument_problem
from toolshift.world.toolerror import ToolError

PACKAGE = "bfcl_eval"
FAMILY = "bfcl"
DOMAIN = "bfcl"
"""The task domain of every BFCL task (one tool catalog: the union of the classes' tools)."""
JUDGE = "bfcl-multi-turn-checker"
CATEGORIES = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param")
VERSION_PREFIX = "BFCL_v4"
MAX_DATA_BYTES = 64 * 1024 * 1024
MAX_CALL_CHARS = 20_000
MAX_CALLS_JUDGED = 2_000
HOLDOUT_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""BFCL's user turn where held-out functions arrive (`DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`)."""

READ_VERBS = (
    "get", "list", "view", "search", "find", "check", "display", "estimate", "filter", "compute", "retrieve",
    "cat", "ls", "pwd", "grep", "wc", "tail", "du", "diff", "sort", "gallon", "liter", "message_get",
    "posting_get", "ticket_get", "trading_get", "travel_get", "verify",
)  # fmt: skip
"""Leading words of BFCL methods that change no public state (`sort`, `diff` and the other shell reads print
without writing); every method of a stateless class (MathAPI) reads too. Everything else is labelled `write`.
The label is only MCP's hint: every call reports the changes it measured, and a test checks that no gold
call of a read changes state."""


def available() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


def require() -> None:
    if not available():
        raise BadInputError(
            "BFCL worlds need the bfcl-eval package: pip install 'toolshift[bfcl]' (or `make extras`)",
            source=FAMILY,
        )


def _data_dir() -> Path:
    require()
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "data"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise BadInputError("BFCL data file is missing from the bfcl-eval package", source=str(path))
    out = []
    text = read_text(path, what="BFCL data file", max_bytes=MAX_DATA_BYTES)
    for number, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        value = loads_json(line, source=str(path), record=number)
        if not isinstance(value, dict):
            raise BadInputError("a record must be a JSON object", source=str(path), record=number)
        out.append(value)
    return out


@dataclass(frozen=True)
class Entry:
    """One BFCL multi-turn test entry with its possible answer."""

    id: str
    category: str
    turns: list[list[dict[str, str]]]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    missed_function: dict[str, list[str]]
    ground_truth: list[list[str]]
    source: str

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category

    def test_entry(self) -> dict[str, Any]:
        """The entry as BFCL's checker reads it."""
        return {
            "id": self.id,
            "question": self.turns,
            "initial_config": self.initial_config,
            "involved_classes": self.involved_classes,
        }


def _check_entry(raw: dict[str, Any], answer: dict[str, Any], source: str, index: int) -> Entry:
    def bad(field: str, why: str) -> BadInputError:
        return BadInputError(why, source=source, record=raw.get("id", index), field=field)

    entry_id = raw.get("id")
    if not isinstance(entry_id, str) or not re.fullmatch(r"[A-Za-z0-9_]{1,100}", entry_id):
        raise bad("id", "must be a short identifier")
    turns = raw.get("question")
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise bad("question", "must be a list of turns, each a list of messages")
    for t in turns:
        for m in t:
            if not (isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)):
                raise bad("question", "every message must be a user message with text content")
    classes = raw.get("involved_classes")
    known = _class_modules()
    if not isinstance(classes, list) or not classes or not all(c in known for c in classes):
        raise bad("involved_classes", f"must name classes of {sorted(known)}")
    config = raw.get("initial_config", {})
    if not isinstance(config, dict):
        raise bad("initial_config", "must be an object")
    missed = raw.get("missed_function", {})
    if not isinstance(missed, dict) or not all(
        isinstance(v, list) and all(isinstance(n, str) for n in v) for v in missed.values()
    ):
        raise bad("missed_function", "must map turn numbers to lists of function names")
    truth = answer.get("ground_truth")
    if not isinstance(truth, list) or not all(
        isinstance(t, list) and all(isinstance(c, str) for c in t) for t in truth
    ):
        raise bad("ground_truth", "must be a list of turns, each a list of call strings")
    if len(truth) != len(turns):
        raise bad("ground_truth", f"has {len(truth)} turns, the question {len(turns)}")
    return Entry(
        id=entry_id,
        category=entry_id.rsplit("_", 1)[0],
        turns=turns,
        initial_config=config,
        involved_classes=list(classes),
        missed_function={str(k): list(v) for k, v in missed.items()},
        ground_truth=truth,
        source=source,
    )


@functools.cache
def _class_modules() -> dict[str, str]:
    require()
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    multi_turn = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot",
                  "TravelAPI", "VehicleControlAPI")  # fmt: skip
    return {c: CLASS_FILE_PATH_MAPPING[c] for c in multi_turn}


_entries_lock = threading.Lock()
_entries: dict[str, list[Entry]] = {}


def entries(category: str) -> list[Entry]:
    """A category's entries with their possible answers, in file order (cached)."""
    if category not in CATEGORIES:
        raise BadInputError(f"unknown BFCL category {category!r} (known: {', '.join(CATEGORIES)})")
    with _entries_lock:
        if category in _entries:
            return _entries[category]
    data = _data_dir()
    question_file = data / f"{VERSION_PREFIX}_{category}.json"
    answer_file = data / "possible_answer" / f"{VERSION_PREFIX}_{category}.json"
    answers = {a.get("id"): a for a in _read_jsonl(answer_file)}
    out = []
    for index, raw in enumerate(_read_jsonl(question_file)):
        answer = answers.get(raw.get("id"))
        if answer is None:
            raise BadInputError(
                "no possible answer for this entry", source=str(answer_file), record=raw.get("id", index)
            )
        out.append(_check_entry(raw, answer, str(question_file), index))
    with _entries_lock:
        _entries[category] = out
    return out


def entry(entry_id: str) -> Entry:
    category = entry_id.rsplit("_", 1)[0]
    if category not in CATEGORIES:
        raise BadInputError(
            f"not a BFCL multi-turn entry id: {entry_id!r} (categories: {', '.join(CATEGORIES)})"
        )
    for e in entries(category):
        if e.id == entry_id:
            return e
    raise BadInputError(f"no BFCL entry {entry_id!r} in {category}")


def grouped_entry(e: Entry, groups: list[list[int]]) -> Entry:
    """The entry with its turns regrouped (an evolved task: consecutive turns merged into one, later
    turns dropped): each new turn holds the messages and ground-truth calls of the turns it groups, so
    BFCL's own checker judges it from the entry's initial state as it judges the entry."""
    flat = [i for g in groups for i in g]
    if not groups or any(not g for g in groups) or flat != list(range(len(flat))) or len(flat) > len(e.turns):
        raise BadInputError(
            f"turn groups {groups} are not consecutive turns of {e.id} from its first",
            record=e.id,
            field="turns",
        )
    return dataclasses.replace(
        e,
        turns=[[m for i in g for m in e.turns[i]] for g in groups],
        ground_truth=[[c for i in g for c in e.ground_truth[i]] for g in groups],
    )


@functools.cache
def func_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    return tuple(
        _read_jsonl(_data_dir() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name])
    )


def _schema_type(value: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """One parameter in JSON Schema, as BFCL's `_cast_to_openai_type` maps its types (unknown → string)."""
    out = copy.deepcopy(value)
    kind = out.get("type")
    out["type"] = mapping.get(kind, "string") if isinstance(kind, str) else "string"
    out.pop("optional", None)
    if out["type"] == "object" and isinstance(out.get("properties"), dict):
        out["properties"] = {k: _schema_type(v, mapping) for k, v in out["properties"].items()}
    if out["type"] == "array" and isinstance(out.get("items"), dict):
        out["items"] = _schema_type(out["items"], mapping)
    return out


def input_schema(doc: dict[str, Any]) -> dict[str, Any]:
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    params = doc.get("parameters") or {}
    properties = params.get("properties") or {}
    return {
        "type": "object",
        "properties": {k: _schema_type(v, GORILLA_TO_OPENAPI) for k, v in properties.items()},
        "required": [r for r in params.get("required", []) if r in properties],
    }


def effect_of(name: str, class_name: str) -> str:
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    if class_name in STATELESS_CLASSES:
        return "read"
    lowered = name.lower()
    return "read" if any(lowered == v or lowered.startswith(v + "_") for v in READ_VERBS) else "write"


_public_methods: dict[type, tuple[str, ...]] = {}


def public_methods(instance: Any) -> tuple[str, ...]:
    """The instance's public methods as BFCL's harness lists them (`inspect.getmembers`), once per class."""
    names = _public_methods.get(type(instance))
    if names is None:
        names = tuple(
            n for n, _ in inspect.getmembers(instance, predicate=inspect.ismethod) if not n.startswith("_")
        )
        _public_methods[type(instance)] = names
    return names


class BfclState:
    """The involved classes' live instances; methods are found as BFCL's harness finds them (later wins)."""

    def __init__(self, instances: dict[str, Any]) -> None:
        self.instances = instances
        self.owner: dict[str, Any] = {}
        for instance in instances.values():
            for method_name in public_methods(instance):
                self.owner[method_name] = instance

    def clone(self) -> BfclState:
        """A deep copy, made by a pickle round trip in memory (D151: several times faster than
        `copy.deepcopy` on a file system tree, and the same objects: both copy through `__reduce_ex__`, shared
        references and cycles kept); `copy.deepcopy` where something does not pickle. No pickle is ever read
        from anywhere but the bytes just written here."""
        try:
            instances = pickle.loads(pickle.dumps(self.instances, pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, TypeError, AttributeError):
            instances = copy.deepcopy(self.instances)
        return BfclState(instances)

    def view(self) -> View:
        """Each instance's public attributes: what BFCL's state checker compares."""
        return {
            name: {k: jsonable(v) for k, v in vars(inst).items() if not k.startswith("_")}
            for name, inst in self.instances.items()
        }

    def invoke(self, method: str, args: dict[str, Any]) -> Any:
        instance = self.owner.get(method)
        if instance is None:
            raise ToolError("unknown_tool", f"no method {method!r} on {', '.join(self.instances)}")
        result = getattr(instance, method)(**args)
        if isinstance(result, str | dict | list) or result is None:
            return result
        return str(result)  # BFCL's harness shows anything else as str()


def load_instances(e: Entry) -> dict[str, Any]:
    """Fresh instances of the entry's classes, each loaded from its initial config as BFCL's harness does."""
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    out = {}
    for class_name in e.involved_classes:
        module = importlib.import_module(_class_modules()[class_name])
        instance = getattr(module, class_name)()
        if class_name not in STATELESS_CLASSES:
            instance._load_scenario(
                copy.deepcopy(e.initial_config.get(class_name, {})), long_context=e.long_context
            )
        out[class_name] = instance
    return out


def _tools(e: Entry) -> list[Tool]:
    catalog: dict[str, Tool] = {}
    for class_name in e.involved_classes:
        for doc in func_docs(class_name):
            name = doc["name"]
            catalog[name] = Tool(
                name=name,
                description=str(doc.get("description", "")),
                input_schema=input_schema(doc),
                effect=effect_of(name, class_name),  # type: ignore[arg-type]
                handler=functools.partial(_handle, name),
                meta={"kind": "bfcl", "class": class_name},
            )
    return list(catalog.values())


def _handle(method: str, state: BfclState, args: dict[str, Any]) -> Any:
    return state.invoke(method, args)


_domains_lock = threading.Lock()
_domains: dict[str, ExternalDomain] = {}


def load_domain(entry_id: str) -> ExternalDomain:
    """The world definition of one BFCL entry (cached per process)."""
    with _domains_lock:
        if entry_id in _domains:
            return _domains[entry_id]
    e = entry(entry_id)
    spec = ExternalSpec(
        name=f"{FAMILY}:{e.id}",
        title=f"BFCL {e.id}",
        description=f"BFCL multi-turn entry {e.id}: {', '.join(e.involved_classes)}",
    )
    # BFCL's harness calls the method as the model wrote it: types are the method's business (D103).
    domain = ExternalDomain(spec, _tools(e), lambda: BfclState(load_instances(e)), schema_checked=False)
    with _domains_lock:
        _domains[entry_id] = domain
    return domain


# --- call strings -------------------------------------------------------------------------------


def _literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"{where} is not a literal") from None


def parse_call(text: str, e: Entry) -> tuple[str, dict[str, Any]]:
    """A possible-answer call string as (method, keyword arguments), read with `ast` (never evaluated).

    Positional arguments are named from the method's signature; only literal values are accepted.
    """
    if len(text) > MAX_CALL_CHARS:
        raise ValueError(f"call longer than {MAX_CALL_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not a call: {exc.msg}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError("not a call of a plain function name")
    name = call.func.id
    methods = _methods(tuple(e.involved_classes))
    if name not in methods:
        raise ValueError(f"{name!r} is not a method of {', '.join(e.involved_classes)}")
    params = [p for p in methods[name] if p != "self"]
    args: dict[str, Any] = {}
    for i, node in enumerate(call.args):
        if isinstance(node, ast.Starred) or i >= len(params):
            raise ValueError(f"positional argument {i} of {name} has no parameter")
        args[params[i]] = _literal(node, f"argument {i}")
    for kw in call.keywords:
        if kw.arg is None:
            raise ValueError("** arguments are not accepted")
        args[kw.arg] = _literal(kw.value, f"argument {kw.arg!r}")
    return name, _json_args(args)


def _json_args(value: Any) -> Any:
    """Tuples as lists: the JSON an agent would have sent."""
    if isinstance(value, dict):
        return {str(k): _json_args(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_args(v) for v in value]
    return value


@functools.cache
def _methods(classes: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for class_name in classes:
        cls = getattr(importlib.import_module(_class_modules()[class_name]), class_name)
        for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not name.startswith("_"):
                out[name] = tuple(inspect.signature(fn).parameters)
    return out


_SAFE_SCALARS = (str, int, float, bool, type(None))


def _safe_value(value: Any, depth: int = 0) -> bool:
    if depth > 32:
        return False
    if isinstance(value, _SAFE_SCALARS):
        return not isinstance(value, float) or (value == value and abs(value) != float("inf"))
    if isinstance(value, list):
        return all(_safe_value(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _safe_value(v, depth + 1) for k, v in value.items())
    return False


def call_string(name: str, args: Any, methods: dict[str, tuple[str, ...]]) -> str | None:
    """`name(k=repr(v),...)` as BFCL's `convert_to_function_call` writes it, or None when the call cannot be
    written safely: a name that is no method of the involved classes, argument names that are not
    identifiers, values that are not JSON or that the world refuses to store (`argument_problem`: the agent
    was told the call failed, so the checker must not run it), or a string over `MAX_CALL_CHARS`."""
    if name not in methods or not isinstance(args, dict):
        return None
    if not all(isinstance(k, str) and k.isidentifier() and not k.startswith("_") for k in args):
        return None
    if not _safe_value(args) or argument_problem(args) is not None:
        return None
    text = f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})"
    return text if len(text) <= MAX_CALL_CHARS else None


# --- judging --------------------------------------------------------------------------------------

_judge_ids = itertools.count()
_judge_lock = threading.Lock()


def judge(e: Entry, turns: list[list[list[tuple[str, Any]]]]) -> dict[str, Any]:
    """BFCL's verdict on an agent's calls: `turns[t][s]` are the calls of step s of turn t.

    Mirrors BFCL's eval runner for one entry: a turn count that differs from the ground truth's is a
    force-terminated entry; empty steps are left out; then `multi_turn_checker`. Returns its dict
    (`valid`, and on failure `error_type`, `error_message`) plus `dropped`: calls not passed on because
    they could not be written safely (counted; the checker would have failed to execute them).
    """
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    methods = _methods(tuple(e.involved_classes))
    dropped = 0
    decoded: list[list[list[str]]] = []
    total = 0
    for turn in turns:
        steps = []
        for step in turn:
            strings = []
            for name, args in step:
                total += 1
                text = call_string(name, args, methods) if total <= MAX_CALLS_JUDGED else None
                if text is None:
                    dropped += 1
                else:
                    strings.append(text)
            if strings:
                steps.append(strings)
        decoded.append(steps)
    if len(decoded) != len(e.ground_truth):
        return {
            "valid": False,
            "error_type": "multi_turn:force_terminated",
            "error_message": f"the episode has {len(decoded)} turns, the ground truth {len(e.ground_truth)}",
            "dropped": dropped,
        }
    truth = _truth_strings(e, methods)
    with _judge_lock:
        model_name = f"toolshift_judge_{next(_judge_ids)}"
    try:
        verdict = multi_turn_checker(decoded, truth, e.test_entry(), e.category, model_name)
    finally:
        prefix = re.sub(r"[-./:]", "_", f"{model_name}_")
        for key in [k for k in vars(multi_turn_utils) if k.startswith(prefix)]:
            vars(multi_turn_utils).pop(key, None)
    out = {k: v for k, v in verdict.items() if k in ("valid", "error_type", "error_message")}
    out["dropped"] = dropped
    return out


_truths: dict[tuple[str, tuple[tuple[str, ...], ...]], list[list[str]]] = {}


def _truth_strings(e: Entry, methods: dict[str, tuple[str, ...]]) -> list[list[str]]:
    """The possible answer's calls rewritten (`_truth_string`), once per entry and grouping of its turns (an
    evolved task regroups an entry's turns under the same id, `grouped_entry`); the checker gets a copy."""
    key = (e.id, tuple(tuple(turn) for turn in e.ground_truth))
    truth = _truths.get(key)
    if truth is None:
        truth = _truths[key] = [[_truth_string(c, e, methods) for c in turn] for turn in e.ground_truth]
    return [list(turn) for turn in truth]


def _truth_string(text: str, e: Entry, methods: dict[str, tuple[str, ...]]) -> str:
    try:
        name, args = parse_call(text, e)
    except ValueError as exc:
        raise BadInputError(str(exc), source=e.source, record=e.id, field="ground_truth") from None
    written = call_string(name, args, methods)
    if written is None:
        raise BadInputError(
            f"cannot rewrite {text[:80]!r}", source=e.source, record=e.id, field="ground_truth"
        )
    return written


# --- tasks ----------------------------------------------------------------------------------------


def turn_texts(e: Entry) -> list[str]:
    """The user's message of each turn; a held-out function's empty turn gets BFCL's own prompt."""
    return ["\n".join(m["content"] for m in turn) if turn else HOLDOUT_PROMPT for turn in e.turns]


def task_for(e: Entry) -> Task:
    """The entry as a toolshift task: its turns scripted, its possible answer as the gold path.

    The gold path is replayed on a fresh world so each call carries its result, and Δgold is what the
    replay changed (checked with `covers` by the delta judge; BFCL's checker is the task's `judge`). A
    call that fails on the world is bad input naming the entry, turn and call.
    """
    world = ObjectWorld(load_domain(e.id))
    before = world.snapshot()
    gold: list[GoldCall] = []
    texts = turn_texts(e)
    turns: list[ScriptedTurn] = []
    for t, calls in enumerate(e.ground_truth):
        for c, text in enumerate(calls):
            try:
                name, args = parse_call(text, e)
            except ValueError as exc:
                raise BadInputError(
                    str(exc), source=e.source, record=e.id, field=f"ground_truth[{t}][{c}]"
                ) from None
            result = world.call(name, args)
            if not result.ok:
                raise BadInputError(
                    f"gold call {text[:120]} failed: {result.error}",
                    source=e.source,
                    record=e.id,
                    field=f"ground_truth[{t}][{c}]",
                )
            gold.append(GoldCall(tool=name, arguments=args, result=result.result, function=name))
        turns.append(
            ScriptedTurn(text=texts[t], gold_calls=len(calls), new_tools=e.missed_function.get(str(t), []))
        )
    return Task(
        id=e.id,
        domain=DOMAIN,
        public_request=texts[0],
        instruction=UserInstruction(intent=texts[0]),
        gold_path=gold,
        base_functions=[g.tool for g in gold],
        expected_changes=world.changes_since(before),
        turns=turns,
        judge=JUDGE,
        difficulty={"category": e.category, "turns": len(e.turns), "path_length": len(gold)},
    )
