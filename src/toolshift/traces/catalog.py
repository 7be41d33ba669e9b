"""Tool catalogs: per domain, what each tool does to the world (read / write / neither) and why we say so.

A published run is unusable for turn anatomy or flows without knowing which calls change state, so
every converter writes a catalog beside its episodes. Each label records its origin:

- `source`: taken from the tool's implementation or the benchmark's own read/write lists;
- `mcp-annotation`: from an MCP tool's `readOnlyHint` / `destructiveHint` annotations;
- `verb-rule`: guessed from the tool name's leading verb by `label_by_verb` (the documented fallback);
- `manual`: set by a person editing the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic
from toolshift.models import Effect
from toolshift.traces.result_values import ResultForm

CATALOG_FORMAT: Final = "toolshift.catalog/1"
CATALOG_SUFFIX = ".catalog.json"

LabelOrigin = Literal["source", "verb-rule", "mcp-annotation", "manual"]


class CatalogTool(BaseModel):
    """One tool of a domain and its effect on the world."""

    model_config = ConfigDict(extra="forbid")

    name: str
    effect: Effect
    origin: LabelOrigin
    exists: bool = True
    """False for names a run called that the harness never offered (hallucinated tools): `neither`."""
    note: str = ""


class ToolCatalog(BaseModel):
    """The tools of one domain, sorted by name, with their effects. File: `<domain>.catalog.json`."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["toolshift.catalog/1"] = CATALOG_FORMAT
    domain: str
    tools: list[CatalogTool] = Field(default_factory=list)
    source: str = ""
    """Where the labels came from (benchmark and revision, MCP server), free text."""
    results: ResultForm = "json"
    """How the tools print their results (`toolshift.traces.result_values`): `json` (MCP servers, τ²-bench),
    `python` (JSON or Python literals: BFCL), `yaml` (YAML, Python literals and label listings: AgentDojo).
    Written only when not `json`."""

    def effects(self) -> dict[str, Effect]:
        return {t.name: t.effect for t in self.tools}

    def get(self, name: str) -> CatalogTool | None:
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def merged(self, tools: Iterable[CatalogTool]) -> ToolCatalog:
        """A copy with `tools` added; a name already present keeps its existing label."""
        by_name = {t.name: t for t in self.tools}
        for tool in tools:
            by_name.setdefault(tool.name, tool)
        return self.model_copy(update={"tools": sorted(by_name.values(), key=lambda t: t.name)})


# --- the verb rule ----------------------------------------------------------------------------

READ_VERBS = frozenset(
    {
        "get", "search", "find", "list", "lookup", "look", "fetch", "read", "query", "check", "count",
        "show", "view", "describe", "retrieve", "select", "browse", "inspect", "download", "verify",
        "validate", "is", "has", "can",
    }
)  # fmt: skip
WRITE_VERBS = frozenset(
    {
        "book", "cancel", "modify", "update", "exchange", "return", "send", "create", "add", "delete",
        "remove", "set", "reply", "forward", "edit", "change", "insert", "write", "post", "put", "patch",
        "move", "rename", "assign", "approve", "reject", "pay", "refund", "enable",
        "disable", "toggle", "reset", "reboot", "grant", "revoke", "upload", "schedule", "reschedule",
        "archive", "close", "merge", "register", "apply", "make", "submit", "record", "mark", "suspend",
        "resume", "turn", "connect", "disconnect", "reseat", "purchase", "order", "save", "star",
        "fork", "push", "commit", "comment", "invite", "share", "append", "drop", "truncate", "alter",
    }
)  # fmt: skip
NEITHER_NAMES = frozenset(
    {"think", "calculate", "transfer_to_human_agents", "respond", "done", "final_answer"}
)


def _name_words(name: str) -> list[str]:
    """`email.send_email` → ['send', 'email']; `getUserDetails` → ['get', 'user', 'details']."""
    base = name.rsplit(".", 1)[-1]
    base = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base)
    return [w for w in re.split(r"[^A-Za-z0-9]+", base.lower()) if w]


def label_by_verb(name: str) -> tuple[Effect, str] | None:
    """The fallback labeller: the effect implied by a tool name's leading verb, and the rule that fired.

    Harness tools (`think`, `calculate`, `transfer_to_human_agents`) are `neither`; a name whose
    first word is a read verb (get/search/find/list/...) is `read`; a write verb
    (book/cancel/modify/update/exchange/return/send/create/delete/reply/forward/...) is `write`.
    Returns None when no rule applies: the caller reports the tool as unlabelled rather than guess.
    """
    base = name.rsplit(".", 1)[-1]
    if base.lower() in NEITHER_NAMES:
        return "neither", f"harness tool {base!r}"
    words = _name_words(name)
    if not words:
        return None
    first_two = "_".join(words[:2])
    for verb in (first_two, words[0]):
        if verb in WRITE_VERBS:
            return "write", f"leading verb {verb!r} writes"
        if verb in READ_VERBS:
            return "read", f"leading verb {verb!r} reads"
    return None


def catalog_by_verb(domain: str, names: Iterable[str], *, source: str = "") -> tuple[ToolCatalog, list[str]]:
    """A catalog labelled by `label_by_verb`, and the names no rule could label (left out)."""
    tools, unlabelled = [], []
    for name in sorted(set(names)):
        label = label_by_verb(name)
        if label is None:
            unlabelled.append(name)
            continue
        tools.append(CatalogTool(name=name, effect=label[0], origin="verb-rule", note=label[1]))
    return ToolCatalog(domain=domain, tools=tools, source=source), unlabelled


# --- MCP tool lists ---------------------------------------------------------------------------


def _annotation(tool: Any, key: str) -> Any:
    """An MCP annotation by its wire name (`readOnlyHint`), from a dict or an mcp.types.Tool."""
    annotations = tool.get("annotations") if isinstance(tool, Mapping) else getattr(tool, "annotations", None)
    if annotations is None:
        return None
    if isinstance(annotations, Mapping):
        return annotations.get(key)
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", key).lower()
    return getattr(annotations, snake, getattr(annotations, key, None))


def _tool_name(tool: Any) -> str:
    return str(tool["name"] if isinstance(tool, Mapping) else tool.name)


def catalog_from_mcp_tools(
    domain: str, tools: Iterable[Any], *, neither: Iterable[str] = (), source: str = ""
) -> ToolCatalog:
    """A catalog from an MCP `tools/list` result (mcp.types.Tool objects or their JSON dicts).

    `readOnlyHint: true` → read; `readOnlyHint: false` (or `destructiveHint: true`) → write; names in
    `neither` → neither (harness tools). A tool without those annotations falls back to the verb rule,
    and if no rule applies it is labelled `write` with a note: treating an unknown tool as able to
    change state is the safe side for flows (it never lets a cached read stand in for it).
    """
    neither = set(neither)
    out = []
    for tool in tools:
        name = _tool_name(tool)
        read_only = _annotation(tool, "readOnlyHint")
        destructive = _annotation(tool, "destructiveHint")
        if name in neither:
            out.append(CatalogTool(name=name, effect="neither", origin="manual", note="harness tool"))
        elif read_only is True:
            out.append(CatalogTool(name=name, effect="read", origin="mcp-annotation", note="readOnlyHint"))
        elif read_only is False or destructive is True:
            note = "readOnlyHint false" if read_only is False else "destructiveHint"
            out.append(CatalogTool(name=name, effect="write", origin="mcp-annotation", note=note))
        else:
            effect, note = label_by_verb(name) or (
                "write",
                "no annotation and no verb rule: assumed to write",
            )
            out.append(CatalogTool(name=name, effect=effect, origin="verb-rule", note=note))
    return ToolCatalog(domain=domain, tools=sorted(out, key=lambda t: t.name), source=source)


# --- files ------------------------------------------------------------------------------------


def catalog_path(directory: Path, domain: str) -> Path:
    """Where a domain's catalog lives beside its episodes: `<dir>/<domain>.catalog.json`."""
    return Path(directory) / f"{domain}{CATALOG_SUFFIX}"


def save_catalog(catalog: ToolCatalog, path: Path) -> Path:
    """Write atomically (temp file + rename), so a failed write leaves the old file intact."""
    exclude = {"results"} if catalog.results == "json" else None
    return write_text_atomic(path, catalog.model_dump_json(indent=2, exclude=exclude) + "\n")


def load_catalog(path: Path) -> ToolCatalog:
    """Read a catalog file; an unknown `format`, a malformed tool entry or a tool listed twice with
    conflicting labels is a BadInputError naming the file, the tool's index and the field."""
    path = Path(path)
    raw = read_json(path, what="tool catalog")
    if not isinstance(raw, dict):
        raise BadInputError("a tool catalog is a JSON object", source=str(path))
    if raw.get("format") != CATALOG_FORMAT:
        raise BadInputError(
            f"unknown catalog format {raw.get('format')!r} (this reader knows {CATALOG_FORMAT})",
            source=str(path),
            field="format",
        )
    try:
        catalog = ToolCatalog.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = err["loc"]
        record = loc[1] if len(loc) > 1 and loc[0] == "tools" else None
        field = ".".join(str(p) for p in loc[2:] if not isinstance(p, int)) if record is not None else None
        raise BadInputError(
            err["msg"], source=str(path), record=record, field=field or ".".join(map(str, loc))
        ) from exc
    _refuse_conflicting_duplicates(catalog, path)
    return catalog


def _refuse_conflicting_duplicates(catalog: ToolCatalog, path: Path) -> None:
    """A tool may be listed more than once only with the same label: which one would count is anyone's guess."""
    first: dict[str, int] = {}
    for index, tool in enumerate(catalog.tools):
        seen = first.setdefault(tool.name, index)
        if seen == index:
            continue
        other = catalog.tools[seen]
        for field in ("effect", "exists"):
            if getattr(other, field) != getattr(tool, field):
                raise BadInputError(
                    f"tool {tool.name!r} is listed twice with conflicting {field}s: "
                    f"{getattr(other, field)!r} at tools[{seen}], {getattr(tool, field)!r} here",
                    source=str(path),
                    record=index,
                    field=field,
                )
