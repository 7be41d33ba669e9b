"""What the gateway never writes down: secret-looking values found by name, by value and in free text.

A `Redactor` holds the names that mark a secret (the built-in pattern and `record.redact`) and the
values known to be secret: the gateway's bearer token, every backend environment value, and each value
it has seen under a secret name (in an argument, a result or a row change) since it started, so the
password a client sent to `set_password` is also redacted where a later result or error repeats it.
`value` walks JSON (dict keys are names), `text` redacts a JSON result structurally and free text by
`name: value` / `name=value` pairs, and `changes` redacts a world diff by field name. `scrub_logs`
installs a log-record factory so no log line carries a known secret either.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import weakref
from typing import Any

SECRET_NAME = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|credential|authori[sz]ation|cookie|private[_-]?key)",
    re.IGNORECASE,
)
REDACTED = "[redacted]"
MIN_SECRET_CHARS = 4
"""Shorter values under a secret name are redacted where they stand but not hunted for elsewhere."""
MAX_KNOWN = 10_000
_NAME_WORD = r"(?:pass(?:word|wd|phrase)?|secret|token|api[_-]?key|apikey|credentials?|authori[sz]ation|cookie|private[_-]?key)"
_PAIR = re.compile(
    r"(?i)(\b\w*" + _NAME_WORD + r"\w*[\"']?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|(?:bearer\s+)?[^\s\"',;}\])]+)"
)


def _redact_pair(m: re.Match[str]) -> str:
    value = m.group(2)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{m.group(1)}{quote}{REDACTED}{quote}"


class Redactor:
    """Secret names and known secret values; thread-safe (the gateway's sessions share one)."""

    def __init__(self, names: list[str] | tuple[str, ...] = (), secrets: tuple[str, ...] = ()) -> None:
        self.names = {n.lower() for n in names}
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._ordered: tuple[str, ...] = ()
        for s in secrets:
            self.learn(s)

    def is_secret_name(self, name: str) -> bool:
        return bool(SECRET_NAME.search(name)) or name.lower() in self.names

    def learn(self, value: Any) -> None:
        """Remember a secret value so it is redacted wherever it appears from now on."""
        if not isinstance(value, str) or len(value) < MIN_SECRET_CHARS or value == REDACTED:
            return
        with self._lock:
            if value in self._known or len(self._known) >= MAX_KNOWN:
                return
            self._known.add(value)
            self._ordered = tuple(sorted(self._known, key=len, reverse=True))

    def learn_from(self, value: Any, name: str | None = None, depth: int = 0) -> None:
        """Remember every value under a secret name in a JSON value (before redacting it)."""
        if depth > 32:
            return
        if name is not None and self.is_secret_name(name):
            if isinstance(value, str):
                self.learn(value)
            elif isinstance(value, dict | list):
                for v in value.values() if isinstance(value, dict) else value:
                    self.learn_from(v, name, depth + 1)
            return
        if isinstance(value, dict):
            for k, v in value.items():
                self.learn_from(v, str(k), depth + 1)
        elif isinstance(value, list):
            for v in value:
                self.learn_from(v, None, depth + 1)

    def scrub(self, text: str) -> str:
        """Known secret values and `secret-name: value` pairs in free text replaced by `[redacted]`."""
        for secret in self._ordered:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if _PAIR.search(text):
            text = _PAIR.sub(_redact_pair, text)
        return text

    def value(self, value: Any, name: str | None = None, depth: int = 0) -> Any:
        """A JSON value with every value under a secret name, and every known secret, redacted."""
        if name is not None and self.is_secret_name(name):
            return REDACTED
        if depth > 32:
            return REDACTED
        if isinstance(value, dict):
            return {self.scrub(str(k)): self.value(v, str(k), depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v, None, depth + 1) for v in value]
        if isinstance(value, str):
            return self.scrub(value)
        return value

    def text(self, text: str) -> str:
        """A result's text: JSON redacted by structure (re-written only when something changed), else scrubbed."""
        stripped = text.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                parsed = None
            if parsed is not None:
                self.learn_from(parsed)
                redacted = self.value(parsed)
                return text if redacted == parsed else json.dumps(redacted, ensure_ascii=False, default=str)
        return self.scrub(text)

    def change(self, change: dict[str, Any]) -> dict[str, Any]:
        """One row change (`RowChange` as JSON): its values redacted when its field's name is secret."""
        field = str(change.get("field", ""))
        if self.is_secret_name(field):
            return {
                **change,
                "before": REDACTED if change.get("before") is not None else None,
                "after": REDACTED if change.get("after") is not None else None,
            }
        return {k: self.value(v) if k in ("before", "after", "key") else v for k, v in change.items()}


_active: weakref.WeakSet[Redactor] = weakref.WeakSet()
_factory_installed = False


def scrub_logs(redactor: Redactor) -> None:
    """Every log record made in this process from now on has this redactor's known secrets scrubbed from its
    text (one record factory for the process; redactors register with it and leave it when collected)."""
    global _factory_installed
    _active.add(redactor)
    if _factory_installed:
        return
    _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redactors = list(_active)
        if not redactors:
            return record
        try:
            message = record.getMessage()
        except Exception:  # a malformed log call: leave it to logging to report
            return record
        clean = message
        for r in redactors:
            clean = r.scrub(clean)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            text = str(record.exc_info[1])
            scrubbed = text
            for r in redactors:
                scrubbed = r.scrub(scrubbed)
            if scrubbed != text:
                record.msg = f"{clean} ({type(record.exc_info[1]).__name__}: {scrubbed})"
                record.exc_info, record.exc_text = None, None
        return record

    logging.setLogRecordFactory(factory)
