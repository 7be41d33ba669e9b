"""Compile expressions of the action language into closures: names and scopes, operators, comprehensions, calls.

`ExpressionCompiler` is the half of `toolshift.world.language.interpreter` that both a precondition
`check` and an action `code` use; the statements are in the interpreter. Each expression becomes
a function of a `Frame`; whatever it may not do is a `Refusal` raised while compiling (D55).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from typing import Any

from toolshift.world.language import bounds
from toolshift.world.language.bounds import ATOMS, Budget, cost
from toolshift.world.language.vocabulary import BINARY, BUILTINS, COMPARISONS, KEY_TAKERS, METHODS, UNARY

HELPERS: dict[str, str] = {
    "get": "read",
    "require": "read",
    "find": "rows",
    "count": "read",
    "insert": "write",
    "update": "write",
    "delete": "write",
    "fail": "read",
    "call": "call",
    "add_days": "read",
    "days_between": "read",
}
"""The runtime's helpers (`toolshift.world.state.runtime.Runtime.helpers`) and what each does."""
WRITE_HELPERS = frozenset(n for n, kind in HELPERS.items() if kind == "write")
DATA_NAMES = ("args", "today", "now")

Ev = Callable[["Frame"], Any]


class Refusal(Exception):
    """Source outside the subset; `line` is the 1-based line in the block."""

    def __init__(self, message: str, node: ast.AST | None = None, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line if line is not None else getattr(node, "lineno", None)


class Frame:
    """One scope of a running program: its variables, the enclosing scope, the budget and the helpers."""

    __slots__ = ("budget", "helpers", "up", "value", "vars")

    def __init__(self, names: dict[str, Any], up: Frame | None, budget: Budget, helpers: dict[str, Any]):
        self.vars, self.up, self.budget, self.helpers = names, up, budget, helpers
        self.value: Any = None


def steps_of(node: ast.AST) -> int:
    """What evaluating `node` once charges: its syntax nodes (operators and contexts aside)."""
    skip = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
    return sum(1 for n in ast.walk(node) if not isinstance(n, skip))


_FORMAT_SPEC = re.compile(r"(?:[^{}]?[<>=^])?[-+ ]?z?#?0?(\d+)?[,_]?(?:\.(\d+))?[bcdeEfFgGnosxX%]?\Z")
_MAX_WIDTH = 100
_SCALAR_CONSTANTS = (str, int, float, bool, type(None))
_CONVERSIONS = {-1: None, 115: "s", 114: "r", 97: "a"}


def _expensive(x: Any) -> bool:
    t = type(x)
    return t not in ATOMS and (t is not str or len(x) > 4096)


def _literal_int_ok(value: Any) -> bool:
    return type(value) is not int or value.bit_length() <= bounds.MAX_INT_BITS


class ExpressionCompiler:
    """Compiles one block's expressions: a stack of scopes (the block's own, then one per comprehension or lambda)."""

    def __init__(self, names: Iterable[str], read_only: bool) -> None:
        self.outer = frozenset((*names, *DATA_NAMES))
        self.scopes: list[set[str]] = [set(self.outer)]
        self.assigned: set[str] = set()
        self.read_only = read_only
        self.loops = 0
        self.calls: set[str] = set()

    def _target_names(self, node: ast.expr) -> set[str]:
        if isinstance(node, ast.Name):
            self._check_binding(node.id, node)
            return {node.id}
        if isinstance(node, ast.Tuple | ast.List):
            return set().union(*(self._target_names(e) for e in node.elts))
        raise Refusal("only names and tuples of names can be assigned to", node)

    def _check_binding(self, name: str, node: ast.AST) -> None:
        if name.startswith("__"):
            raise Refusal(f"the name {name!r} is not allowed (no dunder names)", node)
        if name in HELPERS or name in BUILTINS:
            raise Refusal(f"{name!r} names a helper or builtin and cannot be assigned", node)

    def setter(self, node: ast.expr) -> Callable[[Frame, Any], None]:
        """Binds a value to a target in the innermost scope (names and tuples of names only)."""
        if isinstance(node, ast.Name):
            self._check_binding(node.id, node)
            name = node.id

            def bind(f: Frame, value: Any) -> None:
                f.vars[name] = value

            return bind
        if not isinstance(node, ast.Tuple | ast.List):
            raise Refusal("only names and tuples of names can be assigned to", node)
        parts = [self.setter(e) for e in node.elts]
        n = len(parts)

        def unpack(f: Frame, value: Any) -> None:
            values = bounds.items(f.budget, value)
            if len(values) != n:
                if len(values) > n:
                    raise ValueError(f"too many values to unpack (expected {n})")
                raise ValueError(f"not enough values to unpack (expected {n}, got {len(values)})")
            for part, v in zip(parts, values, strict=True):
                part(f, v)

        return unpack

    # --- expressions ----------------------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Ev:
        method = getattr(self, f"_e_{type(node).__name__}", None)
        if method is None:
            raise Refusal(f"{_describe(node)} is not allowed in action code", node)
        return method(node)

    def _e_Constant(self, node: ast.Constant) -> Ev:
        value = node.value
        if not isinstance(value, _SCALAR_CONSTANTS) or not _literal_int_ok(value):
            raise Refusal(f"the constant {type(value).__name__} is not allowed in action code", node)
        return lambda f: value

    def _e_Name(self, node: ast.Name) -> Ev:
        return self._load(node.id, node)

    def _load(self, name: str, node: ast.AST) -> Ev:
        if name.startswith("__"):
            raise Refusal(f"the name {name!r} is not allowed (no dunder names)", node)
        hops = next((i for i, scope in enumerate(reversed(self.scopes)) if name in scope), None)
        if hops is None:
            if name in HELPERS or name in BUILTINS:
                raise Refusal(f"{name} can only be called, not used as a value", node)
            raise Refusal(
                f"unknown name {name!r} (action code sees args, its parameters, its own variables, "
                f"today, now, the helpers {', '.join(HELPERS)} and the builtins {', '.join(BUILTINS)})",
                node,
            )
        local = hops == len(self.scopes) - 1 and name in self.assigned

        def missing() -> Exception:
            if local:
                return UnboundLocalError(
                    f"cannot access local variable {name!r} where it is not associated with a value"
                )
            return NameError(f"name {name!r} is not defined")

        if hops == 0:

            def load(f: Frame) -> Any:
                try:
                    return f.vars[name]
                except KeyError:
                    raise missing() from None

            return load

        if hops == 1:

            def load_up(f: Frame) -> Any:
                try:
                    return f.up.vars[name]  # type: ignore[union-attr]
                except KeyError:
                    raise missing() from None

            return load_up

        def load_outer(f: Frame) -> Any:
            frame: Any = f
            for _ in range(hops):
                frame = frame.up
            try:
                return frame.vars[name]
            except KeyError:
                raise missing() from None

        return load_outer

    def _binop(self, op: ast.operator, node: ast.AST) -> Callable[[Budget, Any, Any], Any]:
        impl = BINARY.get(type(op))
        if impl is None:
            raise Refusal(f"the operator {type(op).__name__} is not allowed in action code", node)
        return impl

    def _e_BinOp(self, node: ast.BinOp) -> Ev:
        op, left, right = self._binop(node.op, node), self.expr(node.left), self.expr(node.right)
        return lambda f: op(f.budget, left(f), right(f))

    def _e_UnaryOp(self, node: ast.UnaryOp) -> Ev:
        op, operand = UNARY[type(node.op)], self.expr(node.operand)
        return lambda f: op(operand(f))

    def _e_BoolOp(self, node: ast.BoolOp) -> Ev:
        values = [self.expr(v) for v in node.values]
        if isinstance(node.op, ast.And):

            def both(f: Frame) -> Any:
                for v in values:
                    result = v(f)
                    if not result:
                        return result
                return result

            return both

        def either(f: Frame) -> Any:
            for v in values:
                result = v(f)
                if result:
                    return result
            return result

        return either

    def _e_IfExp(self, node: ast.IfExp) -> Ev:
        test, body, orelse = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        return lambda f: body(f) if test(f) else orelse(f)

    def _e_Compare(self, node: ast.Compare) -> Ev:
        ops = [COMPARISONS[type(o)] for o in node.ops]
        first, rest = self.expr(node.left), [self.expr(c) for c in node.comparators]
        if len(ops) == 1:
            op, right = ops[0], rest[0]
            if isinstance(node.ops[0], ast.Is | ast.IsNot):
                return lambda f: op(first(f), right(f))
            if _cheap_constant(node.comparators[0]):

                def compare_constant(f: Frame) -> Any:
                    x = first(f)
                    t = type(x)
                    if t not in ATOMS and (t is not str or len(x) > 4096):
                        cost(f.budget, x)
                    return op(x, right(f))

                return compare_constant

            def compare(f: Frame) -> Any:
                x, y = first(f), right(f)
                tx, ty = type(x), type(y)
                if (tx not in ATOMS and (tx is not str or len(x) > 4096)) or (
                    ty not in ATOMS and (ty is not str or len(y) > 4096)
                ):
                    cost(f.budget, x)
                    cost(f.budget, y)
                return op(x, y)

            return compare
        pairs = list(zip(ops, rest, strict=True))

        def chain(f: Frame) -> Any:
            x = first(f)
            for op, right in pairs:
                y = right(f)
                tx, ty = type(x), type(y)
                if (tx not in ATOMS and (tx is not str or len(x) > 4096)) or (
                    ty not in ATOMS and (ty is not str or len(y) > 4096)
                ):
                    cost(f.budget, x)
                    cost(f.budget, y)
                result = op(x, y)
                if not result:
                    return result
                x = y
            return result

        return chain

    def _e_Subscript(self, node: ast.Subscript) -> Ev:
        value = self.expr(node.value)
        if isinstance(node.slice, ast.Slice):
            parts = [
                self.expr(p) if p is not None else None
                for p in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            lo, hi, step = (p or (lambda f: None) for p in parts)
            return lambda f: bounds.sliced(f.budget, value(f), slice(lo(f), hi(f), step(f)))
        index = self.expr(node.slice)
        if isinstance(node.slice, ast.Constant) and _cheap_constant(node.slice):
            key = node.slice.value
            return lambda f: value(f)[key]

        def subscript(f: Frame) -> Any:
            v, k = value(f), index(f)
            if _expensive(k):
                cost(f.budget, k)
            return v[k]

        return subscript

    def _elements(self, elts: list[ast.expr]) -> list[Ev]:
        for e in elts:
            if isinstance(e, ast.Starred):
                raise Refusal("* unpacking is not allowed in action code", e)
        return [self.expr(e) for e in elts]

    def _e_List(self, node: ast.List) -> Ev:
        elts = self._elements(node.elts)
        return lambda f: [e(f) for e in elts]

    def _e_Tuple(self, node: ast.Tuple) -> Ev:
        elts = self._elements(node.elts)
        if _cheap_constant(node):
            folded = tuple(e.value for e in node.elts)  # type: ignore[attr-defined]
            return lambda f: folded
        return lambda f: tuple([e(f) for e in elts])

    def _e_Set(self, node: ast.Set) -> Ev:
        elts = self._elements(node.elts)
        return lambda f: _hashed(f.budget, set(), (e(f) for e in elts))

    def _e_Dict(self, node: ast.Dict) -> Ev:
        if any(k is None for k in node.keys):
            raise Refusal("** unpacking is not allowed in a dict of action code", node)
        pairs = [(self.expr(k), self.expr(v)) for k, v in zip(node.keys, node.values, strict=True)]  # type: ignore[arg-type]

        def make(f: Frame) -> dict[Any, Any]:
            out = {}
            for k, v in pairs:
                key = k(f)
                if _expensive(key):
                    cost(f.budget, key)
                out[key] = v(f)
            return out

        return make

    def _e_JoinedStr(self, node: ast.JoinedStr) -> Ev:
        parts: list[Ev] = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                parts.append(self._e_FormattedValue(v))
            else:
                parts.append(self.expr(v))
        return lambda f: bounds.join_text(f.budget, [p(f) for p in parts])

    def _e_FormattedValue(self, node: ast.FormattedValue) -> Ev:
        value, conversion, spec = self.expr(node.value), _CONVERSIONS[node.conversion], ""
        if node.format_spec is not None:
            pieces = node.format_spec.values if isinstance(node.format_spec, ast.JoinedStr) else []
            if not all(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in pieces):
                raise Refusal("an f-string format spec must be a constant", node)
            spec = "".join(p.value for p in pieces)  # type: ignore[attr-defined]
            match = _FORMAT_SPEC.match(spec)
            if match is None or any(int(g) > _MAX_WIDTH for g in match.groups() if g):
                raise Refusal(
                    f"the format spec {spec!r} is not allowed (width and precision up to {_MAX_WIDTH})", node
                )
        return lambda f: bounds.to_text(f.budget, value(f), conversion, spec)

    # --- comprehensions ---------------------------------------------------------------------------

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, elts: list[ast.expr]
    ):
        gens = node.generators
        if any(g.is_async for g in gens):
            raise Refusal("async comprehensions are not allowed", node)
        first = self.expr(gens[0].iter)
        scope: set[str] = set()
        for g in gens:
            scope |= self._target_names(g.target)
        self.scopes.append(scope)
        setters = [self.setter(g.target) for g in gens]
        iters = [first] + [self.expr(g.iter) for g in gens[1:]]
        conds = [[self.expr(c) for c in g.ifs] for g in gens]
        outs = [self.expr(e) for e in elts]
        self.scopes.pop()
        steps = 1 + sum(steps_of(e) for e in elts) + sum(steps_of(c) for g in gens for c in g.ifs)
        last = len(gens) - 1
        if len(gens) == 1 and isinstance(gens[0].target, ast.Name):
            return first, _single_loop(gens[0].target.id, conds[0], steps), outs

        def frames(f: Frame, iterable: Any) -> Any:
            inner = Frame({}, f, f.budget, f.helpers)
            b = f.budget

            def level(i: int, items: Any) -> Any:
                setter, tests = setters[i], conds[i]
                for item in items:
                    b.charge(steps)
                    setter(inner, item)
                    for t in tests:
                        if not t(inner):
                            break
                    else:
                        if i == last:
                            yield inner
                        else:
                            yield from level(i + 1, iters[i + 1](inner))

            return level(0, iterable)

        return first, frames, outs

    def _e_ListComp(self, node: ast.ListComp) -> Ev:
        first, frames, (elt,) = self._comprehension(node, [node.elt])
        return lambda f: [elt(inner) for inner in frames(f, first(f))]

    def _e_GeneratorExp(self, node: ast.GeneratorExp) -> Ev:
        first, frames, (elt,) = self._comprehension(node, [node.elt])

        def generator(f: Frame) -> Any:
            return (elt(inner) for inner in frames(f, iter(first(f))))

        return generator

    def _e_SetComp(self, node: ast.SetComp) -> Ev:
        first, frames, (elt,) = self._comprehension(node, [node.elt])
        return lambda f: _hashed(f.budget, set(), (elt(inner) for inner in frames(f, first(f))))

    def _e_DictComp(self, node: ast.DictComp) -> Ev:
        first, frames, (key, value) = self._comprehension(node, [node.key, node.value])

        def make(f: Frame) -> dict[Any, Any]:
            out = {}
            for inner in frames(f, first(f)):
                k = key(inner)
                if _expensive(k):
                    cost(f.budget, k)
                out[k] = value(inner)
            return out

        return make

    # --- calls ------------------------------------------------------------------------------------

    def _e_Call(self, node: ast.Call) -> Ev:
        func = node.func
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise Refusal("* unpacking of arguments is not allowed in action code", a)
        if isinstance(func, ast.Name) and func.id in HELPERS:
            return self._helper_call(func.id, node)
        if isinstance(func, ast.Name) and func.id in BUILTINS:
            return self._builtin_call(func.id, node)
        if isinstance(func, ast.Attribute) and func.attr in METHODS:
            return self._method_call(func, node)
        if isinstance(func, ast.Attribute):
            self.expr(func.value)  # a problem in the receiver (a dunder, an unknown name) is named first
            raise Refusal(f"the method .{func.attr}() is not allowed (allowed: {', '.join(METHODS)})", func)
        if isinstance(func, ast.Name) and func.id.startswith("__"):
            raise Refusal(f"the name {func.id!r} is not allowed (no dunder names)", func)
        what = f"{func.id}()" if isinstance(func, ast.Name) else "this"
        raise Refusal(
            f"{what} cannot be called: action code may call the helpers {', '.join(HELPERS)}, "
            f"the builtins {', '.join(BUILTINS)} and the methods {', '.join(METHODS)}",
            func,
        )

    def _keywords(
        self, node: ast.Call, allowed: frozenset[str] | None, owner: str
    ) -> list[tuple[str | None, Ev]]:
        out: list[tuple[str | None, Ev]] = []
        for kw in node.keywords:
            if kw.arg is None and allowed is not None:
                raise Refusal(f"** unpacking of arguments to {owner}() is not allowed", kw.value)
            if allowed is not None and kw.arg not in allowed:
                raise Refusal(f"{owner}() takes no keyword {kw.arg!r} in action code", kw.value)
            if isinstance(kw.value, ast.Lambda):
                if kw.arg != "key" or owner not in KEY_TAKERS:
                    raise Refusal("lambda is allowed only as the key= of sorted, min or max", kw.value)
                out.append((kw.arg, self._lambda(kw.value)))
            else:
                out.append((kw.arg, self.expr(kw.value)))
        return out

    def _lambda(self, node: ast.Lambda) -> Ev:
        a = node.args
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults:
            raise Refusal("a key lambda takes plain parameters only", node)
        params = [p.arg for p in a.args]
        for p in a.args:
            self._check_binding(p.arg, p)
        self.scopes.append(set(params))
        body = self.expr(node.body)
        self.scopes.pop()
        steps, n = 1 + steps_of(node.body), len(params)

        def make(f: Frame) -> Callable[..., Any]:
            b = f.budget

            def key(*values: Any) -> Any:
                b.charge(steps)
                if len(values) != n:
                    raise TypeError(f"<lambda>() takes {n} positional arguments but {len(values)} were given")
                return body(Frame(dict(zip(params, values, strict=True)), f, b, f.helpers))

            return key

        return make

    def _builtin_call(self, name: str, node: ast.Call) -> Ev:
        impl, allowed = BUILTINS[name]
        args = [self.expr(a) for a in node.args]
        kws = self._keywords(node, allowed, name)
        if not kws and len(args) == 1:
            (only,) = args

            def call_one(f: Frame) -> Any:
                f.budget.charge(1)
                return impl(f.budget, only(f))

            return call_one

        def call(f: Frame) -> Any:
            f.budget.charge(1)
            return impl(f.budget, *[a(f) for a in args], **{k: v(f) for k, v in kws})  # type: ignore[misc]

        return call

    def _method_call(self, func: ast.Attribute, node: ast.Call) -> Ev:
        name, table = func.attr, METHODS[func.attr]
        receiver, args = self.expr(func.value), [self.expr(a) for a in node.args]
        kws = self._keywords(node, frozenset(), f".{name}") if node.keywords else []

        def call(f: Frame) -> Any:
            obj = receiver(f)
            impl = table.get(type(obj))
            if impl is None:
                raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")
            f.budget.charge(1)
            return impl(f.budget, obj, *[a(f) for a in args], **{k: v(f) for k, v in kws})  # type: ignore[misc]

        return call

    def _helper_call(self, name: str, node: ast.Call) -> Ev:
        if self.read_only and name in WRITE_HELPERS:
            raise Refusal(f"the action is labelled read, so it cannot call {name}()", node)
        self.calls.add(name)
        kind = HELPERS[name]
        args = [self.expr(a) for a in node.args]
        kws = self._keywords(node, None, name)

        if not kws and kind == "read" and len(args) <= 2:
            return _plain_helper_call(name, args)

        def call(f: Frame) -> Any:
            b = f.budget
            b.charge(1)
            pos = [a(f) for a in args]
            kw: dict[str, Any] = {}
            for k, v in kws:
                if k is not None:
                    kw[k] = v(f)
                    continue
                extra = v(f)
                if type(extra) is not dict:
                    raise TypeError(
                        f"{name}() argument after ** must be a mapping, not {type(extra).__name__}"
                    )
                for key in extra:
                    if key in kw:
                        raise TypeError(f"{name}() got multiple values for keyword argument {key!r}")
                kw.update(extra)
            for x in pos:
                if type(x) not in ATOMS:
                    _check_argument(b, name, kind, x)
            for x in kw.values():
                if type(x) not in ATOMS:
                    _check_argument(b, name, kind, x)
            out = f.helpers[name](*pos, **kw)
            if kind == "rows":
                b.charge(len(out) * (1 + (len(out[0]) if out else 0)))
            elif kind == "call":
                bounds.measure(b, out)
            return out

        return call


def _plain_helper_call(name: str, args: list[Ev]) -> Ev:
    """A read helper with up to two positional arguments (`get('invoice', invoice_id)`): the hot path."""
    first, second = (*args, None, None)[:2]

    def call(f: Frame) -> Any:
        b = f.budget
        b.steps -= 1
        if b.steps < 0:
            b.charge(0)
        if first is None:
            return f.helpers[name]()
        x = first(f)
        if type(x) not in _PLAIN:
            _check_argument(b, name, "read", x)
        if second is None:
            return f.helpers[name](x)
        y = second(f)
        if type(y) not in _PLAIN:
            _check_argument(b, name, "read", y)
        return f.helpers[name](x, y)

    return call


def _check_argument(b: Budget, name: str, kind: str, x: Any) -> None:
    """Charge for a helper's argument: a string is written as it is; anything else may be printed."""
    if type(x) is str:
        if kind == "write":
            b.charge(len(x) >> 4)
        return
    size = bounds.measure(b, x)
    if size > bounds.MAX_STR:
        raise bounds.too_big(f"an argument to {name}()", size, bounds.MAX_STR)


_PLAIN = ATOMS | {str}


def _cheap_constant(node: ast.AST) -> bool:
    """A literal whose comparison or hashing costs a constant (no need to charge for it): a number, a
    short string, or a short tuple of those (`status in ('open', 'paid')`)."""
    if isinstance(node, ast.Tuple):
        return len(node.elts) <= 64 and all(
            _cheap_constant(e) and not isinstance(e, ast.Tuple) for e in node.elts
        )
    return isinstance(node, ast.Constant) and (
        type(node.value) in ATOMS or (type(node.value) is str and len(node.value) <= 4096)
    )


def _single_loop(name: str, tests: list[Ev], steps: int) -> Callable[[Frame, Any], Any]:
    """`frames` for the common comprehension: one `for NAME in ...` and its conditions."""

    def frames(f: Frame, iterable: Any) -> Any:
        inner = Frame({}, f, f.budget, f.helpers)
        names, b = inner.vars, f.budget
        for item in iterable:
            b.steps -= steps
            if b.steps < 0:
                b.charge(0)
            names[name] = item
            for t in tests:
                if not t(inner):
                    break
            else:
                yield inner

    return frames


def _hashed(b: Budget, out: set[Any], values: Iterable[Any]) -> set[Any]:
    for v in values:
        b.charge(1)
        if _expensive(v):
            cost(b, v)
        out.add(v)
    return out


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"attribute access (.{node.attr}) outside a call of an allowed method"
    if isinstance(node, ast.Lambda):
        return "lambda (outside the key= of sorted, min or max)"
    return {
        "NamedExpr": "the := operator",
        "Await": "await",
        "Yield": "yield",
        "YieldFrom": "yield from",
        "Starred": "* unpacking",
    }.get(type(node).__name__, f"a {type(node).__name__} expression")
