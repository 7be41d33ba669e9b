"""The error types every capability raises, and how the CLI turns them into exit codes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class ToolshiftError(Exception):
    """A failure the user can act on: the CLI prints its message on one line and exits non-zero.

    Subclasses set `exit_code`; 2 means the input (a file, a record, an argument) was bad.
    """

    exit_code = 1


class BadInputError(ToolshiftError):
    """A file, record or argument that cannot be used. The message names the file, record and field."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
    ) -> None:
        where = []
        if source is not None:
            where.append(str(source))
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field {field!r}")
        self.source, self.record, self.field = source, record, field
        self.detail = message
        super().__init__(f"{': '.join(where)}: {message}" if where else message)

    @classmethod
    def from_validation(
        cls, exc: Any, *, source: str | None = None, record: int | str | None = None, prefix: str = ""
    ) -> BadInputError:
        """The first error of a pydantic `ValidationError`, its location dot-joined as the field."""
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or None)
        return cls(err["msg"], source=source, record=record, field=field)


def report_file_errors(app: Any) -> None:
    """Make every command of a typer app report a file it cannot read or write as one-line bad input.

    An `OSError` naming a file (a missing input, an `--out` under a regular file, a folder where a file is
    wanted) becomes a `BadInputError` naming that file (exit 2); any other `OSError` a `ToolshiftError`.
    Call once, after the app's commands are defined.
    """
    for command in app.registered_commands:
        command.callback = _reporting_file_errors(command.callback)


def _reporting_file_errors(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.filename is not None:
                raise BadInputError(f"cannot use this path: {reason}", source=str(exc.filename)) from exc
            raise ToolshiftError(reason) from exc

    return run
