"""The error types every capability raises, and how the CLI turns them into exit codes."""

from __future__ import annotations


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
