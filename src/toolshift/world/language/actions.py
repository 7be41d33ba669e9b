"""Custom actions at load: their `check` / `code` compiled by the safe interpreter, or their `impl` found among
the Python implementations that installed packages register.

A spec never carries code that Python runs. An action's logic is either `code` (the interpreter's
subset, `toolshift.world.language.interpreter`) or `impl: NAME`, a name an installed package registers:

- by entry point: a distribution declares `[project.entry-points."toolshift.actions"]`
  `NAME = "package.module:function"`, found with `importlib.metadata` and imported on first use;
- in process: `register_action(NAME)(function)`, for code already running (a package's own
  import, a test).

An implementation is `function(runtime, args) -> result` (D57): it runs inside the call's
transaction after the schema, `ref` and precondition checks, uses the runtime's helpers, and raises
`ToolError` (or calls `runtime.fail`) for a domain error. An unknown name is refused at load.
"""

from __future__ import annotations

import functools
import re
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from toolshift.errors import BadInputError
from toolshift.world.language.interpreter import (
    BUILTINS,
    DATA_NAMES,
    HELPERS,
    Program,
    Refusal,
    compile_check,
    compile_code,
)

if TYPE_CHECKING:
    from toolshift.world.language.spec import ActionSpec, DomainSpec, Precondition

ENTRY_POINT_GROUP = "toolshift.actions"
ActionImpl = Callable[[Any, dict[str, Any]], Any]
"""A registered Python action: `(runtime, args) -> result`, the runtime being the world's
`toolshift.world.state.runtime.Runtime` (the language layer names no runtime type: it sits below it)."""
IMPL_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
"""Dotted snake_case, e.g. `tau2.airline.book_reservation`."""

_registered: dict[str, ActionImpl] = {}
_lock = threading.Lock()


def register_action(name: str, function: ActionImpl | None = None) -> Any:
    """Register `function` as the implementation named `name` (usable as a decorator)."""
    if not IMPL_NAME.match(name):
        raise ValueError(f"action implementation name {name!r} is not dotted snake_case")

    def add(fn: ActionImpl) -> ActionImpl:
        if not callable(fn):
            raise TypeError(f"action implementation {name!r} is not callable")
        with _lock:
            _registered[name] = fn
        return fn

    return add(function) if function is not None else add


def unregister_action(name: str) -> None:
    with _lock:
        _registered.pop(name, None)


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def registered_actions() -> list[str]:
    """Every implementation name: registered in process or declared by an installed distribution."""
    with _lock:
        names = set(_registered)
    return sorted(names | set(_entry_points()))


def find_action(name: str) -> ActionImpl | None:
    """The implementation registered under `name`, importing its entry point on first use; None if unknown."""
    with _lock:
        if name in _registered:
            return _registered[name]
    ep = _entry_points().get(name)
    if ep is None:
        return None
    fn = ep.load()
    if not callable(fn):
        raise TypeError(f"entry point {ep.value} is not callable")
    with _lock:
        return _registered.setdefault(name, fn)


@dataclass(frozen=True)
class CompiledAction:
    """What an action runs: its preconditions, then its body (interpreted) or its implementation (Python)."""

    checks: list[tuple[Program, Precondition]]
    body: Program | None
    impl: ActionImpl | None
    names: frozenset[str]
    """The data names its programs see (parameters, `args`, `today`, `now`)."""


@functools.lru_cache(maxsize=4096)
def _compiled(kind: str, source: str, names: frozenset[str], read_only: bool) -> Program:
    make = compile_check if kind == "check" else compile_code
    return make(source, names, read_only=read_only)


def compile_action(act: ActionSpec, index: int, source: str) -> CompiledAction:
    """Compile (or find) an action's logic; anything outside the subset is a `BadInputError` naming the field."""
    where = f"actions[{index}]"
    params = [p.name for p in act.params]
    for j, name in enumerate(params):
        if name in HELPERS or name in BUILTINS or name in DATA_NAMES:
            raise BadInputError(
                f"action {act.name!r}: parameter {name!r} would hide a name action code uses",
                source=source,
                field=f"{where}.params[{j}].name",
            )
    names = frozenset(params)
    read_only = act.effect == "read"

    def compiled(kind: str, text: str, field: str) -> Program:
        try:
            return _compiled(kind, text, names, read_only)
        except Refusal as exc:
            at = f" (line {exc.line})" if exc.line is not None else ""
            raise BadInputError(f"action {act.name!r}: {exc}{at}", source=source, field=field) from None

    checks = []
    for k, pre in enumerate(act.preconditions):
        field = f"{where}.preconditions[{k}]"
        checks.append((compiled("check", pre.check, f"{field}.check"), pre))
        _check_message(act, pre.message, names, source, f"{field}.message")
    if act.impl is None:
        return CompiledAction(checks, compiled("code", act.code, f"{where}.code"), None, names)
    if not IMPL_NAME.match(act.impl):
        raise BadInputError(
            f"action {act.name!r}: {act.impl!r} is not an implementation name (dotted snake_case, "
            "e.g. tau2.airline.book_reservation)",
            source=source,
            field=f"{where}.impl",
        )
    try:
        impl = find_action(act.impl)
    except Exception as exc:
        raise BadInputError(
            f"action {act.name!r}: the implementation {act.impl!r} failed to load: {type(exc).__name__}: {exc}",
            source=source,
            field=f"{where}.impl",
        ) from None
    if impl is None:
        known = registered_actions()
        have = f"registered: {', '.join(known)}" if known else "none are registered"
        raise BadInputError(
            f"action {act.name!r}: no installed package registers the implementation {act.impl!r} ({have})",
            source=source,
            field=f"{where}.impl",
        )
    return CompiledAction(checks, None, impl, names)


def _check_message(act: ActionSpec, message: str, names: frozenset[str], source: str, field: str) -> None:
    """A precondition's message may name parameters, `today` and `now` as `{name}`, nothing more."""

    def bad(why: str) -> BadInputError:
        return BadInputError(f"action {act.name!r}: {why}", source=source, field=field)

    try:
        parts = list(string.Formatter().parse(message))
    except ValueError as exc:
        raise bad(f"bad message template: {exc}") from None
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if spec or conversion or not name.isidentifier():
            raise bad(f"a message field must be a plain {{name}}, not {{{name}...}}")
        if name not in names and name not in ("today", "now"):
            raise bad(f"the message names {name!r}, which is not a parameter, today or now")


def check_actions(spec: DomainSpec, source: str) -> None:
    """Refuse, at load, any action whose logic the interpreter or the registry cannot give."""
    for i, act in enumerate(spec.actions):
        compile_action(act, i, source)
