"""Agent Skills in toolshift's own agent: a folder of SKILL.md skills offered by name and description, opened on demand.

Harnesses that support Agent Skills (agentskills.io) show the model each skill's `name` and `description` and
load a skill's body, and any file beside it, only when the model chooses it. A `SkillShelf` does the same in the
agent loop: the system prompt gains a `# Skills` section listing them, and the harness-side tool `read_skill`
(it never reaches the world, like `end_conversation`) returns a skill's SKILL.md body with the files its folder
holds, or one of those files. Each episode records which skills were offered and which opened
(`source.skills`). Any folder the reference validator (`skills-ref validate`) accepts is read: Steward's
export, a skill method's output, a folder from anywhere. Reading is bounded and never runs code: the bounded
YAML loader for the front matter, text files only, no symlinks. `materialise` writes a shelf as a folder of
SKILL.md skills, for outside harnesses whose native skill folder it becomes.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.agents.chat import ProposedCall, ToolDef
from toolshift.agents.copying import ArgChoice, ToolChoice
from toolshift.agents.listing import relevance, words_of
from toolshift.agents.toolbox import ToolOutcome
from toolshift.errors import BadInputError
from toolshift.fileio import write_text_atomic
from toolshift.world.language.yamlfile import parse_yaml

SKILL_TOOL = "read_skill"
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_SKILL_BYTES = 256 * 1024
MAX_FILE_BYTES = 64 * 1024
MAX_FILES = 50
MAX_SKILLS = 2000
MAX_PRELOAD = 4000
"""Characters of a preloaded skill's body put in the prompt."""
FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
"""The front-matter fields the Agent Skills specification allows (skills-ref refuses any other)."""


@dataclass(frozen=True)
class AgentSkill:
    """One skill: its front matter's name and description, the markdown after it, and the folder's other text files."""

    name: str
    description: str
    body: str
    files: dict[str, str] = field(default_factory=dict)
    """Relative path (POSIX) → text, for every other regular text file in the skill's folder."""
    front: dict[str, Any] = field(default_factory=dict)
    """The front matter's other fields as written (license, compatibility, metadata, allowed-tools)."""

    def text(self) -> str:
        """The SKILL.md text (front matter, then the body)."""
        import yaml

        head = yaml.safe_dump(
            {"name": self.name, "description": self.description, **self.front},
            sort_keys=False, allow_unicode=True, width=10_000,
        )  # fmt: skip
        return f"---\n{head}---\n{self.body}"


def check_name(name: Any, folder: str, source: str) -> str:
    """The spec's rules for `name`, as skills-ref applies them (NFKC; lowercase letters, digits, single inner
    hyphens; at most 64; equal to its folder's name)."""
    if not isinstance(name, str) or not name.strip():
        raise BadInputError("missing or not a string", source=source, field="name")
    name = unicodedata.normalize("NFKC", name.strip())
    problem = None
    if len(name) > MAX_NAME:
        problem = f"{len(name)} characters (at most {MAX_NAME})"
    elif name != name.lower():
        problem = "must be lowercase"
    elif name.startswith("-") or name.endswith("-") or "--" in name:
        problem = "no leading, trailing or consecutive hyphens"
    elif not all(c.isalnum() or c == "-" for c in name):
        problem = "only letters, digits and hyphens"
    elif unicodedata.normalize("NFKC", folder) != name:
        problem = f"{name!r} does not match its folder {folder!r}"
    if problem:
        raise BadInputError(problem, source=source, field="name")
    return name


def parse_skill_md(text: str, folder: str, source: str) -> tuple[str, str, dict[str, Any], str]:
    """(name, description, other front-matter fields, body) of one SKILL.md; refused naming the field."""
    text = text.replace("\r\n", "\n")
    if not text.startswith("---\n"):
        raise BadInputError("no YAML front matter between '---' lines", source=source, field="front matter")
    head, sep, body = text[4:].partition("\n---")
    if not sep:
        raise BadInputError("the front matter is not closed by '---'", source=source, field="front matter")
    body = body.split("\n", 1)[1] if "\n" in body else ""
    front = parse_yaml(head, source)
    if not isinstance(front, dict):
        raise BadInputError("must be a mapping", source=source, field="front matter")
    unknown = sorted(str(k) for k in front if k not in FIELDS)
    if unknown:
        raise BadInputError(f"unknown field {unknown[0]!r}", source=source, field=unknown[0])
    name = check_name(front.get("name"), folder, source)
    desc = front.get("description")
    if not isinstance(desc, str) or not desc.strip():
        raise BadInputError("missing or not a string", source=source, field="description")
    if len(desc) > MAX_DESCRIPTION:
        raise BadInputError(
            f"{len(desc)} characters (at most {MAX_DESCRIPTION})", source=source, field="description"
        )
    compat = front.get("compatibility")
    if compat is not None and (not isinstance(compat, str) or len(compat) > MAX_COMPATIBILITY):
        raise BadInputError(
            f"must be a string of at most {MAX_COMPATIBILITY} characters",
            source=source,
            field="compatibility",
        )
    meta = front.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise BadInputError("must be a mapping", source=source, field="metadata")
    rest = {k: v for k, v in front.items() if k not in ("name", "description")}
    return name, desc, rest, body


def _read_text(path: Path, limit: int) -> str | None:
    """A regular file's text within `limit` bytes; None for a file that is not UTF-8 text (skipped)."""
    if path.is_symlink() or not path.is_file():
        return None
    if path.stat().st_size > limit:
        raise BadInputError(f"file is over {limit:,} bytes", source=str(path))
    raw = path.read_bytes()[: limit + 1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def read_skill(folder: str | Path) -> AgentSkill:
    """One skill folder: its SKILL.md, checked as the specification says, and its other text files."""
    folder = Path(folder)
    path = folder / "SKILL.md"
    if folder.is_symlink() or path.is_symlink():
        raise BadInputError("a skill folder or its SKILL.md must not be a symlink", source=str(path))
    if not path.is_file():
        raise BadInputError("no SKILL.md in this skill folder", source=str(folder))
    text = _read_text(path, MAX_SKILL_BYTES)
    if text is None:
        raise BadInputError("not UTF-8 text", source=str(path))
    name, desc, front, body = parse_skill_md(text, folder.name, str(path))
    files: dict[str, str] = {}
    for sub in sorted(folder.rglob("*")):
        if (
            sub == path
            or sub.is_dir()
            or any(p.is_symlink() for p in (sub, *sub.parents) if folder in p.parents)
        ):
            continue
        if len(files) >= MAX_FILES:
            raise BadInputError(f"more than {MAX_FILES} files", source=str(folder))
        content = _read_text(sub, MAX_FILE_BYTES)
        if content is not None:
            files[sub.relative_to(folder).as_posix()] = content
    return AgentSkill(name, desc.strip(), body, files, front)


def read_skills(root: str | Path) -> list[AgentSkill]:
    """Every `<folder>/SKILL.md` under `root`, by name; the first invalid one is refused naming file and field."""
    base = Path(root)
    if not base.is_dir():
        raise BadInputError("not a folder of skills", source=str(base))
    folders = [p for p in sorted(base.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    if len(folders) > MAX_SKILLS:
        raise BadInputError(f"{len(folders)} skill folders (at most {MAX_SKILLS})", source=str(base))
    return [read_skill(f) for f in folders]


def materialise(skills: Iterable[AgentSkill], out: str | Path) -> Path:
    """Write `skills` as `out/<name>/SKILL.md` with their files (each written beside, then renamed): the folder an
    outside harness reads as its native skill folder (`.claude/skills`, `.codex/skills`, …). Returns `out`."""
    root = Path(out)
    for skill in skills:
        folder = root / skill.name
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(folder / "SKILL.md", skill.text())
        for rel, text in skill.files.items():
            target = (folder / rel).resolve()
            if folder.resolve() not in target.parents:
                raise BadInputError("a skill file must stay inside its folder", source=rel, field="files")
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, text)
    return root


class SkillShelf:
    """A library of Agent Skills as the agent is given it: listed up front, each opened through `read_skill`."""

    def __init__(self, skills: Iterable[AgentSkill], *, label: str = "", preload: Iterable[str] = ()) -> None:
        self.skills = {s.name: s for s in skills}
        self.label = label
        """What the library is (a method and version, a folder), recorded with each episode."""
        self.preload = tuple(n for n in preload if n in self.skills)
        """Skills whose body is in the prompt from the start (a method that deploys its skill preloaded)."""
        self.on_demand = [n for n in self.skills if n not in self.preload]

    @classmethod
    def from_folder(cls, root: str | Path, *, label: str = "", preload: Iterable[str] = ()) -> SkillShelf:
        return cls(read_skills(root), label=label or str(root), preload=preload)

    def digest(self) -> str:
        """12 hex digits over every skill's text and files: which library an episode was given."""
        h = hashlib.sha256()
        for name in sorted(self.skills):
            s = self.skills[name]
            h.update(s.text().encode())
            for rel in sorted(s.files):
                h.update(rel.encode() + b"\0" + s.files[rel].encode())
        return h.hexdigest()[:12]

    def section(self) -> str:
        """The system prompt's `# Skills` section: one line per skill, name and description."""
        if not self.skills:
            return ""
        loaded = [
            f"- {n} (loaded): {' '.join(self.skills[n].body.split())[:MAX_PRELOAD]}" for n in self.preload
        ]
        lines = [f"- {n}: {' '.join(self.skills[n].description.split())}" for n in self.on_demand]
        head = " ".join(
            (["Skills loaded for you."] if loaded else []) + (["Skills you can use."] if lines else [])
        )
        ask = f" Before you act on one, call {SKILL_TOOL} with its name to read it." if lines else ""
        return f"# Skills\n{head}{ask}\n" + "\n".join([*loaded, *lines])

    def tool(self) -> ToolDef:
        """`read_skill(name, file?)`: the names (and files) it takes are enumerated, so a call names a real one."""
        names = list(self.on_demand)
        props: dict[str, Any] = {
            "name": {
                "type": "string", "enum": names, "description": "The skill to read.",
                "enumDescriptions": [self.skills[n].description[:300] for n in names],
            }
        }  # fmt: skip
        files = sorted({rel for s in self.skills.values() for rel in s.files})
        if files:
            props["file"] = {"type": "string", "enum": files, "description": "One of the skill's files."}
        listing = "; ".join(f"{n}: {self.skills[n].description[:120]}" for n in names)
        return ToolDef(
            name=SKILL_TOOL,
            description=f"Read a skill's instructions before using it. Skills: {listing}"[:4000],
            input_schema={
                "type": "object",
                "properties": props,
                "required": ["name"],
                "additionalProperties": False,
            },
            read_only=True,
        )

    def session(self) -> SkillSession:
        return SkillSession(self)


@dataclass
class SkillSession:
    """One episode's use of a shelf: which skills were opened, in order."""

    shelf: SkillShelf
    opened: list[str] = field(default_factory=list)

    def open(self, call: ProposedCall) -> ToolOutcome:
        args = call.arguments or {}
        skill = self.shelf.skills.get(str(args.get("name", "")))
        if skill is None:
            names = ", ".join(self.shelf.skills)
            return ToolOutcome(
                f"error: no skill {args.get('name')!r}; skills: {names}", True, "bad_arguments"
            )
        wanted = args.get("file")
        if wanted:
            if wanted not in skill.files:
                listed = ", ".join(skill.files) or "none"
                return ToolOutcome(
                    f"error: {skill.name} has no file {wanted!r}; its files: {listed}", True, "bad_arguments"
                )
            self.opened.append(f"{skill.name}/{wanted}")
            return ToolOutcome(skill.files[wanted], False)
        self.opened.append(skill.name)
        more = (
            f"\n\nFiles of this skill ({SKILL_TOOL} with file=…): {', '.join(skill.files)}"
            if skill.files
            else ""
        )
        return ToolOutcome(skill.body.strip() + more, False)

    def record(self) -> dict[str, Any]:
        """What the episode keeps under `source.skills`."""
        return {
            "library": self.shelf.label,
            "digest": self.shelf.digest(),
            "offered": list(self.shelf.skills),
            "preloaded": list(self.shelf.preload),
            "opened": list(self.opened),
        }

    def wrap(self, toolbox: Any) -> SkillToolbox:
        return SkillToolbox(toolbox, self)


class SkillToolbox:
    """A toolbox with `read_skill` beside the world's tools: that call is answered here and never reaches the
    world, and it is not among the tools the episode records as exposed (tool retrieval scores world tools)."""

    def __init__(self, inner: Any, session: SkillSession) -> None:
        self._inner = inner
        self._session = session

    def __getattr__(
        self, name: str
    ) -> Any:  # reported, unreported, stale, listed, tools: the world's toolbox's
        return getattr(self._inner, name)

    async def list_tools(self) -> list[ToolDef]:
        tools = await self._inner.list_tools()
        return [*tools, self._session.shelf.tool()] if self._session.shelf.on_demand else tools

    async def call(self, call: ProposedCall) -> ToolOutcome:
        if call.name == SKILL_TOOL and self._session.shelf.on_demand:
            return self._session.open(call)
        return await self._inner.call(call)


def with_skill_tool(shown: list[ToolDef], tools: list[ToolDef]) -> list[ToolDef]:
    """The embedded agent's listed tools, with `read_skill` last when skills are offered: a harness's own tool is
    always shown, whatever the customer's words (D400)."""
    return [*shown, *(t for t in tools if t.name == SKILL_TOOL and t not in shown)]


def skill_first(
    choices: list[ToolChoice], made: Any, said: str, tools: list[ToolDef] | None = None
) -> ToolChoice | None:
    """The embedded agent's first call, when skills are offered: `read_skill` of the skills most relevant to what
    the customer said, by the relevance it ranks tools with (`listing.relevance`: a word of the skill's name
    counts twice, one of its description once; the descriptions are the tool's `enumDescriptions`), when that is
    at least 2. The prompt says to read a skill before using it, which a 135M model does not do unasked (D400,
    D403). None once anything was called, or when no skill is relevant."""
    skill = next((c for c in choices if c.tool == SKILL_TOOL), None)
    names = next((a for a in skill.args if a.name == "name"), None) if skill is not None else None
    if names is None or list(made):
        return None
    tool = next((t for t in tools or [] if t.name == SKILL_TOOL), None)
    prop = ((tool.input_schema or {}).get("properties") or {}).get("name", {}) if tool is not None else {}
    described = dict(zip(prop.get("enum", []), prop.get("enumDescriptions", []), strict=False))
    words = words_of(said)
    scores = {}
    for lit in names.literals:
        name = json.loads(lit)
        scores[lit] = relevance(ToolDef(name.replace("-", " "), described.get(name, ""), {}), words)
    best = max(scores.values(), default=0)
    if best < 2:
        return None
    keep = tuple(k for k, n in scores.items() if n == best)
    return ToolChoice(SKILL_TOOL, (ArgChoice(names.name, names.kind, True, keep),))


__all__ = [
    "SKILL_TOOL",
    "AgentSkill",
    "SkillSession",
    "SkillShelf",
    "SkillToolbox",
    "materialise",
    "parse_skill_md",
    "read_skill",
    "read_skills",
    "skill_first",
    "with_skill_tool",
]
