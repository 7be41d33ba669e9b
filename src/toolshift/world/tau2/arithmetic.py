"""τ²-bench's `calculate` tool without `eval`: the expression is parsed, and only numbers and arithmetic are evaluated.

τ²-bench allows the characters `0-9 + - * / ( ) .` and space, evaluates the expression as Python and
returns `str(round(float(value), 2))`. Within that alphabet Python can only write numbers, `+ - * /
// ** %`-free arithmetic, unary signs and parentheses (and a few things that fail: `()`, `...`), so
we parse with `ast` (the parser only) and evaluate those nodes ourselves, with Python's own numeric
semantics and error messages. Powers are bounded, where τ²'s `eval` would compute `9**9**9` for ever.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from toolshift.world.toolerror import ToolError

ALLOWED = set("0123456789+-*/(). ")
MAX_EXPRESSION_CHARS = 1_000
MAX_POWER_BITS = 4_096

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}


def _fail(message: str) -> ToolError:
    return ToolError("refused", message)


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        v = _value(node.operand)
        return +v if isinstance(node.op, ast.UAdd) else -v
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow):
            int_power = isinstance(left, int) and isinstance(right, int) and right > 0
            if int_power and right * max(abs(left), 1).bit_length() > MAX_POWER_BITS:
                raise ToolError("limit_exceeded", f"a power above {MAX_POWER_BITS} bits is refused")
            return left**right
        op = _BINARY.get(type(node.op))
        if op is not None:
            return op(left, right)
    if isinstance(node, ast.Tuple):
        raise _fail("float() argument must be a string or a real number, not 'tuple'")
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        raise _fail("float() argument must be a string or a real number, not 'ellipsis'")
    raise _fail("invalid syntax (<string>, line 1)")


def calculate_expression(expression: str) -> str:
    """`str(round(float(<expression as Python arithmetic>), 2))`, or τ²'s error message."""
    if not all(char in ALLOWED for char in expression):
        raise _fail("Invalid characters in expression")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(
            "limit_exceeded", f"an expression of more than {MAX_EXPRESSION_CHARS} characters is refused"
        )
    try:
        tree = ast.parse(expression.strip(" "), filename="<string>", mode="eval")
    except SyntaxError as exc:
        raise _fail(str(exc)) from None
    try:
        return str(round(float(_value(tree.body)), 2))
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        raise _fail(str(exc)) from None
