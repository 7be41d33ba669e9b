"""Decoding that copies: per turn, the values each argument may take, and the llama.cpp grammar that admits them.

An argument that names something (a key, an email, a date, a name, a number) may only take a value that
the conversation already holds: a span of the user's words or a value of an earlier tool result, of the
argument's shape (`toolshift.traces.spans`), or the schema's enum; a key only with the prefix the catalog's
examples give its entity, and a write's other values only from the user's words. Free text (reasons,
notes, messages) stays free, capped by the schema, with the user's spans offered beside it. A tool whose
required arguments have no candidate is not offered this turn, and a search that takes only optional
filters is narrowed by exactly one. The model chooses the tool and, among the candidates, the value (`pick="model"`); the
rule `pick="recent"` leaves it one candidate per argument, the most recent of the right shape, so the
model's own contribution can be measured. The grammar is written directly as GBNF with no optional
whitespace, so the longest output it admits is known and the token cap is sized from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from toolshift.agents.chat import ToolDef
from toolshift.traces.spans import (
    ConversationSpans,
    capitalised_runs,
    is_content_span,
    key_prefix,
    word_spans,
)

ArgKind = Literal[
    "enum",
    "const",
    "boolean",
    "key",
    "email",
    "date",
    "datetime",
    "number",
    "integer",
    "words",
    "text",
    "skip",
]
Pick = Literal["model", "recent"]
PICKS: tuple[Pick, ...] = ("model", "recent")

PAGINATION = frozenset({"limit", "offset", "page", "page_size", "per_page", "cursor", "max_results"})
PROSE = frozenset(
    {"reason", "note", "notes", "comment", "comments", "message", "description", "body", "summary", "details",
     "text", "content", "feedback", "resolution", "justification", "purpose", "explanation", "remarks"}
)  # fmt: skip
PROSE_SPAN_WORDS = 10
TEXT_CHARS = 120
"""Free text's cap where the schema gives no maxLength."""
MAX_LIST_ITEMS = 3
_EXAMPLE = re.compile(r"e\.g\.\s*([A-Za-z]+[-_]?)\d")
_ENTITY_EXAMPLE = re.compile(r"\b(\w+)'s key, e\.g\.\s*([A-Za-z]+[-_]?)\d")
_ENTITY_REF = re.compile(r"\(an? (\w+) key\)|\b(\w+)'s key\b")
_KEY_WORD = re.compile(r"\bkey\b|\bidentifier\b", re.IGNORECASE)
_TEXT_CHAR = r"[\x20-\x21\x23-\x5B\x5D-\x7E]"
"""Printable ASCII but the quote and the backslash: one byte a character, nothing to escape."""


def _plain(schema: Any) -> dict[str, Any]:
    """The schema with `anyOf`/type lists reduced to the first non-null alternative."""
    if not isinstance(schema, dict):
        return {}
    if "anyOf" in schema and "type" not in schema and "enum" not in schema:
        options = [o for o in schema["anyOf"] if isinstance(o, dict) and o.get("type") != "null"]
        return _plain(options[0]) if options else {}
    kind = schema.get("type")
    if isinstance(kind, list):
        schema = {**schema, "type": next((k for k in kind if k != "null"), "string")}
    return schema


def arg_kind(name: str, schema: Any) -> ArgKind:
    """What kind of value an argument takes, from its name and schema (`skip`: left to the tool's default)."""
    s = _plain(schema)
    if isinstance(s.get("enum"), list) and s["enum"]:
        return "enum"
    if "const" in s:
        return "const"
    kind = s.get("type", "string")
    lowered = name.lower()
    if kind == "boolean":
        return "boolean"
    if kind in ("integer", "number"):
        return "skip" if lowered in PAGINATION else kind
    if kind != "string":
        return "skip"
    pattern = str(s.get("pattern", ""))
    fmt = s.get("format")
    if fmt == "email":
        return "email"
    if fmt == "date-time" or "T\\d" in pattern or ("T" in pattern and "\\d{2}:" in pattern):
        return "datetime"
    if fmt == "date" or pattern.startswith("^\\d{4}-\\d{2}-\\d{2}$"):
        return "date"
    description = str(s.get("description", ""))
    if (
        lowered == "id"
        or lowered.endswith("_id")
        or _KEY_WORD.search(description)
        or _EXAMPLE.search(description)
    ):
        return "key"
    searched = "matches rows" in description.lower()
    if not searched and (lowered in PROSE or lowered.rsplit("_", 1)[-1] in PROSE):
        return "text"
    return "words"


@dataclass(frozen=True)
class ArgChoice:
    """One argument this turn: its kind and the JSON literals it may take (`free`: also free text)."""

    name: str
    kind: ArgKind
    required: bool
    literals: tuple[str, ...] = ()
    free: int = 0
    """> 0: free text of at most this many characters is admitted too."""
    many: bool = False
    """A list argument: one to `MAX_LIST_ITEMS` of the literals."""


@dataclass(frozen=True)
class ToolChoice:
    """A tool callable this turn, its arguments' choices, and whether one optional argument must be given."""

    tool: str
    args: tuple[ArgChoice, ...]
    needs_one: bool = False
    """A search: exactly one of its optional filters is given."""


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def key_prefixes(tools: list[ToolDef]) -> dict[str, str]:
    """The catalog's examples of keys: which prefix each entity's keys, and each key argument, take.

    "The life_event's key, e.g. LE-0001." teaches `life_event` → `LE-` and `life_event_id` → `LE-`, so
    another tool's "(a life_event key)" argument copies only `LE-` values."""
    out: dict[str, str] = {}
    for tool in tools:
        for name, prop in ((tool.input_schema or {}).get("properties") or {}).items():
            description = str(_plain(prop).get("description", ""))
            m = _ENTITY_EXAMPLE.search(description)
            if m:
                out.setdefault(m.group(1), m.group(2))
                out.setdefault(name, m.group(2))
    return out


def _key_prefix_of(name: str, schema: dict[str, Any], prefixes: dict[str, str]) -> str | None:
    description = str(schema.get("description", ""))
    m = _EXAMPLE.search(description)
    if m:
        return m.group(1)
    ref = _ENTITY_REF.search(description)
    if ref and (ref.group(1) or ref.group(2)) in prefixes:
        return prefixes[ref.group(1) or ref.group(2)]
    return prefixes.get(name)


def candidates(
    name: str,
    schema: Any,
    kind: ArgKind,
    spans: ConversationSpans,
    pick: Pick,
    prefixes: dict[str, str] | None = None,
    *,
    user_only: bool = False,
) -> list[Any]:
    """The values `name` may take this turn, oldest first; under `pick="recent"`, only the most recent.

    A key whose prefix the catalog's examples (`prefixes`) or an earlier result's field of that name
    give takes only values with that prefix. `user_only`: values other than keys come from the user's
    words alone (a write's names, dates and amounts are the user's, not copied from a record)."""
    s = _plain(schema)
    if kind == "enum":
        return list(s["enum"])
    if kind == "const":
        return [s["const"]]
    if kind in ("email", "date", "datetime"):
        found = [c.value for c in spans.of_shape(kind, user_only=user_only)]
    elif kind in ("number", "integer"):
        low, high = s.get("minimum"), s.get("maximum")
        found = [
            c.value
            for c in spans.of_shape("number", user_only=user_only)
            if (kind == "number" or float(c.value).is_integer())
            and (low is None or c.value >= low)
            and (high is None or c.value <= high)
        ]
        found = [int(v) if kind == "integer" else v for v in found]
    elif kind == "key":
        keys = spans.of_shape("key")
        prefix = _key_prefix_of(name, s, prefixes or {})
        if prefix is None:  # the prefix of values an earlier result gave under this very name
            named = [key_prefix(str(c.value)) for c in keys if name in c.fields]
            prefix = next((p for p in reversed(named) if p), None)
        if prefix is not None:
            keys = [c for c in keys if str(c.value).startswith(prefix)]
        found = [c.value for c in keys]
    elif kind in ("words", "text"):
        if pick == "recent":
            runs = [r for text in spans.user_text for r in capitalised_runs(text)]
            results = [] if user_only else [c.value for c in spans.of_shape("words") if not c.from_user]
            return runs[-1:] if runs else results[-1:]
        found = [
            c.value
            for c in spans.of_shape("words", user_only=user_only)
            if not c.from_user or is_content_span(str(c.value))
        ]
        found += [c.value for c in spans.of_shape("key", user_only=user_only)]
        # A date or an email names a date or an email, not a batch number (2026-06-02 as `batch_number`).
        shaped = {c.value for shape in ("date", "datetime", "email") for c in spans.of_shape(shape)}
        found = [v for v in found if v not in shaped]
        if kind == "text":  # a reason or a note runs longer than a name: the user's clauses up to ten words
            found += [
                s
                for text in spans.user_text
                for s in word_spans(text, PROSE_SPAN_WORDS)
                if is_content_span(s)
            ]
    else:
        return []
    unique = list(dict.fromkeys(found))
    return unique[-1:] if pick == "recent" else unique


def tool_choice(
    tool: ToolDef,
    spans: ConversationSpans,
    pick: Pick = "model",
    *,
    narrow: bool = True,
    prefixes: dict[str, str] | None = None,
    used: frozenset[tuple[str, str]] = frozenset(),
) -> ToolChoice | None:
    """The tool's arguments' choices this turn, or None when a required argument has no value to take.

    `narrow`: a tool whose parameters are all optional filters must be given one (a bare search lists
    everything, and a model then picks a record nobody named), and takes exactly one. `used`: values
    already passed to this tool as its only argument, not offered again (the same call returns the same)."""
    schema = tool.input_schema or {}
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r in props]
    args: list[ArgChoice] = []
    for name in [*required, *(p for p in props if p not in required)]:
        prop = _plain(props[name])
        is_required = name in required
        many = prop.get("type") == "array"
        kind = arg_kind(name, prop.get("items", {}) if many else prop)
        if kind == "skip":
            if is_required:
                return None
            continue
        if kind == "boolean":
            args.append(ArgChoice(name, kind, is_required, ("true", "false"), many=many))
            continue
        values = candidates(name, prop.get("items", {}) if many else prop, kind, spans, pick, prefixes,
                            user_only=tool.read_only is False)  # fmt: skip
        literals = tuple(_literal(v) for v in values)
        free = 0
        if kind == "text":
            free = int(prop.get("maxLength") or TEXT_CHARS)
        if not literals and not free:
            if is_required:
                return None
            continue
        args.append(ArgChoice(name, kind, is_required, literals, free=free, many=many))
    narrowed = narrow and not required and any(arg_kind(n, _plain(p)) != "skip" for n, p in props.items())
    if used and (narrowed or (len(args) == 1 and args[0].required)):  # calls of one argument: no repeats
        args = [
            ArgChoice(a.name, a.kind, a.required, tuple(v for v in a.literals if (a.name, v) not in used),
                      a.free, a.many)
            for a in args
        ]  # fmt: skip
        args = [a for a in args if a.literals or a.free or (a.required and not narrowed)]
        if any(a.required and not a.literals and not a.free for a in args):
            return None
    if narrowed and not args:
        return None
    return ToolChoice(tool.name, tuple(args), needs_one=narrowed)


def gbnf_literal(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + out.replace("\t", "\\t") + '"'


@dataclass
class ActionGrammar:
    """The GBNF of this turn's actions and the most bytes (hence tokens) any admitted output takes."""

    text: str
    max_bytes: int
    tools: tuple[str, ...]
    can_reply: bool
    choices: tuple[ToolChoice, ...] = ()
    heads: dict[str, float] = field(default_factory=dict)
    """A prior over the calls' heads (`{"tool":"NAME"`), in nats; filled by the model that uses it."""
    reply_chars: int = 0
    question: bool = False
    """The reply's cap and whether it must end with a question mark (as the GBNF spells them)."""
    fixed_replies: tuple[str, ...] = ()
    """The replies admitted, when the reply is one of a few fixed texts."""


class _Rules:
    """GBNF rules, sharing one rule per distinct set of literals."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._sets: dict[tuple[tuple[str, ...], int, bool], tuple[str, int]] = {}

    def add(self, name: str, body: str) -> str:
        self.lines.append(f"{name} ::= {body}")
        return name

    def values(self, arg: ArgChoice) -> tuple[str, int]:
        """A rule for the argument's value and its longest length in bytes."""
        key = (arg.literals, arg.free, arg.many)
        if key in self._sets:
            return self._sets[key]
        n = len(self._sets)
        alternatives = [gbnf_literal(lit) for lit in arg.literals]
        longest = max((len(lit.encode()) for lit in arg.literals), default=0)
        if arg.free:
            alternatives.append(f'"\\"" {_TEXT_CHAR}{{0,{arg.free}}} "\\""')
            longest = max(longest, arg.free + 2)
        rule = self.add(f"v{n}", " | ".join(alternatives))
        if arg.many:
            rule = self.add(f"l{n}", f'"[" {rule} ("," {rule}){{0,{MAX_LIST_ITEMS - 1}}} "]"')
            longest = 2 + MAX_LIST_ITEMS * (longest + 1)
        self._sets[key] = (rule, longest)
        return rule, longest


def action_grammar(
    choices: list[ToolChoice], *, can_reply: bool, reply_chars: int = 160, question: bool = False,
    fixed_replies: tuple[str, ...] = (),
) -> ActionGrammar:  # fmt: skip
    """One action: a call of one of `choices` with admitted values, or (`can_reply`) a reply of text
    (`question`: one that ends with a question mark, for asking the user what is missing; `fixed_replies`:
    exactly one of these texts)."""
    rules = _Rules()
    options: list[str] = []
    longest = 0
    for i, choice in enumerate(choices):
        parts: list[tuple[str, int]] = []
        for arg in choice.args:
            value, size = rules.values(arg)
            parts.append(
                (f"{gbnf_literal(json.dumps(arg.name) + ':')} {value}", len(arg.name) + 3 + size + 1)
            )
        required = [p for p, a in zip(parts, choice.args, strict=True) if a.required]
        optional = [p for p, a in zip(parts, choice.args, strict=True) if not a.required]
        body = ' "," '.join(p for p, _ in required)
        if optional and choice.needs_one:  # a search: exactly one filter
            body = " | ".join(f"({p})" for p, _ in optional)
            parts = [max(parts, key=lambda p: p[1])]
        elif optional:
            # s_j: a non-empty, in-order subset of optional arguments j..; "{" subset "}" or after the required.
            names = [f"t{i}o{j}" for j in range(len(optional))]
            for j, (part, _) in enumerate(optional):
                rest = f' ("," {names[j + 1]})? | {names[j + 1]}' if j + 1 < len(optional) else ""
                rules.add(names[j], f"{part}{rest}")
            body = f'{body} ("," {names[0]})?' if body else f"({names[0]})?"
        head = gbnf_literal('{"tool":' + json.dumps(choice.tool) + ',"arguments":{')
        options.append(rules.add(f"t{i}", f'{head} ({body}) "}}}}"' if body else f'{head} "}}}}"'))
        longest = max(longest, len(head) + sum(size for _, size in parts) + 2)
    if can_reply or not options:
        if fixed_replies:
            said = [json.dumps({"reply": r}, separators=(",", ":")) for r in fixed_replies]
            options.append(rules.add("reply", " | ".join(gbnf_literal(x) for x in said)))
            longest = max(longest, *(len(x.encode()) for x in said))
        else:
            end = '"?\\"}"' if question else '"\\"}"'
            options.append(rules.add("reply", f'"{{\\"reply\\":\\"" {_TEXT_CHAR}{{1,{reply_chars}}} {end}'))
            longest = max(longest, 13 + reply_chars)
    text = "\n".join([f"root ::= {' | '.join(options)}", *rules.lines]) + "\n"
    return ActionGrammar(
        text, longest, tuple(c.tool for c in choices), can_reply or not choices, tuple(choices),
        reply_chars=reply_chars, question=question, fixed_replies=tuple(fixed_replies),
    )  # fmt: skip


# -- the conversation so far, as the turn planner reads it --------------------------------------


class _Calls(list[tuple[str, dict[str, Any]]]):
    """The calls already made in a conversation: (tool, arguments), with `in` by canonical JSON."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__(calls)
        self.keys = {json.dumps([t, a], sort_keys=True) for t, a in calls}

    def __contains__(self, key: object) -> bool:
        return key in self.keys


def earlier_calls(messages: list[dict[str, Any]]) -> _Calls:
    """The calls already made in the conversation."""
    out = []
    for m in messages:
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except (TypeError, ValueError):
                continue
            if isinstance(args, dict):
                out.append((str(fn.get("name")), args))
    return _Calls(out)


def repeat_of(text: str, made: _Calls) -> str | None:
    """The tool of a decoded call identical to one already made, else None."""
    try:
        action = json.loads(text)
    except ValueError:
        return None
    if not isinstance(action, dict) or "tool" not in action:
        return None
    key = json.dumps([action["tool"], action.get("arguments")], sort_keys=True)
    return str(action["tool"]) if key in made else None


def only_call(choice: ToolChoice) -> str | None:
    """The one call a choice admits, when every argument has exactly one value (it is then never repeated:
    the same call again returns the same result, fails the same way, or does the same write twice)."""
    args = {}
    for arg in choice.args:
        if arg.free or arg.many or len(arg.literals) != 1 or not arg.required:
            return None
        args[arg.name] = json.loads(arg.literals[0])
    return json.dumps([choice.tool, args], sort_keys=True)


def failed(result: str) -> bool:
    """A tool result that reports a failure: the harness's `error: ...` or a world's `{code, message}`."""
    text = result.strip()
    if text.startswith("error:"):
        return True
    if text.startswith("{") and '"code"' in text[:40]:
        try:
            data = json.loads(text)
        except ValueError:
            return False
        return isinstance(data, dict) and set(data) == {"code", "message"}
    return False


def gave_values(text: str) -> bool:
    """Did this user message give something to act on: a value of an identifier's shape, or a name?"""
    spans = ConversationSpans()
    spans.add_user(text)
    if any(spans.of_shape(shape) for shape in ("key", "email", "date", "datetime", "number")):
        return True
    return any(True for _ in capitalised_runs(text))


DONE_REPLY = "Your request is done."
"""What the agent says once a write went through (the stop rule, D172)."""

Progress = Literal["open", "just_written", "told"]


def _values(text: str) -> list[str]:
    spans = ConversationSpans()
    spans.add_user(text)
    found = [
        str(c.value)
        for shape in ("key", "email", "date", "datetime", "number")
        for c in spans.of_shape(shape)
    ]
    return found + list(capitalised_runs(text))


def request_done(messages: list[dict[str, Any]], tools: list[ToolDef]) -> Progress:
    """Where the request stands for the stop rule: `just_written` (the newest message is a write's result
    that went through), `told` (a write went through and the user has asked nothing new since: no value of
    theirs that the conversation did not hold before), or `open`."""
    writes = {t.name for t in tools if t.read_only is False}
    called: dict[str, str] = {}
    last_write = None
    for i, m in enumerate(messages):
        for call in m.get("tool_calls") or ():
            called[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
        tool = called.get(str(m.get("tool_call_id")), m.get("name"))
        if m.get("role") == "tool" and tool in writes and not failed(m.get("content") or ""):
            last_write = i
    if last_write is None:
        return "open"
    if last_write == len(messages) - 1:
        return "just_written"
    for i in range(last_write + 1, len(messages)):
        m = messages[i]
        if m.get("role") != "user":
            continue
        before = " ".join(str(x.get("content") or "") for x in messages[:i])
        before += " ".join(
            str((c.get("function") or {}).get("arguments") or "")
            for x in messages[:i]
            for c in x.get("tool_calls") or ()
        )
        if any(v not in before for v in _values(str(m.get("content") or ""))):
            return "open"
    return "told"


_NAME_WORD = re.compile(r"[a-z0-9]+")
VERB_GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset(g.split())
    for g in (
        "update change modify edit correct set patch amend",
        "create add register book open make record setup",
        "delete remove purge drop",
        "cancel withdraw void revoke abort",
        "approve authorize",
        "reject decline deny",
        "close resolve complete finish",
        "hold suspend freeze",
        "release unfreeze",
        "escalate raise elevate",
        "issue grant",
    )
)
"""Verbs a user says for the same act ("change my email" asks for `update_patient`; a catalog that renamed
`approve_invoice` to `authorize_invoice` is still asked by "approve")."""
GENERIC_VERBS = frozenset({"perform", "execute", "proces", "run", "handle"})
"""Verbs a renamed tool may gain in front of its own (`perform_terminate_contract`): its next word counts too."""


def _verb_words(verb: str) -> frozenset[str]:
    return frozenset({verb}).union(*(g for g in VERB_GROUPS if verb in g))


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _NAME_WORD.findall(text.lower()) if len(w) > 2}


def catalog_prefix(tools: list[ToolDef]) -> str:
    """The domain prefix every tool's name starts with (`pay_` in `pay_get_payslip`), or ""."""
    heads = {t.name.split("_", 1)[0] for t in tools if t.name != "end_conversation"}
    return f"{heads.pop()}_" if len(heads) == 1 else ""


_VALUE_WORDS = re.compile(r"\S*@\S*|\S*\w\.\w\S*")
"""An email, a URL or a dotted name: values, whose words are not the user's words for what to do."""


def write_asked(tool: str, said: str, prefix: str = "", params: Iterable[str] = ()) -> bool:
    """Does the user's text name this write's verb (its name's first word, the domain prefix aside) or a word
    for the same act (`VERB_GROUPS`)? `params`: the tool's argument names (see `GENERIC_VERBS`).

    Only the verb: the record's noun ("registration" in `evt_update_registration`) is said whenever the user
    gives its key, so it asked for every write on that record (D202)."""
    name = [_stem(w) for w in tool.removeprefix(prefix).split("_") if w]
    if not name:
        return False
    keyed = {_stem(w) for p in params for w in p.split("_")}
    verbs = name[:1] + [w for w in name[1:2] if name[0] in GENERIC_VERBS and w not in keyed]
    said = _VALUE_WORDS.sub(" ", said).lower()  # "new" in ana@new.example asks for nothing
    words = _stems(said)
    if any(_verb_words(v) & words for v in verbs):
        return True
    # "a new vendor invoice" asks to create one; "my new email" does not ask to create anything.
    order = [_stem(w) for w in _NAME_WORD.findall(said)]
    return "create" in _verb_words(verbs[-1]) and any(
        w == "new" and set(order[i + 1 : i + 3]) & set(name[1:]) for i, w in enumerate(order)
    )


ASKED_KINDS = frozenset({"key", "email", "date", "words"})


def missing_fields(
    tools: list[ToolDef], spans: ConversationSpans, prefixes: dict[str, str] | None = None, limit: int = 6
) -> list[str]:
    """What the customer could be asked for, as words ("appointment id"): the required arguments of `tools`
    (most relevant first) that nothing in the conversation fills, and a search's filters when it has none."""
    out: list[str] = []
    for tool in tools:
        props = (tool.input_schema or {}).get("properties") or {}
        required = [r for r in (tool.input_schema or {}).get("required") or [] if r in props]
        names = required or ([] if tool.read_only is False else list(props))
        for name in names:
            prop = _plain(props[name])
            kind = arg_kind(name, prop)
            if kind not in ASKED_KINDS or candidates(name, prop, kind, spans, "model", prefixes):
                continue
            field = name.replace("_", " ").strip()
            if field and field not in out:
                out.append(field)
    return out[:limit]
