"""The safe interpreter for a spec's precondition `check` and action `code`: a whitelisted subset of Python.

Source is parsed with `ast` (the parser only: no code object is made) and compiled, once, at spec
load, into a tree of Python closures; it is never given to `eval`, `exec` or `compile`. The subset
(docs/formats.md, D55): literals; names bound to `args`, the parameters, the code's own variables,
`today` and `now`; calls of the runtime's row helpers, of a fixed set of pure builtins and of a few
methods of str / list / dict; comparisons, boolean, arithmetic and conditional expressions;
subscripts and slices; f-strings; list / set / dict comprehensions and generator expressions;
`lambda` only as the `key=` of `sorted`, `min` or `max`; the statements `=` (to names or tuples of
names), `+=` and the like, `if`, `for`, `return`, `pass`, `break`, `continue`. Anything else —
attributes other than those methods, dunder names, imports, `def`, `class`, `while`, `try` — is a
`Refusal` at load, naming the line. At run time every step charges the call's `bounds.Budget`.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from toolshift.world.language.bounds import Budget
from toolshift.world.language.expressions import (
    BUILTINS,
    DATA_NAMES,
    HELPERS,
    WRITE_HELPERS,
    Ev,
    ExpressionCompiler,
    Frame,
    Refusal,
    steps_of,
)

__all__ = [
    "BUILTINS",
    "DATA_NAMES",
    "HELPERS",
    "WRITE_HELPERS",
    "Program",
    "Refusal",
    "compile_check",
    "compile_code",
]

MAX_SOURCE = 20_000
"""Characters of one `check` or `code`."""
MAX_NODES = 5_000
MAX_DEPTH = 50

_RETURN, _BREAK, _CONTINUE = object(), object(), object()


@dataclass(frozen=True)
class Program:
    """A compiled `check` (an expression) or `code` (a function body)."""

    body: Ev
    steps: int
    expression: bool
    unbound: tuple[str, ...]
    """Outer names the code assigns (so, as in Python, they are local and unset until assigned)."""
    calls: frozenset[str]
    """The helpers it calls."""

    def run(self, names: dict[str, Any], helpers: dict[str, Any], budget: Budget) -> Any:
        """Evaluate with these data names (mutated by `code`; pass a copy) and helper functions."""
        budget.steps -= self.steps
        if budget.steps < 0:
            budget.charge(0)
        for name in self.unbound:
            names.pop(name, None)
        frame = Frame(names, None, budget, helpers)
        if self.expression:
            return self.body(frame)
        self.body(frame)
        return frame.value


def compile_check(source: str, names: Iterable[str], *, read_only: bool = False) -> Program:
    """A precondition: one expression over `names` (parameters and `args`, `today`, `now`)."""
    tree = _parse(source, "eval")
    return _Compiler(names, read_only).program(tree)


def compile_code(source: str, names: Iterable[str], *, read_only: bool = False) -> Program:
    """An action body: statements over `names`; `return` gives the result."""
    tree = _parse(textwrap.dedent(source).strip("\n") or "pass", "exec")
    return _Compiler(names, read_only).program(tree)


def _parse(source: str, mode: str) -> ast.AST:
    if len(source) > MAX_SOURCE:
        raise Refusal(f"it is {len(source):,} characters long (the limit is {MAX_SOURCE:,})")
    try:
        tree = ast.parse(source, mode=mode)
    except SyntaxError as exc:
        raise Refusal(f"Python syntax error: {exc.msg}", line=exc.lineno) from None
    except (RecursionError, MemoryError):
        raise Refusal("it is nested too deeply to parse") from None
    except ValueError as exc:
        raise Refusal(f"it cannot be parsed: {exc}") from None
    nodes, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise Refusal(f"it is nested more than {MAX_DEPTH} levels deep", node)
        if nodes > MAX_NODES:
            raise Refusal(f"it has more than {MAX_NODES:,} syntax nodes", node)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return tree


_STATEMENT_WORDS = {
    ast.Import: "import",
    ast.ImportFrom: "from ... import",
    ast.FunctionDef: "def",
    ast.AsyncFunctionDef: "async def",
    ast.ClassDef: "class",
    ast.While: "while (loop over a list with for)",
    ast.Try: "try",
    ast.With: "with",
    ast.AsyncWith: "async with",
    ast.AsyncFor: "async for",
    ast.Raise: "raise (use fail(code, message))",
    ast.Assert: "assert",
    ast.Delete: "del",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
}


class _Compiler(ExpressionCompiler):
    """Compiles one block: the expressions, and for `code` its statements."""

    def program(self, tree: ast.AST) -> Program:
        if isinstance(tree, ast.Expression):
            body = self.expr(tree.body)
            return Program(body, steps_of(tree), True, (), frozenset(self.calls))
        assert isinstance(tree, ast.Module)
        for stmt in tree.body:
            self._collect_assigned(stmt)
        self.scopes[0] |= self.assigned
        run = self.block(tree.body)
        unbound = tuple(sorted(self.assigned & self.outer))
        return Program(run, steps_of(tree), False, unbound, frozenset(self.calls))

    def _collect_assigned(self, node: ast.stmt) -> None:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.For):
            targets = [node.target]
        for t in targets:
            self.assigned |= self._target_names(t)
        for child in (*getattr(node, "body", ()), *getattr(node, "orelse", ())):
            if isinstance(child, ast.stmt):
                self._collect_assigned(child)

    # --- statements -------------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> Ev:
        runs = [self.stmt(s) for s in stmts]
        if len(runs) == 1:
            return runs[0]

        def run(f: Frame) -> Any:
            for r in runs:
                signal = r(f)
                if signal is not None:
                    return signal
            return None

        return run

    def stmt(self, node: ast.stmt) -> Ev:
        word = _STATEMENT_WORDS.get(type(node))
        if word is not None:
            raise Refusal(f"{word} is not allowed in action code", node)
        method = getattr(self, f"_s_{type(node).__name__}", None)
        if method is None:
            raise Refusal(f"a {type(node).__name__} statement is not allowed in action code", node)
        return method(node)

    def _s_Expr(self, node: ast.Expr) -> Ev:
        ev = self.expr(node.value)

        def run(f: Frame) -> None:
            ev(f)

        return run

    def _s_Pass(self, node: ast.Pass) -> Ev:
        return lambda f: None

    def _s_Break(self, node: ast.Break) -> Ev:
        if not self.loops:
            raise Refusal("break outside a loop", node)
        return lambda f: _BREAK

    def _s_Continue(self, node: ast.Continue) -> Ev:
        if not self.loops:
            raise Refusal("continue outside a loop", node)
        return lambda f: _CONTINUE

    def _s_Return(self, node: ast.Return) -> Ev:
        ev = self.expr(node.value) if node.value is not None else (lambda f: None)

        def run(f: Frame) -> Any:
            f.value = ev(f)
            return _RETURN

        return run

    def _s_Assign(self, node: ast.Assign) -> Ev:
        ev = self.expr(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id

            def assign(f: Frame) -> None:
                f.vars[name] = ev(f)

            return assign
        setters = [self.setter(t) for t in node.targets]

        def assign_all(f: Frame) -> None:
            value = ev(f)
            for s in setters:
                s(f, value)

        return assign_all

    def _s_AugAssign(self, node: ast.AugAssign) -> Ev:
        if not isinstance(node.target, ast.Name):
            raise Refusal("only a name can be updated with +=, -= and the like", node)
        op = self._binop(node.op, node)
        load = self._load(node.target.id, node.target)
        name, ev = node.target.id, self.expr(node.value)

        def update(f: Frame) -> None:
            f.vars[name] = op(f.budget, load(f), ev(f))

        return update

    def _s_If(self, node: ast.If) -> Ev:
        test, body = self.expr(node.test), self.block(node.body)
        orelse = self.block(node.orelse) if node.orelse else None

        def run(f: Frame) -> Any:
            if test(f):
                return body(f)
            return orelse(f) if orelse is not None else None

        return run

    def _s_For(self, node: ast.For) -> Ev:
        if node.orelse:
            raise Refusal("for ... else is not allowed in action code", node)
        setter, iterate = self.setter(node.target), self.expr(node.iter)
        self.loops += 1
        body = self.block(node.body)
        self.loops -= 1
        steps = 1 + sum(steps_of(s) for s in node.body)

        def run(f: Frame) -> Any:
            b = f.budget
            for item in iterate(f):
                b.charge(steps)
                setter(f, item)
                signal = body(f)
                if signal is not None:
                    if signal is _BREAK:
                        break
                    if signal is not _CONTINUE:
                        return signal
            return None

        return run
