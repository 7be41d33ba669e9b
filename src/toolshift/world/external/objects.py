"""Worlds whose state lives in another benchmark's Python objects (BFCL's API classes, AgentDojo's environments).

An `ObjectWorld` has the surface the MCP server and the agent runner use on a SQLite `World` — a tool
catalog, `call`, `snapshot` / `restore` / `diff` / `changes_since`, `fork`, `close` — over an
`ObjectState`: the benchmark's own objects, which its own code changes.

The state a benchmark's checker compares is read as a JSON *view* (`ObjectState.view`: component →
attribute → JSON value) and flattened to leaves, so a diff is a list of the same `RowChange`s a SQLite
world reports: `table` = the component (a BFCL class, an AgentDojo environment field), `key` = its
attribute, `field` = the JSON pointer of a leaf inside the attribute's value (`""` when the attribute is
itself a leaf: a scalar or an empty container). Two views are equal exactly when they have no diff, and
`covers` (Δgold ⊆ Δagent) asks that every leaf the reference changed, the agent changed to the same value.
Snapshots keep a deep copy of the objects too, so `restore` and `fork` bring back private state (a BFCL
file system's current directory) that views leave out.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from enum import Enum
from typing import Any, Protocol

import jsonschema

from toolshift.errors import BadInputError
from toolshift.models import RowChange
from toolshift.world.state.tools import CallResult, Tool, argument_problem
from toolshift.world.toolerror import ToolError, shorten

View = dict[str, dict[str, Any]]
"""component → attribute → JSON value."""

MAX_VIEW_DEPTH = 64


class ObjectState(Protocol):
    """A benchmark's live objects behind a world."""

    def clone(self) -> ObjectState:
        """An independent deep copy (forks, snapshots)."""
        ...

    def view(self) -> View:
        """The state the benchmark's own checker compares, as JSON values."""
        ...


@dataclass(frozen=True)
class ExternalSpec:
    """What servers and runners read from a world's domain: names and the text shown to agents."""

    name: str
    title: str
    description: str
    policy: str = ""


@dataclass
class ExternalDomain:
    """A world's definition: its tools (handlers take `(state, args)`) and a maker of its initial state.

    `schema_checked` False leaves argument types, required and unknown arguments to the benchmark's own
    code, as its harness does (BFCL calls the method as written; AgentDojo validates with pydantic, which
    coerces "10" to 10.0): a stricter check here would refuse calls the benchmark runs, and its checker,
    which re-executes the agent's calls, would then judge calls the agent was told had failed. Sizes,
    depths and unstorable values (`argument_problem`) are checked either way.
    """

    spec: ExternalSpec
    tools: list[Tool]
    make_state: Callable[[], ObjectState]
    schema_checked: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    _initial: ObjectState | None = None
    _initial_view: View | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def _loaded(self) -> ObjectState:
        if self._initial is None:
            self._initial = self.make_state()
        return self._initial

    def fresh_state(self) -> ObjectState:
        """A copy of the initial state (made once, then cloned: loading a scenario can be slow)."""
        with self.lock:
            return self._loaded().clone()

    def initial_snapshot(self) -> ObjectSnapshot:
        """A snapshot of the initial state, shared by every fresh world of the domain (D151): its state is
        the domain's own initial objects, which nothing changes (`restore` clones a snapshot's state)."""
        with self.lock:
            initial = self._loaded()
            if self._initial_view is None:
                self._initial_view = initial.view()
            return ObjectSnapshot(self.name, self._initial_view, initial)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class ObjectSnapshot:
    domain: str
    view: View
    state: ObjectState
    taken_at: str = field(default_factory=_now)


def jsonable(value: Any, _ancestors: tuple[int, ...] = ()) -> Any:
    """A JSON value for what a benchmark keeps in its objects.

    Objects become their public attributes (a back-reference to an enclosing object, such as a directory's
    parent, is left out), tuples and sets lists, dates ISO strings, Decimals and enums their values.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Enum):
        return jsonable(value.value, _ancestors)
    if len(_ancestors) > MAX_VIEW_DEPTH:
        return "<nested too deeply>"
    inner = (*_ancestors, id(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v, inner) for k, v in value.items() if id(v) not in inner}
    if isinstance(value, list | tuple):
        return [jsonable(v, inner) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v, inner) for v in value), key=repr)
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model
        return jsonable(dump(), inner)
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return {
            k: jsonable(v, inner)
            for k, v in attributes.items()
            if not k.startswith("_") and id(v) not in inner
        }
    return repr(value)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def leaves(value: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """(JSON pointer, leaf) for every scalar and empty container inside `value`."""
    stack: list[tuple[str, Any]] = [(pointer, value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, dict) and v:
            stack.extend((f"{where}/{_escape(str(k))}", v[k]) for k in reversed(list(v)))
        elif isinstance(v, list) and v:
            stack.extend((f"{where}/{i}", v[i]) for i in range(len(v) - 1, -1, -1))
        else:
            yield where, v


def view_changes(before: View, after: View) -> list[RowChange]:
    """The leaf-level changes from one view to another, sorted by (table, key, field)."""
    out: list[RowChange] = []
    for table in sorted(before.keys() | after.keys()):
        a, b = before.get(table, {}), after.get(table, {})
        for key in sorted(a.keys() | b.keys()):
            if key in a and key in b and a[key] == b[key] and _same_types(a[key], b[key]):
                continue
            old = dict(leaves(a[key])) if key in a else {}
            new = dict(leaves(b[key])) if key in b else {}
            for pointer in sorted(old.keys() | new.keys()):
                if pointer not in old:
                    out.append(
                        RowChange(table=table, key=key, field=pointer, op="insert", after=new[pointer])
                    )
                elif pointer not in new:
                    out.append(
                        RowChange(table=table, key=key, field=pointer, op="delete", before=old[pointer])
                    )
                elif old[pointer] != new[pointer] or type(old[pointer]) is not type(new[pointer]):
                    out.append(
                        RowChange(
                            table=table,
                            key=key,
                            field=pointer,
                            op="update",
                            before=old[pointer],
                            after=new[pointer],
                        )
                    )
    return out


def _same_types(a: Any, b: Any) -> bool:
    """`1 == 1.0 == True` in Python: equal views must also agree on scalar types, leaf by leaf."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True


_FORMATS = jsonschema.FormatChecker(["date", "email"])


class ObjectWorld:
    """A live world over a benchmark's objects: validated calls, each reporting the leaf changes it made.

    A call's changes are the diff of the views before and after it. A call that raises keeps whatever it
    changed before raising (the benchmarks' own harnesses do not roll back either) and reports it.

    The view after a call is kept as the view before the next (D151): only calls change the objects while
    the world holds them. Reading `state` from outside drops what is kept (the reader may change the
    objects), and so does setting it; a world fresh from its domain snapshots as the domain's shared
    initial snapshot until then.
    """

    def __init__(self, domain: ExternalDomain, *, state: ObjectState | None = None) -> None:
        self.domain = domain
        self._state = state if state is not None else domain.fresh_state()
        self._pristine = state is None
        """The state is a fresh copy of the domain's initial one that nothing has touched."""
        self._view: View | None = None
        """The view of `_state` as it is now, when known."""
        self._catalog: dict[str, Tool] = {t.name: t for t in domain.tools}
        self._validators: dict[str, Any] = {}
        self._lock = threading.RLock()

    @property
    def state(self) -> ObjectState:
        with self._lock:
            self._pristine, self._view = False, None
            return self._state

    @state.setter
    def state(self, value: ObjectState) -> None:
        with self._lock:
            self._state, self._pristine, self._view = value, False, None

    def _current_view(self) -> View:
        if self._view is None:
            self._view = self._state.view()
        return self._view

    def _changes(self, before: View) -> list[RowChange]:
        """The changes since `before`, once the state has changed: the new view is kept for the next call."""
        self._pristine, self._view = False, self._state.view()
        return view_changes(before, self._view)

    @property
    def name(self) -> str:
        return self.domain.name

    @property
    def policy(self) -> str:
        return self.domain.spec.policy

    @property
    def tools(self) -> list[Tool]:
        return list(self._catalog.values())

    def tool(self, name: str) -> Tool:
        try:
            return self._catalog[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._catalog), n=3) if len(name) <= 128 else []
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ToolError("unknown_tool", f"no tool named {shorten(name, 130)!r}{hint}") from None

    def validate(self, tool: Tool, args: dict[str, Any]) -> None:
        problem = argument_problem(args)
        if problem is not None:
            path, reason = problem
            raise ToolError("invalid_arguments", f"{tool.name}: argument {path!r}: {reason}")
        if not self.domain.schema_checked:
            return
        validator = self._validators.get(tool.name)
        if validator is None:
            cls = jsonschema.validators.validator_for(tool.input_schema)
            validator = self._validators[tool.name] = cls(tool.input_schema, format_checker=_FORMATS)
        err = jsonschema.exceptions.best_match(validator.iter_errors(args))
        if err is not None:
            path = "/".join(str(p) for p in err.absolute_path)
            where = f"argument {path!r}" if path and err.validator not in ("required",) else "arguments"
            raise ToolError("invalid_arguments", f"{tool.name}: {where}: {err.message}")

    def call(self, name: str, args: dict[str, Any] | None = None) -> CallResult:
        """Validate and run one call; never raises for the benchmark code's own failures."""
        args = {} if args is None else args
        with self._lock:
            try:
                if not isinstance(args, dict):
                    raise ToolError("invalid_arguments", f"{name}: arguments must be a JSON object")
                tool = self.tool(name)
                self.validate(tool, args)
            except ToolError as exc:
                return CallResult(name, False, error=exc.as_dict())
            before = self._current_view()
            try:
                # A deep copy: benchmark code keeps argument lists in its state and changes them later.
                result = tool.handler(self._state, copy.deepcopy(args))  # type: ignore[arg-type]
            except ToolError as exc:
                return CallResult(name, False, error=exc.as_dict(), changes=self._changes(before))
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # the benchmark's code failed: the caller sees it as the error
                error = {
                    "code": "internal_error",
                    "message": shorten(f"Error during execution: {type(exc).__name__}: {exc}"),
                }
                return CallResult(name, False, error=error, changes=self._changes(before))
            return CallResult(name, True, jsonable(result), changes=self._changes(before))

    def snapshot(self) -> ObjectSnapshot:
        with self._lock:
            if self._pristine:
                return dataclasses.replace(self.domain.initial_snapshot(), taken_at=_now())
            return ObjectSnapshot(self.name, self._current_view(), self._state.clone())

    def restore(self, snapshot: ObjectSnapshot) -> None:
        if snapshot.domain != self.name:
            raise BadInputError(f"snapshot of {snapshot.domain!r} cannot restore world {self.name!r}")
        with self._lock:
            self._state, self._pristine, self._view = snapshot.state.clone(), False, snapshot.view

    def diff(
        self, before: ObjectSnapshot | ObjectWorld, after: ObjectSnapshot | ObjectWorld | None = None
    ) -> list[RowChange]:
        def view_of(x: ObjectSnapshot | ObjectWorld) -> View:
            if isinstance(x, ObjectSnapshot):
                return x.view
            with x._lock:
                return x._current_view()

        with self._lock:
            return view_changes(view_of(before), view_of(after or self))

    def changes_since(self, snapshot: ObjectSnapshot) -> list[RowChange]:
        return self.diff(snapshot, self)

    def fork(self) -> ObjectWorld:
        with self._lock:
            other = ObjectWorld(self.domain, state=self._state.clone())
            other._view = self._view
        other._catalog = dict(self._catalog)
        return other

    def close(self) -> None:
        """Nothing to release but the objects themselves."""
