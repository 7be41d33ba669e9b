"""Agent Skills interchange: each skill as a folder holding `SKILL.md` (YAML front matter + markdown body).

Front matter: `name` (≤ 64 lowercase letters, digits and hyphens, equal to the folder's name),
`description` (≤ 1,024 characters), `metadata` (string → string: level, domain, tools, catalog
version, revision, active). The body, under 500 lines, is readable markdown ending in one fenced
`json` block that holds the skill's structured content, so a round trip is lossless for everything
the format holds. Reading uses `yaml.safe_load` and `json.loads` only: data never runs code.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from toolshift.errors import BadInputError
from toolshift.steward.library import LEVELS, MAX_NAME, NAME, Skill

MAX_DESCRIPTION = 1024
MAX_BODY_LINES = 500
MAX_FILE_BYTES = 256 * 1024
MAX_METADATA = 32
MAX_METADATA_VALUE = 8192
FRONT = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.DOTALL)
DATA = re.compile(r"```json\n(.*?)\n```\s*\Z", re.DOTALL)


def _markdown(skill: Skill) -> str:
    """The readable part of a skill's body."""
    b = skill.body
    lines = [f"# {skill.description.splitlines()[0][:200]}", ""]
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


def render(skill: Skill) -> str:
    """The `SKILL.md` text of a skill."""
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
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    data = json.dumps(skill.body, indent=1, sort_keys=True, ensure_ascii=False)
    return f"---\n{head}---\n{_markdown(skill)}\n```json\n{data}\n```\n"


def export_skills(skills: list[Skill], out: str | Path) -> list[Path]:
    """Write each skill as `out/<name>/SKILL.md` (each file written beside, then renamed)."""
    root = Path(out)
    paths = []
    for s in skills:
        text = render(s)
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
    src = str(source)
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise BadInputError(f"file is over {MAX_FILE_BYTES} bytes", source=src)
    m = FRONT.match(text.replace("\r\n", "\n"))
    if m is None:
        raise BadInputError("no YAML front matter between '---' lines", source=src, field="front matter")
    try:
        front = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise BadInputError(f"front matter is not YAML: {str(exc).splitlines()[0]}", source=src) from None
    if not isinstance(front, dict):
        raise BadInputError("front matter must be a mapping", source=src, field="front matter")
    unknown = sorted(
        set(front) - {"name", "description", "metadata", "license", "compatibility", "allowed-tools"}
    )
    if unknown:
        raise BadInputError(f"unknown front-matter field {unknown[0]!r}", source=src, field=str(unknown[0]))
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
    meta = front.get("metadata")
    if not isinstance(meta, dict) or len(meta) > MAX_METADATA:
        raise BadInputError(
            f"must be a mapping of at most {MAX_METADATA} entries", source=src, field="metadata"
        )
    for k, v in meta.items():
        if not isinstance(k, str) or not isinstance(v, str) or len(v) > MAX_METADATA_VALUE:
            raise BadInputError("keys and values must be strings", source=src, field=f"metadata.{k}")
    level = meta.get("level")
    if level not in LEVELS:
        raise BadInputError(
            f"{level!r} is not one of {', '.join(LEVELS)}", source=src, field="metadata.level"
        )
    for key in ("domain", "tools", "catalog_version", "revision", "active"):
        if key not in meta:
            raise BadInputError("missing", source=src, field=f"metadata.{key}")
    for key in ("catalog_version", "revision"):
        if not meta[key].isdigit():
            raise BadInputError(
                f"{meta[key][:40]!r} is not a whole number", source=src, field=f"metadata.{key}"
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
        data = json.loads(d.group(1))
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"the json block is malformed at line {exc.lineno}", source=src, field="body"
        ) from None
    if not isinstance(data, dict):
        raise BadInputError("the json block must be an object", source=src, field="body")
    tools = tuple(t for t in meta["tools"].split(",") if t)
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
    )


def import_skills(root: str | Path, *, limit: int = 100_000) -> list[Skill]:
    """Read every `<folder>/SKILL.md` under `root`; the first invalid one is refused naming its field."""
    base = Path(root)
    if not base.is_dir():
        raise BadInputError("not a folder of skills", source=str(base))
    folders = sorted(p for p in base.iterdir() if p.is_dir())
    if len(folders) > limit:
        raise BadInputError(f"{len(folders)} skill folders (at most {limit})", source=str(base))
    skills = []
    for folder in folders:
        path = folder / "SKILL.md"
        if not path.is_file():
            raise BadInputError("no SKILL.md in this skill folder", source=str(folder))
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise BadInputError("not UTF-8 text", source=str(path)) from None
        skills.append(check(folder.name, text, path))
    return skills
