"""What the gateway never writes down: secret-looking values found by name, by value and in free text.

A `Redactor` holds the names that mark a secret (the built-in pattern and `record.redact`) and the
values known to be secret: the gateway's bearer token, every backend environment value, and each value
it has seen under a secret name (in an argument, a result or a row change) since it started, so the
password a client sent to `set_password` is also redacted where a later result or error repeats it.
`value` walks JSON (dict keys are names), `text` redacts a JSON result structurally and free text by
`name: value` / `name=value` pairs, and `changes` redacts a world diff by field name. `scrub_logs`
installs a log-record factory so no log line carries a known secret either.

Free text is also scanned (`FreeTextScanner`, D306): detect-secrets' key-format plugins (AWS, GitHub, GitLab,
Slack, Stripe, OpenAI, JWTs, private keys, … every regex plugin of the installed release but public IP
addresses, which are not credentials), its two entropy measures on the tokens they are meant for (base64
runs of 20+ above 4.5 bits a character, hex runs of 16+ above 3.0, not all digits), and password-shaped
tokens (12+ characters, not a URL, all four of lower case, upper case, digit and symbol, above 3.5 bits a
character). What it finds is redacted and learned like a value under a secret name. On this repository's
own episode files it redacted 0 of 428,665 strings (`bench/secrets_false_redactions.py`).
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import weakref
from collections import Counter
from typing import Any

from toolshift.errors import ToolshiftError

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


_NOT_CREDENTIALS = frozenset({"IPPublicDetector"})
"""detect-secrets plugins that find something other than a credential (a public IP address is not a secret)."""
_CANDIDATE = re.compile(r"[A-Za-z0-9_+/=-]{11}|PRIVATE KEY|://")
"""What every key format needs somewhere (a run of 11 such characters, a key header or a URL's credentials):
text without it is not run through the format plugins (most recorded strings)."""
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_HEX_RUN = re.compile(r"\b[0-9a-fA-F]{16,}\b")
_WORDLIKE = re.compile(r"\S{12,}")
BASE64_LIMIT, HEX_LIMIT, PASSWORD_LIMIT = 4.5, 3.0, 3.5
"""Bits a character above which a token counts as random: detect-secrets' defaults for its two entropy plugins,
and for a password-shaped token the entropy of 12 distinct characters in 12."""


class FreeTextScanner:
    """Secrets in free text, found by detect-secrets' plugins (the module docstring); `find` returns each found
    secret's text, longest first."""

    def __init__(self) -> None:
        try:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
            from detect_secrets.plugins.base import RegexBasedDetector
            from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
        except ImportError:
            raise ToolshiftError(
                "detect-secrets is not installed, and recordings scan free text with it (D306): "
                "pip install 'detect-secrets>=1.5,<2' (or make .venv/.installed again)"
            ) from None

        plugins = get_mapping_from_secret_type_to_class().values()
        self.formats = [
            rx
            for cls in sorted(plugins, key=lambda c: c.__name__)
            if issubclass(cls, RegexBasedDetector) and cls.__name__ not in _NOT_CREDENTIALS
            for rx in cls().denylist
        ]
        self.entropy = Base64HighEntropyString().calculate_shannon_entropy

    def find(self, text: str) -> list[str]:
        found: set[str] = set()
        if _CANDIDATE.search(text):
            for rx in self.formats:
                found.update(m.group(0) for m in rx.finditer(text) if len(m.group(0)) >= MIN_SECRET_CHARS)
        found.update(t for t in _BASE64_RUN.findall(text) if self.entropy(t) > BASE64_LIMIT)
        found.update(t for t in _HEX_RUN.findall(text) if not t.isdigit() and self.entropy(t) > HEX_LIMIT)
        for raw in _WORDLIKE.findall(text):
            token = raw.strip(".,;:!?()[]{}\"'")
            shaped = len(token) >= 12 and "://" not in token and _password_shaped(token)
            if shaped and _shannon(token) > PASSWORD_LIMIT:
                found.add(token)
        return sorted(found, key=len, reverse=True)


def _shannon(token: str) -> float:
    """Bits a character over every character (detect-secrets' measure counts only its plugin's alphabet)."""
    n = len(token)
    return -sum(k / n * math.log2(k / n) for k in Counter(token).values())


def _password_shaped(token: str) -> bool:
    return (
        any(c.islower() for c in token)
        and any(c.isupper() for c in token)
        and any(c.isdigit() for c in token)
        and any(not c.isalnum() for c in token)
    )


_scanner: FreeTextScanner | None = None
_scanner_lock = threading.Lock()


def free_text_scanner() -> FreeTextScanner:
    """The process's scanner, made on first use (detect-secrets is imported only where recordings are made)."""
    global _scanner
    with _scanner_lock:
        if _scanner is None:
            _scanner = FreeTextScanner()
        return _scanner


class Redactor:
    """Secret names and known secret values; thread-safe (the gateway's sessions share one). With `scan` (the
    default), free text is also scanned for secrets (`FreeTextScanner`)."""

    def __init__(
        self, names: list[str] | tuple[str, ...] = (), secrets: tuple[str, ...] = (), *, scan: bool = True
    ) -> None:
        self.names = {n.lower() for n in names}
        self.scanner = free_text_scanner() if scan else None
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
        """Known secret values, what the free-text scanner finds (learned from then on) and `secret-name: value`
        pairs in free text replaced by `[redacted]`."""
        found = self.scanner.find(text) if self.scanner is not None else []
        for secret in found:
            self.learn(secret)
            text = text.replace(secret, REDACTED)
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
