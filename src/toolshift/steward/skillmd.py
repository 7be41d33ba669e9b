"""Agent Skills interchange: each skill as a folder holding `SKILL.md` (YAML front matter + markdown body).

Front matter: `name` (≤ 64 lowercase letters, digits and hyphens, equal to the folder's name),
`description` (≤ 1,024 characters), `metadata` (string → string: level, domain, tools, catalog
version, revision, active, and the library's version on export). A spec-valid SKILL.md without
`metadata.level` (another source's skill: name and description only, say) is a foreign skill, kept as
written and never supplied or maintained. The body, under 500 lines, is readable markdown ending in one fenced
`json` block that holds the skill's structured content, so a round trip is lossless for everything
the format holds. Reading uses the bounded YAML loader (`toolshift.world.language.yamlfile`: no duplicate keys,
aliases counted as what they expand to, depth ≤ 64) and `json.loads` only, so data never runs code; the
size is checked before a file is read, a skill folder or file that is a symlink is refused, and the json
block is checked against the level's body shape (docs/formats.md), finite numbers and valid Unicode
only, so what import accepts, export and serve can use.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import yaml

from toolshift.errors import BadInputError
from toolshift.fileio import encodes_utf8, open_input, require_regular
from toolshift.steward.library import LEVELS, MAX_NAME, NAME, Skill, plan_facts
from toolshift.world.language.yamlfile import parse_yaml

MAX_DESCRIPTION = 1024
MAX_BODY_LINES = 500
MAX_FILE_BYTES = 256 * 1024
MAX_METADATA = 32
MAX_METADATA_VALUE = 8192
MAX_OPTIONAL_FIELD = 1024
MAX_BODY_DEPTH = 32
WHOLE = re.compile(r"[0-9]{1,9}")
OPTIONAL_FIELDS = ("license", "compatibility", "allowed-tools")
FRONT = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.DOTALL)
INACTIVE_NOTE = "> **Inactive**: a tool it needs is gone or has changed in the library's catalog. Do not use this skill.\n\n"
DATA = re.compile(r"```json\n(.*?)\n```\s*\Z", re.DOTALL)


def _markdown(skill: Skill) -> str:
    """The readable part of a skill's body."""
    b = skill.body
    lines = [f"# {skill.description.splitlines()[0][:200]}", ""]
    if b.get("instructions"):  # written by a model (`--model` distillation)
        lines += [str(b["instructions"]), ""]
    if skill.level == "planning":
        if b.get("requests"):
            lines += ["Asked as:", "", *[f"- {r}" for r in b["requests"][:5]], ""]
        if b.get("facts"):
            lines += ["Ask the user for: " + ", ".join(b["facts"]), ""]
        lines += ["Steps:", ""]
        for k, step in enumerate(b.get("steps", []), 1):
            each = " (for every matching item)" if step.get("each") else ""
            lines.append(f"{k}. `{step['tool']}`{each}: " + _bindings(step.get("args", {})))
        lines.append("")
    elif skill.level == "atomic":
        lines += ["Calls:", ""]
        for k, call in enumerate(b.get("calls", []), 1):
            lines.append(f"{k}. `{call['tool']}`: " + _bindings(call.get("args", {})))
        lines.append("")
    else:
        if b.get("required"):
            lines += ["Required: " + ", ".join(f"`{r}`" for r in b["required"]), ""]
        for name, p in b.get("params", {}).items():
            detail = ", ".join(f"{k} {v}" for k, v in p.items() if k != "description")
            lines.append(f"- `{name}`: {detail}")
        for err in b.get("errors", [])[:10]:
            lines.append(
                f"- error seen: {err.get('message', '')[:200]}"
                + (f" — fix: {err['fix']}" if err.get("fix") else "")
            )
        lines.append("")
    return "\n".join(lines)


def _bindings(args: dict[str, Any]) -> str:
    out = []
    for name, b in args.items():
        if "fact" in b:
            out.append(f"{name} ← the user's {b['fact']}")
        elif "template" in b:
            out.append(f"{name} ← the text {b['template']!r} with the user's facts put in")
        elif "step" in b:
            where = (
                " where " + ", ".join(f"{k} = {v}" for k, v in b["where"].items()) if b.get("where") else ""
            )
            out.append(f"{name} ← step {b['step'] + 1} result {'.'.join(map(str, b['path']))}{where}")
        elif "input" in b:
            out.append(f"{name} ← input {b['input']}")
        else:
            out.append(f"{name} = {json.dumps(b.get('value'))}")
    return "; ".join(out) or "no arguments"


def plan_brief(plan: Skill, limit: int = 240) -> str:
    """A planning skill's steps on one line, for an agent's prompt (the harness's handoff, D196)."""
    return steps_brief(plan.body.get("steps", plan.body.get("calls", [])), limit)


def steps_brief(steps: list[dict[str, Any]], limit: int = 240) -> str:
    """Plan steps (as a skill's body or `steward_plan` gives them) on one line: each step's tool and where
    its arguments come from, cut at `limit` characters so a prompt that clips its policy keeps it whole."""
    parts = []
    for k, step in enumerate(steps, 1):
        each = " for every match" if step.get("each") else ""
        parts.append(f"{k}. {step['tool']}({_bindings(step.get('args', {}))}){each}")
    facts = plan_facts(steps)
    ask = f"Ask the customer for: {', '.join(facts)}. " if facts else ""
    text = ask + "Steps for this request: " + "; ".join(parts) + "."
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(skill: Skill, library_version: int | None = None) -> str:
    """The `SKILL.md` text of a skill (a foreign skill as it was read; an inactive one marked in its body)."""
    if skill.level == "foreign":
        extra = {k: v for k, v in skill.body.get("front", {}).items() if k in (*OPTIONAL_FIELDS, "metadata")}
        head = yaml.safe_dump(
            {"name": skill.id, "description": skill.description, **extra},
            sort_keys=False, allow_unicode=True, width=10_000,
        )  # fmt: skip
        return f"---\n{head}---\n{skill.body.get('markdown', '')}"
    front = {
        "name": skill.id,
        "description": skill.description,
        "metadata": {
            "level": skill.level,
            "domain": skill.domain,
            "tools": ",".join(skill.tools),
            "catalog_version": str(skill.catalog_version),
            "revision": str(skill.revision),
            "active": "true" if skill.active else "false",
        },
    }
    if library_version is not None:
        front["metadata"]["library_version"] = str(library_version)
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    data = json.dumps(skill.body, indent=1, sort_keys=True, ensure_ascii=False)
    note = "" if skill.active else INACTIVE_NOTE
    return f"---\n{head}---\n{note}{_markdown(skill)}\n```json\n{data}\n```\n"


def export_skills(skills: list[Skill], out: str | Path, library_version: int | None = None) -> list[Path]:
    """Write each skill as `out/<name>/SKILL.md` (each file written beside, then renamed); with
    `library_version`, each Steward skill records the library's catalog version for import to keep."""
    root = Path(out)
    paths = []
    for s in skills:
        text = render(s, library_version)
        check(s.id, text, root / s.id / "SKILL.md")  # never write what import would refuse
        folder = root / s.id
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "SKILL.md"
        tmp = folder / "SKILL.md.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        paths.append(path)
    return paths


def check(folder_name: str, text: str, source: Path) -> Skill:
    """Parse one `SKILL.md`; refuse bad front matter or body naming the field."""
    return _check(folder_name, text, source)[0]


def _check(folder_name: str, text: str, source: Path) -> tuple[Skill, int]:
    """A `SKILL.md`'s skill and the library version it records (its own catalog version if none; 0 if
    foreign). Without Steward's `metadata.level` it is a foreign skill: only the spec's checks apply."""
    src = str(source)
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise BadInputError(f"file is over {MAX_FILE_BYTES} bytes", source=src)
    m = FRONT.match(text.replace("\r\n", "\n"))
    if m is None:
        raise BadInputError("no YAML front matter between '---' lines", source=src, field="front matter")
    try:
        front = parse_yaml(m.group(1), src)
    except BadInputError as exc:
        raise BadInputError(
            f"front matter is not YAML: {exc.detail}", source=src, field="front matter"
        ) from None
    if not isinstance(front, dict):
        raise BadInputError("front matter must be a mapping", source=src, field="front matter")
    unknown = sorted(
        set(front) - {"name", "description", "metadata", "license", "compatibility", "allowed-tools"}
    )
    if unknown:
        raise BadInputError(f"unknown front-matter field {unknown[0]!r}", source=src, field=str(unknown[0]))
    _unicode(front, src, "front matter")
    for key in OPTIONAL_FIELDS:
        value = front.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > MAX_OPTIONAL_FIELD):
            raise BadInputError(
                f"must be a string of at most {MAX_OPTIONAL_FIELD} characters", source=src, field=key
            )
    name = front.get("name")
    if not isinstance(name, str) or not name:
        raise BadInputError("missing or not a string", source=src, field="name")
    if len(name) > MAX_NAME or not NAME.match(name):
        raise BadInputError(
            f"{name[:80]!r} is not ≤ {MAX_NAME} lowercase letters, digits and single hyphens",
            source=src,
            field="name",
        )
    if name != folder_name:
        raise BadInputError(f"{name!r} does not match its folder {folder_name!r}", source=src, field="name")
    desc = front.get("description")
    if not isinstance(desc, str) or not desc.strip():
        raise BadInputError("missing or not a string", source=src, field="description")
    if len(desc) > MAX_DESCRIPTION:
        raise BadInputError(
            f"{len(desc)} characters (at most {MAX_DESCRIPTION})", source=src, field="description"
        )
    meta = front.get("metadata", {})
    if not isinstance(meta, dict) or len(meta) > MAX_METADATA:
        raise BadInputError(
            f"must be a mapping of at most {MAX_METADATA} entries", source=src, field="metadata"
        )
    for k, v in meta.items():
        if not isinstance(k, str) or not isinstance(v, str) or len(v) > MAX_METADATA_VALUE:
            raise BadInputError("keys and values must be strings", source=src, field=f"metadata.{k}")
    if "level" not in meta:
        return _foreign(name, desc, front, m.group(2), src), 0
    level = meta.get("level")
    if level not in LEVELS:
        raise BadInputError(
            f"{level!r} is not one of {', '.join(LEVELS)}", source=src, field="metadata.level"
        )
    for key in ("domain", "tools", "catalog_version", "revision", "active"):
        if key not in meta:
            raise BadInputError("missing", source=src, field=f"metadata.{key}")
    for key in ("catalog_version", "revision", "library_version"):
        if key in meta and (not WHOLE.fullmatch(meta[key]) or int(meta[key]) < 1):
            raise BadInputError(
                f"{meta[key][:40]!r} is not a whole number from 1 to 999,999,999 (ASCII digits)",
                source=src,
                field=f"metadata.{key}",
            )
    if meta["active"] not in ("true", "false"):
        raise BadInputError("must be 'true' or 'false'", source=src, field="metadata.active")
    body = m.group(2)
    if body.count("\n") >= MAX_BODY_LINES:
        raise BadInputError(
            f"body has {body.count(chr(10))} lines (under {MAX_BODY_LINES})", source=src, field="body"
        )
    d = DATA.search(body)
    if d is None:
        raise BadInputError(
            "body does not end in a ```json block with the skill's content", source=src, field="body"
        )
    try:
        data = json.loads(d.group(1), parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"the json block is malformed at line {exc.lineno}", source=src, field="body"
        ) from None
    except RecursionError:
        raise BadInputError(
            f"the json block is nested more than {MAX_BODY_DEPTH} levels deep", source=src, field="body"
        ) from None
    except ValueError as exc:
        raise BadInputError(
            f"the json block holds a number that cannot be read: {exc}", source=src, field="body"
        ) from None
    if not isinstance(data, dict):
        raise BadInputError("the json block must be an object", source=src, field="body")
    _unicode(data, src, "body")
    check_body(level, data, src)
    tools = tuple(t for t in meta["tools"].split(",") if t)
    _check_tools(level, tools, data, src)
    version = int(meta.get("library_version", meta["catalog_version"]))
    return Skill(
        id=name,
        level=level,  # type: ignore[arg-type]
        domain=meta["domain"],
        description=desc,
        body=data,
        tools=tools,
        active=meta["active"] == "true",
        revision=int(meta["revision"]),
        catalog_version=int(meta["catalog_version"]),
    ), version


TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
"""An MCP tool name (the specification's characters and length)."""


def _check_tools(level: str, tools: tuple[str, ...], body: dict[str, Any], src: str) -> None:
    """Refuse a tool list with a name no MCP server could serve or a name twice, and a body that calls a tool
    its list leaves out: Steward supplies a skill only while every tool it lists is in the catalog, so an
    unlisted call would reach a catalog that lacks it (issue 56)."""
    for t in tools:
        if not TOOL_NAME.match(t):
            raise BadInputError(
                f"{t[:80]!r} is not a tool name (1 to 128 of A-Z a-z 0-9 _ - .)",
                source=src,
                field="metadata.tools",
            )
    if len(set(tools)) != len(tools):
        twice = next(t for t in tools if tools.count(t) > 1)
        raise BadInputError(f"{twice!r} is listed twice", source=src, field="metadata.tools")
    key = {"planning": "steps", "atomic": "calls"}.get(level)
    for i, step in enumerate(body.get(key, []) if key else []):
        if step["tool"] not in tools:
            raise BadInputError(
                f"calls {step['tool'][:80]!r}, which metadata.tools does not list",
                source=src,
                field=f"body.{key}.{i}.tool",
            )


def _foreign(name: str, desc: str, front: dict[str, Any], body: str, src: str) -> Skill:
    """A spec-valid skill from another source: kept as written, never supplied or maintained."""
    if body.count("\n") >= MAX_BODY_LINES:
        raise BadInputError(
            f"body has {body.count(chr(10))} lines (under {MAX_BODY_LINES})", source=src, field="body"
        )
    kept = {k: front[k] for k in (*OPTIONAL_FIELDS, "metadata") if k in front}
    return Skill(name, "foreign", "", desc, {"markdown": body, "front": kept}, ())


def import_skills(root: str | Path, *, limit: int = 100_000) -> list[Skill]:
    """Read every `<folder>/SKILL.md` under `root`; the first invalid one is refused naming its field.

    A folder with no skill folders is refused too (an import of nothing is a mistake, not a library).
    """
    return import_library(root, limit=limit)[0]


def import_library(root: str | Path, *, limit: int = 100_000) -> tuple[list[Skill], int]:
    """The skills under `root` and the library version they record (the highest; 0 if none does)."""
    base = Path(root)
    if not base.is_dir():
        raise BadInputError("not a folder of skills", source=str(base))
    entries = sorted(base.iterdir())
    folders = [p for p in entries if p.is_dir()]
    if len(folders) > limit:
        raise BadInputError(f"{len(folders)} skill folders (at most {limit})", source=str(base))
    if not folders:
        raise BadInputError("no skill folders (<name>/SKILL.md) in this folder", source=str(base))
    skills, version = [], 0
    for folder in folders:
        if folder.is_symlink():
            raise BadInputError(
                "a skill folder must be a folder inside DIR, not a symlink", source=str(folder)
            )
        path = folder / "SKILL.md"
        if path.is_symlink():
            raise BadInputError("SKILL.md must be a file in its folder, not a symlink", source=str(path))
        if not path.exists():
            raise BadInputError("no SKILL.md in this skill folder", source=str(folder))
        require_regular(path, what="SKILL.md")
        skill, v = _check(folder.name, _read(path), path)
        skills.append(skill)
        version = max(version, v)
    return skills, version


def _read(path: Path) -> str:
    """The text of a SKILL.md, its size checked before anything is read (and the read bounded too)."""
    src = str(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise BadInputError(f"file is over {MAX_FILE_BYTES} bytes", source=src)
        with open_input(path, what="SKILL.md") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise BadInputError(f"cannot read: {exc.strerror or exc}", source=src) from None
    if len(raw) > MAX_FILE_BYTES:
        raise BadInputError(f"file is over {MAX_FILE_BYTES} bytes", source=src)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInputError("not UTF-8 text", source=src) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name}, which is not a number (finite numbers only)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]}, which is not a finite number")
    return value


def _unicode(value: Any, src: str, root: str) -> None:
    """Refuse a string (or key) that is not valid Unicode (a lone surrogate) or nesting past MAX_BODY_DEPTH."""
    stack: list[tuple[str, Any, int]] = [(root, value, 0)]
    while stack:
        where, v, depth = stack.pop()
        if depth > MAX_BODY_DEPTH:
            raise BadInputError(f"nested more than {MAX_BODY_DEPTH} levels deep", source=src, field=where)
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise BadInputError("not valid Unicode (a lone surrogate)", source=src, field=where) from None
        elif isinstance(v, dict):
            for k, item in v.items():
                stack.append((f"{where}.{k}" if encodes_utf8(str(k)) else where, item, depth + 1))
                if not encodes_utf8(str(k)):
                    raise BadInputError(
                        "a key is not valid Unicode (a lone surrogate)", source=src, field=where
                    )
        elif isinstance(v, list):
            stack.extend((f"{where}.{i}", item, depth + 1) for i, item in enumerate(v))


def check_body(level: str, body: dict[str, Any], src: str) -> None:
    """Refuse a body whose shape is not its level's (docs/formats.md "Bodies"), naming the field."""

    def need(ok: bool, field: str, why: str) -> None:
        if not ok:
            raise BadInputError(why, source=src, field=f"body.{field}")

    def strings(key: str, *, required: bool = False) -> None:
        if key not in body and not required:
            return
        v = body.get(key)
        need(isinstance(v, list) and all(isinstance(x, str) for x in v), key, "must be a list of strings")

    def calls(key: str) -> None:
        v = body.get(key)
        need(isinstance(v, list), key, "must be a list of steps")
        for i, step in enumerate(v):
            at = f"{key}.{i}"
            need(isinstance(step, dict), at, "must be an object")
            need(
                isinstance(step.get("tool"), str) and bool(step["tool"]),
                f"{at}.tool",
                "missing or not a string",
            )
            args = step.get("args", {})
            need(isinstance(args, dict), f"{at}.args", "must be an object of argument bindings")
            for name, b in args.items():
                binding(b, f"{at}.args.{name}")
            need(isinstance(step.get("each", False), bool), f"{at}.each", "must be true or false")
            if "atomic" in step:
                need(isinstance(step["atomic"], str), f"{at}.atomic", "must be a skill id")

    def binding(b: Any, at: str) -> None:
        need(isinstance(b, dict), at, "a binding must be an object")
        kinds = [k for k in ("fact", "step", "input", "value", "template") if k in b]
        need(len(kinds) == 1, at, "a binding has exactly one of fact, step, input, value, template")
        if kinds[0] in ("fact", "input", "template"):
            need(isinstance(b[kinds[0]], str), f"{at}.{kinds[0]}", "must be a string")
        if kinds[0] == "template":
            facts = b.get("facts")
            need(isinstance(facts, list) and all(isinstance(x, str) for x in facts), f"{at}.facts",
                 "must be a list of fact phrases")  # fmt: skip
            need(all("{" + x + "}" in b["template"] for x in facts), f"{at}.template",
                 "must name each of its facts in braces")  # fmt: skip
        elif kinds[0] == "step":
            step = b["step"]
            need(isinstance(step, int) and not isinstance(step, bool) and 0 <= step < 10_000, f"{at}.step",
                 "must be a step index")  # fmt: skip
            path = b.get("path")
            need(isinstance(path, list) and all(isinstance(p, str | int) and not isinstance(p, bool) for p in path),
                 f"{at}.path", "must be a list of keys and indexes")  # fmt: skip
            where = b.get("where", {})
            need(isinstance(where, dict) and all(isinstance(x, str) for x in where.values()), f"{at}.where",
                 "must be an object of field → fact phrase")  # fmt: skip

    if level == "planning":
        calls("steps")
        for key in ("requests", "facts", "steps_tools", "evidence"):
            strings(key)
    elif level == "atomic":
        calls("calls")
        for key in ("requests", "facts"):
            strings(key)
    else:
        strings("required")
        params = body.get("params", {})
        need(isinstance(params, dict), "params", "must be an object of parameter name → schema")
        for name, p in params.items():
            need(isinstance(p, dict), f"params.{name}", "must be an object")
        errors = body.get("errors", [])
        need(isinstance(errors, list), "errors", "must be a list")
        for i, e in enumerate(errors):
            need(isinstance(e, dict) and isinstance(e.get("message", ""), str) and isinstance(e.get("fix", ""), str),
                 f"errors.{i}", "must be an object with a string message and fix")  # fmt: skip
        for key in ("effect", "schema_digest"):
            if key in body:
                need(isinstance(body[key], str), key, "must be a string")
