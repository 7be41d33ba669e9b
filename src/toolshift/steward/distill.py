"""Model-free distillation: successful episodes → workflows with argument flow → planning, atomic and tool skills.

A *workflow* is an episode's successful world calls, each argument bound to where its value came
from: a fact the user gave (`{"fact": phrase}`, the phrase the user named it by), a field of an
earlier result (`{"step": j, "path": [...], "where": {field: phrase}}`, `"*"` in the path marking a
list item chosen by `where`), or a constant (`{"value": v}`). Consecutive calls of one tool over
items of the same earlier list become one step with `"each": true`. Only what an episode shows is
used: the user's messages, the calls and their results, and the catalog's tool effects and schemas.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.library import Skill, skill_name
from toolshift.traces.episode import Episode

FACT = re.compile(r"My (.+?) is (.*?)\.(?=\s+My\s|\s*$)", re.DOTALL)
MAX_DEPTH = 8
MAX_NODES = 20_000
MAX_REQUESTS = 5


@dataclass
class Call:
    tool: str
    args: dict[str, Any]
    result: Any
    ok: bool


@dataclass
class Trajectory:
    """What an episode shows: the opening request, the facts the user named, the world calls in order."""

    episode_id: str
    domain: str
    request: str
    facts: dict[str, str]
    calls: list[Call]


@dataclass
class Workflow:
    episode_id: str
    domain: str
    request: str
    steps: list[dict[str, Any]]
    facts: list[str] = field(default_factory=list)

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(s["tool"] for s in self.steps)

    def key(self) -> str:
        return _canon([self.domain, self.steps])


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_facts(text: str) -> dict[str, str]:
    """Facts a user stated as 'My <name> is <value>.' (the scripted user's form)."""
    return {m.group(1).strip(): m.group(2).strip() for m in FACT.finditer(text or "")}


def trajectory(ep: Episode) -> Trajectory:
    """The request, stated facts and world calls of an episode (harness calls left out)."""
    from toolshift.agents.users import END_CONVERSATION

    request = next((m.content or "" for m in ep.messages if m.role == "user"), "")
    facts: dict[str, str] = {}
    for m in ep.messages:
        if m.role == "user":
            facts.update(parse_facts(m.content or ""))
    results = {m.tool_call_id: m for m in ep.messages if m.role == "tool"}
    calls = []
    for m in ep.messages:
        if m.role != "assistant":
            continue
        for c in m.tool_calls or []:
            if c.name == END_CONVERSATION or c.requestor != "assistant":
                continue
            res = results.get(c.id)
            value: Any = None
            if res is not None and res.content:
                try:
                    value = json.loads(res.content)
                except json.JSONDecodeError:
                    value = res.content
            calls.append(Call(c.name, dict(c.arguments), value, res is not None and not res.error))
    return Trajectory(ep.id, ep.domain, request, facts, calls)


_SEP = re.compile(r"[\s_\-]+")
_YES_NO = {"yes": "true", "no": "false"}


def normal(value: Any) -> str | None:
    """A scalar as the schema would hold it, for comparison: numbers by value (`"17583.60"` = 17583.6),
    booleans as true/false (yes/no too), text case-folded with spaces, hyphens and underscores alike
    ("fixed amount" = `fixed_amount`); None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value))
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        return repr(float(text)) if text and text[0] in "+-.0123456789" else _norm_text(text)
    except ValueError:
        return _norm_text(text)


def _norm_text(text: str) -> str:
    folded = _SEP.sub("_", text.lower()).strip("_")
    return _YES_NO.get(folded, folded)


def _same(a: Any, b: Any) -> bool:
    if a == b and type(a) is type(b):
        return True
    na, nb = normal(a), normal(b)
    return na is not None and na == nb


def find_paths(value: Any, target: Any) -> list[list[Any]]:
    """Paths in `value` whose leaf equals `target` (bounded in depth and nodes)."""
    out: list[list[Any]] = []
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    seen = 0
    while stack and seen < MAX_NODES:
        node, path = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if len(path) < MAX_DEPTH:
                stack += [(v, [*path, k]) for k, v in node.items()]
        elif isinstance(node, list):
            if len(path) < MAX_DEPTH:
                stack += [(v, [*path, i]) for i, v in enumerate(node)]
        elif node is not None and _same(node, target):
            out.append(path)
    return sorted(out, key=lambda p: (len(p), [str(x) for x in p]))


def get_path(value: Any, path: list[Any]) -> Any:
    for k in path:
        if isinstance(value, dict) and isinstance(k, str):
            value = value.get(k)
        elif isinstance(value, list) and isinstance(k, int) and 0 <= k < len(value):
            value = value[k]
        else:
            return None
    return value


def _fact_fields(item: Any, facts: dict[str, str]) -> dict[str, str]:
    """Fields of a list item whose value is one of the facts the user gave: {field: fact phrase}."""
    if not isinstance(item, dict):
        return {}
    out = {}
    for k, v in item.items():
        for phrase, fv in facts.items():
            if v is not None and not isinstance(v, dict | list) and _same(v, fv):
                out[k] = phrase
                break
    return out


def _bind(
    value: Any, calls: list[Call], before: int, facts: dict[str, str], templates: bool = False
) -> dict[str, Any]:
    """Where an argument's value came from: a fact, an earlier result, or a constant. A key that a fact
    matches only when letter case is ignored ("res-00009" for `RES-00009`) and that an earlier result
    holds exactly under a key field (`…_id`) is the result's: the user named the record, the lookup
    gave its key."""
    for phrase, fv in facts.items():
        if not isinstance(value, dict | list) and _same(value, fv):
            case_only = isinstance(value, str) and value != fv and value.lower() == fv.strip().lower()
            if case_only and _exact_key(value, calls, before):
                break
            return {"fact": phrase}
    for j in range(before - 1, -1, -1):
        if not calls[j].ok:
            continue
        paths = find_paths(calls[j].result, value)
        if not paths:
            continue
        exact = [p for p in paths if get_path(calls[j].result, p) == value]
        path = (exact or paths)[0]
        lists = [i for i, k in enumerate(path) if isinstance(k, int)]
        if lists:
            at = lists[-1]
            container = get_path(calls[j].result, path[:at])
            item = get_path(calls[j].result, path[: at + 1])
            where = _fact_fields(item, facts)
            if where or (isinstance(container, list) and len(container) == 1):
                generic = [*path[:at], "*", *path[at + 1 :]]
                return {"step": j, "path": generic, "where": where, "index": path[at]}
        return {"step": j, "path": path, "where": {}}
    if templates and isinstance(value, str):
        made = _template(value, facts)
        if made is not None:
            return made
    return {"value": value}


def _bind_args(
    args: dict[str, Any], calls: list[Call], before: int, facts: dict[str, str], templates: bool = False
) -> dict[str, Any]:
    """Each argument's source; an object argument (a merged tool's `step1`, `step2`) whose fields come from
    facts or results is bound field by field, under dotted names (`step1.vin`), never as the episode's
    constant (D186). A list, or an object holding lists or objects (`files: ["notes.txt"]`, `entities: [{name,
    observations: [...]}]`, as real MCP servers take them), is bound leaf by leaf under dotted paths with list
    indices (`entities.0.observations.0`) when any leaf comes from a fact or a result (D364). With `templates`,
    a text built around the user's facts (an SQL statement, a path joining two facts) is a template (D364)."""
    out: dict[str, Any] = {}
    for name, v in args.items():
        if isinstance(v, dict) and v and not any(isinstance(x, dict | list) for x in v.values()):
            fields = {f"{name}.{k}": _bind(x, calls, before, facts, templates) for k, x in v.items()}
            if any("value" not in b for b in fields.values()):
                out.update(fields)
                continue
        elif isinstance(v, list | dict) and v:
            leaves = {f"{name}.{path}": _bind(x, calls, before, facts, templates) for path, x in _leaves(v)}
            if leaves and any("value" not in b for b in leaves.values()):
                out.update(leaves)
                continue
        out[name] = _bind(v, calls, before, facts, templates)
    return out


MAX_LEAVES = 64


def _leaves(value: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, Any]]:
    """(dotted path, scalar) of a nested argument's leaves; [] when it is deeper or larger than a call's
    argument should be (it is then bound whole)."""
    out: list[tuple[str, Any]] = []
    items = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else None
    )
    if items is None or depth > 4:
        return []
    for k, x in items:
        path = f"{prefix}{k}"
        if isinstance(x, dict | list):
            if not x:
                return []
            inner = _leaves(x, path + ".", depth + 1)
            if not inner:
                return []
            out += inner
        elif isinstance(k, str) and ("." in k or k.isdigit()):
            return []
        else:
            out.append((path, x))
        if len(out) > MAX_LEAVES:
            return []
    return out


def _template(value: str, facts: dict[str, str]) -> dict[str, Any] | None:
    """A text as a template over the facts it holds (`{product name}` where the user's product name stood), or
    None when it holds none. A fact counts where it stands apart from the letters and digits around it."""
    found: list[tuple[int, int, str]] = []
    for phrase, fv in sorted(facts.items(), key=lambda kv: -len(str(kv[1]))):
        fv = str(fv).strip()
        if len(fv) < 2 and not fv.isdigit():
            continue
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(fv)}(?![A-Za-z0-9_])", value):
            if all(m.end() <= a or m.start() >= b for a, b, _ in found):
                found.append((m.start(), m.end(), phrase))
    if not found:
        return None
    parts, at = [], 0
    for start, end, phrase in sorted(found):
        parts.append(value[at:start].replace("{", "{{").replace("}", "}}"))
        parts.append("{" + phrase + "}")
        at = end
    parts.append(value[at:].replace("{", "{{").replace("}", "}}"))
    return {"template": "".join(parts), "facts": sorted({p for _, _, p in found})}


def nest(args: dict[str, Any]) -> dict[str, Any]:
    """Dotted bindings (`step1.vin`) put back into their object argument (`{"step1": {"vin": …}}`); a numeric
    part is a list index (`files.0` → `{"files": [...]}`, D364)."""
    out: dict[str, Any] = {}
    for name, v in args.items():
        parts = name.split(".")
        if len(parts) == 1:
            out[name] = v
            continue
        slot: Any = out
        for part, nxt in itertools.pairwise(parts):
            slot = _child(slot, part, [] if nxt.isdigit() else {})
            if slot is None:
                break
        else:
            _put(slot, parts[-1], v)
    return out


def _child(slot: Any, part: str, empty: Any) -> Any:
    """The container under `part` of `slot` (made when absent), or None when the bindings disagree."""
    if isinstance(slot, dict) and not part.isdigit():
        found = slot.setdefault(part, empty)
        return found if type(found) is type(empty) else None
    if isinstance(slot, list) and part.isdigit():
        k = int(part)
        while len(slot) <= k:
            slot.append(None)
        if slot[k] is None:
            slot[k] = empty
        return slot[k] if type(slot[k]) is type(empty) else None
    return None


def _put(slot: Any, part: str, value: Any) -> None:
    if isinstance(slot, dict) and not part.isdigit():
        slot[part] = value
    elif isinstance(slot, list) and part.isdigit():
        k = int(part)
        while len(slot) <= k:
            slot.append(None)
        slot[k] = value


def fill_template(template: str, facts: dict[str, str]) -> str:
    """A template's text with the facts put in (`{{` and `}}` are literal braces)."""
    out, k = [], 0
    while k < len(template):
        if template.startswith("{{", k) or template.startswith("}}", k):
            out.append(template[k])
            k += 2
        elif template[k] == "{":
            end = template.index("}", k)
            out.append(str(facts[template[k + 1 : end]]))
            k = end + 1
        else:
            out.append(template[k])
            k += 1
    return "".join(out)


def _exact_key(value: str, calls: list[Call], before: int) -> bool:
    """Does an earlier successful result hold exactly `value` under a key field (`…_id`)?"""
    for c in calls[:before]:
        if c.ok:
            for path in find_paths(c.result, value):
                keys = [k for k in path if isinstance(k, str)]
                if keys and keys[-1].endswith("_id") and get_path(c.result, path) == value:
                    return True
    return False


def workflow(traj: Trajectory, *, templates: bool = False) -> Workflow:
    """The episode's successful calls as steps with argument flow; repeated calls over one list as `each`.
    `templates`: texts built around the user's facts are bound as templates (D364)."""
    ok_calls = [c for c in traj.calls if c.ok]
    bound = [_bind_args(c.args, ok_calls, k, traj.facts, templates) for k, c in enumerate(ok_calls)]
    steps: list[dict[str, Any]] = []
    call_step: list[int] = []
    k = 0
    while k < len(ok_calls):
        end = k + 1
        while (
            end < len(ok_calls) and ok_calls[end].tool == ok_calls[k].tool and _repeats(bound[k], bound[end])
        ):
            end += 1
        args = {n: dict(b) for n, b in bound[k].items()}
        if end - k > 1:
            for n, b in args.items():
                if "index" in b:
                    wheres = [bound[i][n].get("where", {}) for i in range(k, end)]
                    b["where"] = {f: p for f, p in wheres[0].items() if all(w.get(f) == p for w in wheres)}
        steps.append({"tool": ok_calls[k].tool, "args": args, "each": end - k > 1})
        call_step += [len(steps) - 1] * (end - k)
        k = end
    for s in steps:
        for b in s["args"].values():
            b.pop("index", None)
            if "step" in b:
                b["step"] = call_step[b["step"]]
    phrases = sorted(
        {b["fact"] for s in steps for b in s["args"].values() if "fact" in b}
        | {p for s in steps for b in s["args"].values() for p in b.get("where", {}).values()}
        | {p for s in steps for b in s["args"].values() for p in b.get("facts", [])}
    )
    return Workflow(traj.episode_id, traj.domain, traj.request, steps, phrases)


def _repeats(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two calls are one `each` step: same argument sources, list items of the same earlier list, other items."""
    if a.keys() != b.keys():
        return False
    varied = False
    for n in a:
        x, y = a[n], b[n]
        if "index" in x and "index" in y:
            if x["step"] != y["step"] or x["path"] != y["path"]:
                return False
            varied |= x["index"] != y["index"]
        elif {k: v for k, v in x.items() if k != "where"} != {k: v for k, v in y.items() if k != "where"}:
            return False
    return varied


# --- skills from workflows --------------------------------------------------------------------------


def _first_sentence(text: str, limit: int = 160) -> str:
    s = re.split(r"(?<=[.!?])\s", (text or "").strip(), maxsplit=1)[0]
    return s[:limit]


_LATER_STEP = re.compile(r"\bStep ([2-9]) of ([2-9])\b")


_EARLIER_CALL = re.compile(r"\bstart_\S*\s+returned\b", re.IGNORECASE)


def continues(tool: CatalogTool | None) -> bool:
    """Does the tool continue an operation an earlier call opened? Its description says so ("Step 2 of 3
    (…_start_… first)"), or, where a noisy description no longer does ("Deprecated alias kept for
    compatibility; …"), a required argument is the id the operation's start returned ("The draft id
    start_* returned."): the schema, which the version's doc noise leaves alone, still tells (D236)."""
    if tool is None:
        return False
    if _LATER_STEP.search(tool.description or ""):
        return True
    props = tool.input_schema.get("properties", {})
    return any(
        isinstance(props.get(r), dict) and _EARLIER_CALL.search(str(props[r].get("description") or ""))
        for r in tool.input_schema.get("required", [])
    )


def chunks(wf: Workflow, catalog: Catalog) -> list[tuple[int, int]]:
    """Atomic units of a workflow: runs of reads ending at a write (a trailing run of reads is one too);
    a write the next call continues (its description: "Step 2 of 3 …") does not end the unit, so a
    start → set → commit operation stays one skill."""
    out, start = [], 0
    for k, s in enumerate(wf.steps):
        tool = catalog.tools.get(s["tool"])
        nxt = catalog.tools.get(wf.steps[k + 1]["tool"]) if k + 1 < len(wf.steps) else None
        if (tool is None or tool.effect != "read") and not continues(nxt):
            out.append((start, k + 1))
            start = k + 1
    if start < len(wf.steps):
        out.append((start, len(wf.steps)))
    return out


def atomic_skills(wf: Workflow, catalog: Catalog) -> list[tuple[tuple[int, int], Skill]]:
    """One atomic skill per chunk: its calls with argument flow inside the chunk, inputs from outside."""
    out = []
    for start, end in chunks(wf, catalog):
        calls = []
        for s in wf.steps[start:end]:
            args = {}
            for n, b in s["args"].items():
                if "step" in b and b["step"] >= start:
                    args[n] = {**b, "step": b["step"] - start}
                elif "step" in b:
                    args[n] = {"input": n}
                else:
                    args[n] = b
            calls.append({"tool": s["tool"], "args": args, "each": s["each"]})
        tools = tuple(dict.fromkeys(c["tool"] for c in calls))
        key = _canon([wf.domain, calls])
        descs = [_first_sentence(catalog.tools[t].description) if t in catalog.tools else t for t in tools]
        description = f"In {wf.domain.replace('_', ' ')}: " + "; then ".join(descs)
        facts = sorted(
            {b["fact"] for c in calls for b in c["args"].values() if "fact" in b}
            | {p for c in calls for b in c["args"].values() for p in b.get("facts", [])}
        )
        body = {"calls": calls, "facts": facts, "requests": [wf.request][:1]}
        name = skill_name("atomic", "-".join(tools[-1:]), key)
        out.append(((start, end), Skill(name, "atomic", wf.domain, description[:1024], body, tools)))
    return out


def planning_skill(wfs: list[Workflow], catalog: Catalog) -> Skill:
    """A planning skill for workflows of one key: ordered steps naming their atomic skill, example requests."""
    wf = wfs[0]
    atoms = atomic_skills(wf, catalog)
    steps = [dict(s) for s in wf.steps]
    for (start, end), atom in atoms:
        for k in range(start, end):
            steps[k]["atomic"] = atom.id
    requests = list(dict.fromkeys(w.request for w in wfs if w.request))[:MAX_REQUESTS]
    tools = tuple(dict.fromkeys(wf.tools))
    head = requests[0] if requests else " → ".join(tools)
    description = f"In {wf.domain.replace('_', ' ')}: {head} (steps: {' → '.join(wf.tools)})"
    body = {
        "requests": requests,
        "facts": wf.facts,
        "steps": steps,
        "evidence": sorted({w.episode_id for w in wfs})[:20],
    }
    name = skill_name("plan", f"{wf.domain}-{wf.tools[-1] if wf.tools else 'none'}", wf.key())
    return Skill(name, "planning", wf.domain, description[:1024], body, tools)


def tool_skill(tool: CatalogTool, errors: list[dict[str, str]]) -> Skill:
    """How to call one tool: required arguments, their types and formats, errors seen and what fixed them."""
    schema = tool.input_schema
    params = {}
    for name, p in schema.get("properties", {}).items():
        keep = {k: p[k] for k in ("type", "format", "enum", "pattern", "minimum", "maximum") if k in p}
        if isinstance(p.get("description"), str):
            keep["description"] = p["description"][:200]
        params[name] = keep
    body = {
        "required": list(schema.get("required", [])),
        "params": params,
        "errors": errors[-10:],
        "effect": tool.effect,
        "schema_digest": hashlib.sha256(_canon(schema).encode()).hexdigest()[:16],
    }
    description = f"How to call {tool.name}: {_first_sentence(tool.description, 900)}"
    return Skill(
        skill_name("tool", tool.name, tool.name), "tool", tool.domain, description[:1024], body, (tool.name,)
    )


def observed_errors(traj: Trajectory) -> dict[str, list[dict[str, str]]]:
    """Per tool, the errors its calls returned and the argument change that made a later call succeed."""
    out: dict[str, list[dict[str, str]]] = {}
    for k, c in enumerate(traj.calls):
        if c.ok:
            continue
        msg = c.result.get("message", "") if isinstance(c.result, dict) else str(c.result or "")
        fix = ""
        nxt = next((d for d in traj.calls[k + 1 :] if d.tool == c.tool and d.ok), None)
        if nxt is not None:
            changed = sorted(n for n in set(c.args) | set(nxt.args) if c.args.get(n) != nxt.args.get(n))
            fix = "changed " + ", ".join(changed) if changed else "retried"
        out.setdefault(c.tool, []).append({"message": str(msg)[:300], "fix": fix})
    return out
