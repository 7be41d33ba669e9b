"""Tool-argument schema checks: a compiled `jsonschema-rs` yes/no first, jsonschema's own verdict and message on a no.

`jsonschema` (the Python package) is the authority on what a schema accepts and on the wording of an error:
every call that `jsonschema-rs` accepts, jsonschema accepts too for the schemas worlds generate (D146), and
a call `jsonschema-rs` refuses is judged again by jsonschema, whose `best_match` is the error shown (and
whose "no error" wins where the compiled checker is stricter: it checks every `format`, jsonschema only
`date` and `email`). A schema `jsonschema-rs` cannot compile is checked by jsonschema alone.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import jsonschema_rs

FORMATS = jsonschema.FormatChecker(["date", "email"])
"""The formats a world checks (jsonschema's checkers; others are annotations)."""


class SchemaProblem(Exception):
    """The schema itself is not valid JSON Schema (the message names the keyword)."""


class ArgumentSchema:
    """One tool's input schema, compiled once: `problem(args)` is jsonschema's best error, or None."""

    def __init__(self, schema: dict[str, Any], *, formats: bool = True, check: bool = True) -> None:
        """`formats=False` checks no `format` (the agent side's check); `check=False` skips checking the schema."""
        self.schema = schema
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        if check:
            try:
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise SchemaProblem(exc.message) from None
        self._slow = cls(schema, format_checker=FORMATS if formats else None)
        try:
            self._fast: Any = jsonschema_rs.validator_for(schema, validate_formats=formats)
        except (
            ValueError,
            jsonschema_rs.ValidationError,
        ):  # a pattern its regex engine refuses, an unknown draft
            self._fast = None

    def problem(self, args: Any) -> jsonschema.ValidationError | None:
        """None when `args` is valid; otherwise the error jsonschema's `best_match` picks."""
        fast = self._fast
        if fast is not None:
            try:
                if fast.is_valid(args):
                    return None
            except (ValueError, TypeError, OverflowError):  # a value it cannot convert: jsonschema decides
                pass
        return jsonschema.exceptions.best_match(self._slow.iter_errors(args))
