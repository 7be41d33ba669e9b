"""The one error a tool raises: a domain failure reported to the caller as `{code, message}`.

Below every layer of the world: the spec language's budgets, the runtime and every tool raise it.
"""

from __future__ import annotations

from toolshift.world.limits import MAX_MESSAGE_CHARS


def shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}… ({len(text) - limit + 40:,} more characters)"


class ToolError(Exception):
    """A domain failure reported to the caller as `{code, message}`; the call's transaction rolls back.

    The message is cut to `MAX_MESSAGE_CHARS`, whatever argument it quotes.
    """

    def __init__(self, code: str, message: str) -> None:
        message = shorten(message)
        super().__init__(message)
        self.code = code
        self.message = message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}
