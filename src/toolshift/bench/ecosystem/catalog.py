"""One domain's tool catalog in one ecosystem version: active tools, the implementations they form, and the transformations.

An *implementation* covers a consecutive block of base functions and says how to perform it with
the version's tools: `plan(gold_block)` turns the block's base gold calls into the concrete calls
to make, and `decode(results)` turns those calls' results back into the base tools' results (the
capability check compares them). Transformations take an active *atomic* implementation (one call
to one tool) and add a new implementation with newly generated tools whose handlers compose the
source's handler:

* one-to-one: `rename_tool`, `rename_param`, `add_param`, `format` (a declared `Codec`);
* one-to-many: `split` into `start_*` / `set_*` / `commit_*` over a real pending-draft store;
* many-to-one: `merge` a block of atomic implementations into one tool that runs them in order
  inside one transaction.

The source is kept (overlap) or retired. A retired one-to-one source whose new tool keeps its name
is a *modified* interface.
"""

from __future__ import annotations

import copy
import hashlib
import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from toolshift.bench.ecosystem.codecs import Codec, codec
from toolshift.models import GoldCall
from toolshift.world.state.runtime import Runtime
from toolshift.world.state.tools import Tool
from toolshift.world.state.world import World
from toolshift.world.toolerror import ToolError

PlannedCall = tuple[str, dict[str, Any]]
Plan = Callable[[Sequence[GoldCall]], list[PlannedCall]]
Decode = Callable[[list[Any]], list[Any]]


@dataclass
class Impl:
    """An implementation of a block of base functions in a version."""

    id: str
    covers: tuple[str, ...]
    tools: tuple[str, ...]
    kind: str
    plan: Plan
    decode: Decode

    @property
    def atomic(self) -> bool:
        return len(self.tools) == 1


_VALIDATORS: dict[int, tuple[Tool, Any]] = {}


def invoke(rt: Runtime, tool: Tool, args: dict[str, Any]) -> Any:
    """Run `tool`'s handler inside the current call after validating `args` against its own schema.

    Used by composed handlers: the source tool may no longer be in the catalog (retired, or replaced
    by a modified interface of the same name), but its behaviour is what the new interface must
    preserve. Validators are cached per tool object, not per name, for that reason.
    """
    entry = _VALIDATORS.get(id(tool))
    if entry is None or entry[0] is not tool:
        cls = jsonschema.validators.validator_for(tool.input_schema)
        entry = (tool, cls(tool.input_schema, format_checker=jsonschema.FormatChecker(["date", "email"])))
        _VALIDATORS[id(tool)] = entry
    err = jsonschema.exceptions.best_match(entry[1].iter_errors(args))
    if err is not None:
        path = "/".join(str(p) for p in err.absolute_path)
        raise ToolError(
            "invalid_arguments",
            f"{tool.name}: {f'argument {path!r}' if path else 'arguments'}: {err.message}",
        )
    return tool.handler(rt, dict(args))


# --- pending drafts for split interfaces ----------------------------------------------------------

_DRAFTS: weakref.WeakKeyDictionary[World, dict[str, dict[str, Any]]] = weakref.WeakKeyDictionary()


def draft_id(tool: str, args: dict[str, Any]) -> str:
    """The id `start_*` gives a draft: derived from the tool and its opening arguments, so plans are static."""
    body = json.dumps([tool, args], sort_keys=True, default=str)
    return "DRAFT-" + hashlib.sha256(body.encode()).hexdigest()[:10].upper()


def pending_drafts(world: World) -> dict[str, dict[str, Any]]:
    """The open drafts of one world (one session): draft id → {"tool", "args"}."""
    return _DRAFTS.setdefault(world, {})


# --- the catalog ----------------------------------------------------------------------------------


def _one_tool_impl(
    src: Impl,
    vid: str,
    new_name: str,
    kind: str,
    *,
    args: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    decode: Decode | None = None,
) -> Impl:
    """An implementation that calls the new tool `new_name` wherever `src` called its one tool, with
    `args` mapping the arguments and `decode` reading the new outputs (default: as `src` reads them)."""
    return Impl(
        vid,
        src.covers,
        (new_name,),
        kind,
        plan=lambda block: [(new_name, args(a) if args else a) for _, a in src.plan(block)],
        decode=decode or src.decode,
    )


@dataclass
class DomainCatalog:
    """The active tools and implementations of one domain in one version."""

    domain: str
    tools: dict[str, Tool]
    impls: dict[str, Impl]
    base_function: dict[str, str]
    """Base tool name → the base function it implements."""
    money_fields: frozenset[str] = frozenset()
    required: frozenset[str] | None = None
    """The base functions that must stay performable on their own: those the build's tasks use
    (None: every base function). A function no task uses may be retired with its last tool."""

    @classmethod
    def base(cls, world: World, base_function: dict[str, str] | None = None) -> DomainCatalog:
        """Version 1: one one-to-one implementation per tool of the compiled world.

        `base_function` maps the tools the tasks' gold paths call to their functions; those functions
        are the required ones.
        """
        fmap = dict(base_function or {})
        required = frozenset(fmap.values()) if base_function is not None else None
        tools = {t.name: t for t in world.tools}
        impls: dict[str, Impl] = {}
        for name in tools:
            fmap.setdefault(name, name)
            impls[name] = Impl(
                id=name,
                covers=(fmap[name],),
                tools=(name,),
                kind="base",
                plan=lambda block, _n=name: [(_n, dict(block[0].arguments))],
                decode=lambda results: list(results),
            )
        money = frozenset(
            f.name for t in world.domain.tables.values() for f in t.entity.fields if f.type == "money"
        )
        return cls(world.domain.name, tools, impls, fmap, money, required)

    def clone(self) -> DomainCatalog:
        return DomainCatalog(
            self.domain,
            dict(self.tools),
            dict(self.impls),
            self.base_function,
            self.money_fields,
            self.required,
        )

    def atomic_impl_of(self, tool: str) -> Impl | None:
        return next((i for i in self.impls.values() if i.atomic and i.tools[0] == tool), None)

    def single_function_impls(self) -> dict[str, list[Impl]]:
        out: dict[str, list[Impl]] = {}
        for impl in self.impls.values():
            if len(impl.covers) == 1:
                out.setdefault(impl.covers[0], []).append(impl)
        return out

    def unreachable(self) -> list[str]:
        """Required base functions no active implementation covers on its own (a version must have none)."""
        single = self.single_function_impls()
        needed = self.required if self.required is not None else set(self.base_function.values())
        return sorted(f for f in needed if f not in single)

    def add(self, impl: Impl, new_tools: Sequence[Tool]) -> None:
        """Activate a new implementation and its tools."""
        for t in new_tools:
            self.tools[t.name] = t
        self.impls[impl.id] = impl

    def retire_impl(self, impl_id: str) -> list[str]:
        """Deactivate an implementation and the tools only it used; returns the retired tool names."""
        impl = self.impls.pop(impl_id)
        used = {t for i in self.impls.values() for t in i.tools}
        gone = [t for t in impl.tools if t not in used]
        for t in gone:
            self.tools.pop(t, None)
        return gone

    def world(self, world: World) -> World:
        """`world` with this version's catalog installed (the SQLite schema is the same in every version)."""
        world.set_tools(self.tools.values())
        return world

    # --- transformations: each returns the new implementation and its new tools -----------------

    def rename_tool(self, src: Impl, new_name: str, vid: str) -> tuple[Impl, list[Tool]]:
        old = self.tools[src.tools[0]]
        tool = Tool(
            name=new_name,
            description=old.description,
            input_schema=old.input_schema,
            effect=old.effect,
            handler=lambda rt, args, _t=old: invoke(rt, _t, args),
            destructive=old.destructive,
            meta={**old.meta, "wraps": old.name, "transform": "rename_tool"},
        )
        impl = _one_tool_impl(src, vid, new_name, "rename_tool")
        return impl, [tool]

    def rename_param(
        self, src: Impl, old_param: str, new_param: str, new_name: str, vid: str
    ) -> tuple[Impl, list[Tool]]:
        old = self.tools[src.tools[0]]
        schema = copy.deepcopy(old.input_schema)
        props = schema.get("properties", {})
        if old_param not in props or new_param in props:
            raise ToolError(
                "not_applicable", f"{old.name} has no parameter {old_param!r} or has {new_param!r}"
            )
        schema["properties"] = {(new_param if k == old_param else k): v for k, v in props.items()}
        if "required" in schema:
            schema["required"] = [new_param if r == old_param else r for r in schema["required"]]

        def rename_args(args: dict[str, Any], frm: str, to: str) -> dict[str, Any]:
            return {(to if k == frm else k): v for k, v in args.items()}

        def handler(rt: Runtime, args: dict[str, Any], _t: Tool = old) -> Any:
            return invoke(rt, _t, rename_args(args, new_param, old_param))

        tool = Tool(
            name=new_name,
            description=old.description.replace(f" {old_param}", f" {new_param}"),
            input_schema=schema,
            effect=old.effect,
            handler=handler,
            destructive=old.destructive,
            meta={**old.meta, "wraps": old.name, "transform": "rename_param"},
        )
        impl = _one_tool_impl(
            src, vid, new_name, "rename_param", args=lambda a: rename_args(a, old_param, new_param)
        )
        return impl, [tool]

    def add_param(self, src: Impl, new_name: str, vid: str) -> tuple[Impl, list[Tool]]:
        """Reads gain `fields` (project the result's rows; default: all); writes gain `dry_run` (default false)."""
        old = self.tools[src.tools[0]]
        schema = copy.deepcopy(old.input_schema)
        props = schema.setdefault("properties", {})
        if old.effect == "read":
            param = "fields"
            if param in props:
                raise ToolError("not_applicable", f"{old.name} already has a parameter {param!r}")
            props[param] = {
                "type": "array",
                "items": {"type": "string"},
                "description": "Only return these fields of each row (default: all fields).",
            }

            def handler(rt: Runtime, args: dict[str, Any], _t: Tool = old) -> Any:
                keep = args.pop("fields", None)
                result = invoke(rt, _t, args)
                return _project(result, set(keep)) if keep else result

            note = " Optional `fields` limits the fields returned."
        else:
            param = "dry_run"
            if param in props:
                raise ToolError("not_applicable", f"{old.name} already has a parameter {param!r}")
            props[param] = {
                "type": "boolean",
                "default": False,
                "description": "Check and preview the change without making it (default false).",
            }

            def handler(rt: Runtime, args: dict[str, Any], _t: Tool = old) -> Any:
                dry = bool(args.pop("dry_run", False))
                if not dry:
                    return invoke(rt, _t, args)
                rt.conn.execute("SAVEPOINT ts_dry_run")
                try:
                    preview = invoke(rt, _t, args)
                finally:
                    rt.conn.execute("ROLLBACK TO ts_dry_run")
                    rt.conn.execute("RELEASE ts_dry_run")
                return {"dry_run": True, "would_return": preview}

            note = " With `dry_run` true it only previews the change."
        tool = Tool(
            name=new_name,
            description=old.description + note,
            input_schema=schema,
            effect=old.effect,
            handler=handler,
            destructive=old.destructive,
            meta={**old.meta, "wraps": old.name, "transform": "add_param", "param": param},
        )
        impl = _one_tool_impl(src, vid, new_name, "add_param")
        return impl, [tool]

    def format(self, src: Impl, codec_name: str, new_name: str, vid: str) -> tuple[Impl, list[Tool]]:
        old = self.tools[src.tools[0]]
        c: Codec = codec(codec_name, self.money_fields)
        tool = Tool(
            name=new_name,
            description=f"{old.description} Output format: {c.description}.",
            input_schema=old.input_schema,
            effect=old.effect,
            handler=lambda rt, args, _t=old: c.encode(invoke(rt, _t, args)),
            destructive=old.destructive,
            meta={**old.meta, "wraps": old.name, "transform": "format", "codec": codec_name},
        )
        impl = _one_tool_impl(
            src, vid, new_name, "format", decode=lambda results: src.decode([c.decode(r) for r in results])
        )
        return impl, [tool]

    def split(self, src: Impl, names: tuple[str, str, str], vid: str) -> tuple[Impl, list[Tool]]:
        """`names` = (start, set, commit): start opens a draft with the first arguments, set adds the rest, commit runs it."""
        old = self.tools[src.tools[0]]
        props: dict[str, Any] = old.input_schema.get("properties", {})
        required = list(old.input_schema.get("required", []))
        optional = [p for p in props if p not in required]
        if optional:
            first, rest = required, optional
        else:
            half = (len(required) + 1) // 2
            first, rest = required[:half], required[half:]
        start_name, set_name, commit_name = names
        draft_schema = {"type": "string", "description": "The draft id start_* returned."}

        def start(rt: Runtime, args: dict[str, Any]) -> Any:
            did = draft_id(start_name, args)
            pending_drafts(rt.world)[did] = {"tool": old.name, "args": dict(args)}
            return {"draft_id": did, "status": "open", "next": [set_name, commit_name]}

        def set_(rt: Runtime, args: dict[str, Any]) -> Any:
            did = args.pop("draft_id")
            draft = pending_drafts(rt.world).get(did)
            if draft is None:
                raise ToolError("not_found", f"no open draft {did!r}; call {start_name} first")
            draft["args"].update(args)
            return {"draft_id": did, "status": "open", "set": sorted(args)}

        def commit(rt: Runtime, args: dict[str, Any]) -> Any:
            did = args["draft_id"]
            drafts = pending_drafts(rt.world)
            draft = drafts.get(did)
            if draft is None:
                raise ToolError("not_found", f"no open draft {did!r}; call {start_name} first")
            result = invoke(rt, old, draft["args"])
            drafts.pop(did, None)
            return result

        def sub(names: Sequence[str], req: Sequence[str]) -> dict[str, Any]:
            return {
                "type": "object",
                "properties": {n: props[n] for n in names},
                "required": [n for n in req if n in names],
                "additionalProperties": False,
            }

        set_schema = sub(rest, [])
        set_schema["properties"] = {"draft_id": draft_schema, **set_schema["properties"]}
        set_schema["required"] = ["draft_id", *[r for r in required if r in rest]]
        base_meta = {**old.meta, "wraps": old.name, "transform": "split", "group": vid}
        tools = [
            Tool(
                start_name,
                f"Step 1 of 3 to {_lower_first(old.description)} Opens a draft with: "
                f"{', '.join(first) or 'nothing'}; returns its draft_id.",
                sub(first, required),
                "write",
                start,
                meta={**base_meta, "role": "start"},
            ),
            Tool(
                set_name,
                f"Step 2 of 3 ({start_name} first): set {', '.join(rest) or 'nothing more'} on the draft.",
                set_schema,
                "write",
                set_,
                meta={**base_meta, "role": "set"},
            ),
            Tool(
                commit_name,
                f"Step 3 of 3: carry out the draft opened by {start_name}; returns what {old.name} returned.",
                {
                    "type": "object",
                    "properties": {"draft_id": draft_schema},
                    "required": ["draft_id"],
                    "additionalProperties": False,
                },
                old.effect if old.effect == "write" else "write",
                commit,
                destructive=old.destructive,
                meta={**base_meta, "role": "commit"},
            ),
        ]

        def plan(block: Sequence[GoldCall], _s: Impl = src) -> list[PlannedCall]:
            ((_, a),) = _s.plan(block)
            a1 = {k: v for k, v in a.items() if k in first}
            a2 = {k: v for k, v in a.items() if k not in first}
            did = draft_id(start_name, a1)
            return [(start_name, a1), (set_name, {"draft_id": did, **a2}), (commit_name, {"draft_id": did})]

        impl = Impl(
            vid,
            src.covers,
            (start_name, set_name, commit_name),
            "split",
            plan=plan,
            decode=lambda results, _s=src: _s.decode([results[-1]]),
        )
        return impl, tools

    def merge(self, parts: Sequence[Impl], new_name: str, vid: str) -> tuple[Impl, list[Tool]]:
        """One tool taking `step1..stepk` argument objects, running the parts in order in one transaction."""
        olds = [self.tools[p.tools[0]] for p in parts]
        steps = [f"step{k + 1}" for k in range(len(parts))]
        schema = {
            "type": "object",
            "properties": {
                s: {
                    **copy.deepcopy(t.input_schema),
                    "description": f"Arguments for step {k + 1}: {t.description}",
                }
                for k, (s, t) in enumerate(zip(steps, olds, strict=True))
            },
            "required": steps,
            "additionalProperties": False,
        }

        def handler(rt: Runtime, args: dict[str, Any]) -> Any:
            return {
                "steps": [
                    {"step": k + 1, "result": invoke(rt, t, args[s])}
                    for k, (s, t) in enumerate(zip(steps, olds, strict=True))
                ]
            }

        effect = "write" if any(t.effect == "write" for t in olds) else "read"
        desc = "Does in one call: " + " Then: ".join(
            f"({k + 1}) {_lower_first(t.description)}" for k, t in enumerate(olds)
        )
        tool = Tool(
            new_name,
            desc,
            schema,
            effect,
            handler,
            destructive=any(t.destructive for t in olds),
            meta={"kind": "merged", "transform": "merge", "wraps": [t.name for t in olds]},
        )
        widths = [len(p.covers) for p in parts]

        def plan(block: Sequence[GoldCall]) -> list[PlannedCall]:
            args: dict[str, Any] = {}
            at = 0
            for s, p, w in zip(steps, parts, widths, strict=True):
                ((_, a),) = p.plan(block[at : at + w])
                args[s] = a
                at += w
            return [(new_name, args)]

        def decode(results: list[Any]) -> list[Any]:
            (merged,) = results
            out: list[Any] = []
            for p, step in zip(parts, merged["steps"], strict=True):
                out += p.decode([step["result"]])
            return out

        covers = tuple(f for p in parts for f in p.covers)
        return Impl(vid, covers, (new_name,), "merge", plan, decode), [tool]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text else text


def _project(result: Any, keep: set[str]) -> Any:
    """Keep only `keep` fields of each row in a result (a row, or a page of `items`)."""
    if isinstance(result, dict) and isinstance(result.get("items"), list):
        return {**result, "items": [_project(r, keep) for r in result["items"]]}
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if k in keep}
    return result
