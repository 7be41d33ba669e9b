"""Files read and written the same way everywhere: atomic writes, bounded JSON, UTF-8 text, JSONL lines.

The lowest room beside `toolshift.errors`, so every capability can use it:

- **Writes are atomic**: a file is written to a hidden temp sibling `.<name>.<pid>.<random>.tmp`, fsynced
  and renamed over the target, so a kill mid-write leaves the previous file intact. Temp files whose
  writer process is gone (killed with SIGKILL) are removed by the next atomic write into that folder.
- **JSON is bounded**: at most `MAX_JSON_DEPTH` levels of nesting and `MAX_JSON_BYTES` per document
  (`MAX_LINE_BYTES` per JSONL line), so deep nesting is a `BadInputError` naming the file, never a
  `RecursionError`. pydantic-core's parser bounds the depth in Rust (and is faster than `json`); text
  it refuses is counted without recursion (`json_depth`) before the standard library's parser says why.
- **Text is UTF-8**: a binary or otherwise undecodable file is a `BadInputError` naming the file and
  the byte offset, never a `UnicodeDecodeError`.
- **Only regular files are read** (`open_input`): a FIFO, socket, device or folder where a file should be is
  refused before anything waits on it (opened without blocking, then checked), so no read waits forever.
- **JSON is strict** (D301): `NaN`, `Infinity`, a number too large for a float and a lone surrogate escape
  (`"\\ud800"`, which no UTF-8 file can hold) are refused naming the field, never read as a float or a
  string that cannot be written again; `dumps_strict` writes no `NaN` either.
- **JSONL lines follow one rule** (`jsonl_lines`, `repair_jsonl_tail`; docs/formats.md): every line
  ends in a newline; a last line without one is complete when it parses as JSON (it is read, and
  the next append adds its newline) and torn when it does not (readers leave it out as not written,
  and the next append cuts it); any other line that cannot be read is refused, naming the file
  and line.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

import pydantic_core

from toolshift.errors import BadInputError

PARSER_DEPTH = 201
"""The deepest nesting pydantic-core's JSON parser (jiter) accepts; tests/test_bad_files.py pins it."""
MAX_JSON_DEPTH = PARSER_DEPTH
"""Deepest nesting of arrays and objects accepted (the published runs we read nest at most 12; pydantic
serialises about 250 levels, so whatever is read can be written again)."""
MAX_JSON_BYTES = 1 << 30
"""Largest JSON document read whole (1 GiB)."""
MAX_LINE_BYTES = 64 << 20
"""Largest JSONL line (64 MiB)."""

# --- bounded JSON -------------------------------------------------------------------------------


class NotJsonError(BadInputError):
    """Text that is not (UTF-8) JSON at all, as opposed to JSON beyond the limits: how a torn line shows."""


_KEEP_ONLY_BRACKETS = bytes(b for b in range(256) if b not in b'"[]{}')
_STRING = re.compile(rb'"[^"]*"')
_PAIR = re.compile(rb"\[\]|\{\}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_PAIR_PASSES = 8
"""Regex passes before counting bracket by bracket: enough to empty most documents (τ-bench's is 9 deep)."""


def json_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep a JSON text nests arrays and objects, counted without parsing it (no recursion).

    Escaped backslashes and quotes go first, then every byte but quotes and brackets, then strings. A few
    passes then remove the innermost empty pairs (a typical document is empty after as many passes as it
    is deep); whatever is left is counted bracket by bracket. Malformed text gives some number; the
    parser then says what is wrong with it.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Quotes left are string delimiters in turn: two adjacent ones are an empty string, or one string's
    # end and the next one's start (nothing kept between them), so dropping them keeps the rest paired.
    rest = _STRING.sub(b"", data.translate(None, _KEEP_ONLY_BRACKETS).replace(b'""', b""))
    passes = 0
    while rest and passes < min(limit, _PAIR_PASSES):
        inner = _PAIR.sub(b"", rest)
        if inner == rest:
            break
        rest, passes = inner, passes + 1
    return passes + max(accumulate(_STEP.get(b, 0) for b in rest), default=0)


def loads_json(
    text: str | bytes,
    *,
    source: str | None = None,
    record: int | str | None = None,
    max_depth: int | None = None,
    max_bytes: int | None = None,
    strict: bool = True,
) -> Any:
    """Parse one JSON document within the depth and size limits (default: the module's); any failure is a
    one-line BadInputError, a `NotJsonError` when the text is not UTF-8 JSON at all.

    With `strict` off, what strict JSON cannot carry is read as the standard library reads it, for a caller
    that checks each record itself with `require_strict` (so one bad record of a whole-file run names its
    record and can be skipped).

    The fast path is pydantic-core's parser, which refuses nesting beyond `PARSER_DEPTH` in Rust, and `NaN`,
    infinities and lone surrogate escapes. What it refuses goes to the standard library's parser, after the
    depth is counted by `json_depth`: its message says what is wrong. What only that parser reads (`NaN`,
    `Infinity`, a lone surrogate) is then refused naming its field, as is a number that overflows a float
    (`1e999`) on either path (D301).
    """
    max_depth = MAX_JSON_DEPTH if max_depth is None else max_depth
    max_bytes = MAX_JSON_BYTES if max_bytes is None else max_bytes
    if len(text) > max_bytes:
        raise BadInputError(
            f"JSON document of {len(text):,} bytes exceeds the limit of {max_bytes:,}",
            source=source,
            record=record,
        )
    if max_depth >= PARSER_DEPTH:
        try:
            value = pydantic_core.from_json(text, cache_strings=False, allow_inf_nan=False)
        except ValueError as exc:
            if str(exc).startswith("recursion limit exceeded"):
                raise _too_deep(max_depth, source, record) from None
        else:
            if strict and _may_overflow(text):
                require_strict(value, source=source, record=record)
            return value
    raw = bytes(text) if isinstance(text, bytes | bytearray) else None
    if raw is not None:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise NotJsonError(
                f"not UTF-8: {exc.reason} at byte {exc.start}", source=source, record=record
            ) from None
    assert isinstance(text, str)
    # Only a text with more openers than the limit can nest deeper than it: most skip the scan.
    if text.count("[") + text.count("{") > max_depth and json_depth(raw or text, max_depth) > max_depth:
        raise _too_deep(max_depth, source, record)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"character {exc.pos}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        raise NotJsonError(f"not JSON: {exc.msg} at {at}", source=source, record=record) from None
    except ValueError as exc:  # JSON Python cannot hold: an integer over its 4,300-digit conversion limit
        raise BadInputError(f"not usable JSON: {exc}", source=source, record=record) from None
    except RecursionError:  # belt and braces: the depth check above makes this unreachable
        raise _too_deep(max_depth, source, record) from None
    if strict:
        require_strict(value, source=source, record=record)
    return value


def _number_classes() -> bytes:
    table = bytearray(b"a" * 256)
    for c in b"0123456789.":
        table[c] = ord("0")
    for c in b"eE":
        table[c] = ord("e")
    table[ord("+")] = ord("+")
    for c in b",]} \t\r\n":
        table[c] = ord(",")
    return bytes(table)


_NUMBER_CLASSES = _number_classes()
"""Bytes as classes (digit or point, exponent, plus, what ends a number, anything else) for `_may_overflow`."""
_FLOAT_DIGITS = 309
"""A float literal overflows only with an exponent of 308 or more, or 309 digits before its point."""


def _may_overflow(text: str | bytes) -> bool:
    """Whether a document may hold a number that overflows a float (an exponent of 100 or more ending where a
    number ends, or a run of 309 digits): only then is it walked for infinities. C-speed byte operations,
    about a tenth of the fast parser's time on episode lines; a hex id like `98c6e141` inside a string is
    not followed by what ends a number, so it does not count."""
    data = bytes(text) if isinstance(text, bytes | bytearray) else text.encode("utf-8", "surrogatepass")
    classes = data.translate(_NUMBER_CLASSES)
    if b"0" * _FLOAT_DIGITS in classes:
        return True
    for pattern in (b"0e000", b"0e+000"):
        at = classes.find(pattern)
        while at >= 0:
            end = at + len(pattern)
            while end < len(classes) and classes[end] == 48:  # "0": more digits
                end += 1
            if end == len(classes) or classes[end] == 44:  # ",": what ends a number
                return True
            at = classes.find(pattern, end)
    return False


def unwritable(value: Any) -> tuple[str, str] | None:
    """(field path, why) of the first value strict JSON cannot carry — `NaN`, an infinity, a string with a lone
    surrogate (in a key too) — or None; the path is "" for the value itself. Walked without recursion."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return path, f"{v} is not a JSON number (strict JSON has no NaN or infinity)"
        elif isinstance(v, str):
            if not encodes_utf8(v):
                return path, _surrogate_reason(v)
        elif isinstance(v, dict):
            for k, x in reversed(list(v.items())):
                key = str(k)
                if not encodes_utf8(key):
                    return f"{path}.{key.encode('utf-8', 'backslashreplace').decode()}".lstrip(
                        "."
                    ), _surrogate_reason(key)
                stack.append((f"{path}.{key}" if path else key, x))
        elif isinstance(v, list):
            stack.extend((f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v))))
    return None


def _surrogate_reason(text: str) -> str:
    at = next(i for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF)
    return f"a lone surrogate \\u{ord(text[at]):04x} at character {at} (not text UTF-8 can hold)"


def require_strict(
    value: Any, *, source: str | None = None, record: int | str | None = None, prefix: str = ""
) -> None:
    """Refuse a value strict JSON cannot carry (`unwritable`), naming the file, record and field (under `prefix`)."""
    found = unwritable(value)
    if found is not None:
        path, why = found
        field = prefix + path if path.startswith("[") else ".".join(x for x in (prefix, path) if x)
        raise BadInputError(why, source=source, record=record, field=field or None)


def dumps_strict(value: Any, **kwargs: Any) -> str:
    """`json.dumps` that refuses `NaN` and infinities (a `ValueError`): JSON toolshift writes is strict JSON."""
    return json.dumps(value, allow_nan=False, **kwargs)


def _too_deep(max_depth: int, source: str | None, record: int | str | None) -> BadInputError:
    return BadInputError(
        f"JSON nested more than {max_depth} levels deep (the limit)", source=source, record=record
    )


def encodes_utf8(text: str) -> bool:
    """True when `text` can be written as UTF-8 (no lone surrogates, which JSON escapes can carry in)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode_utf8(data: bytes, *, source: str | None = None, record: int | str | None = None) -> str:
    """Bytes as UTF-8 text (a leading byte-order mark dropped); undecodable bytes are a BadInputError."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInputError(
            f"not UTF-8 text: {exc.reason} at byte {exc.start} (a binary file?)",
            source=source,
            record=record,
        ) from None


class _GzipInput(gzip.GzipFile):
    """A gzip stream over a file `open_input` opened, closing that file with itself."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def open_input(path: str | Path, *, what: str = "file", gz: bool | None = None) -> IO[bytes]:
    """An outside file opened for reading, refused unless it is a regular file: it is opened without blocking
    (a FIFO would otherwise wait for a writer forever), checked, then read as usual; with `gz` (default: a
    name ending in `.gz`) decompressed as it is read. Errors are one-line BadInputErrors ("cannot read
    <what>: ...") naming the file."""
    path = Path(path)
    if path.name.endswith(".gz") if gz is None else gz:
        return _GzipInput(open_input(path, what=what, gz=False))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BadInputError(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise BadInputError(f"cannot read {what}: {_kind(mode)}, not a regular file", source=str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "something else"


def require_regular(path: str | Path, *, what: str = "file") -> Path:
    """`path` when it names a regular file; otherwise one line: "no such <what>", or what it is instead
    ("cannot read <what>: a FIFO, not a regular file"), so a FIFO is never reported as missing."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise BadInputError(f"no such {what}", source=str(path)) from None
    except OSError as exc:
        raise BadInputError(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    if not stat.S_ISREG(mode):
        raise BadInputError(f"cannot read {what}: {_kind(mode)}, not a regular file", source=str(path))
    return path


def is_regular(path: str | Path) -> bool:
    """True for a regular file (after symlinks): what `open_input` reads. False for a FIFO, device, folder."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_bytes(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> bytes:
    """A whole regular file's bytes, at most `max_bytes` (default `MAX_JSON_BYTES`): beyond it, or a FIFO or
    folder, a one-line BadInputError naming the file."""
    max_bytes = MAX_JSON_BYTES if max_bytes is None else max_bytes
    with open_input(path, what=what) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise BadInputError(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    if len(data) > max_bytes:
        raise BadInputError(
            f"cannot read {what}: larger than the limit of {max_bytes:,} bytes", source=str(path)
        )
    return data


def read_text(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> str:
    """A whole UTF-8 text file: a missing, oversized, unreadable, non-regular or binary file is a one-line
    BadInputError ("cannot read <what>: ...") naming the file."""
    data = read_bytes(path, what=what, max_bytes=max_bytes)
    try:
        return decode_utf8(data, source=str(path))
    except BadInputError as exc:
        raise BadInputError(f"cannot read {what}: {exc.detail}", source=str(path)) from None


def read_json(
    path: str | Path, *, what: str = "JSON file", max_depth: int | None = None, strict: bool = True
) -> Any:
    """A whole JSON file, read as UTF-8 and parsed within the limits (`strict` as `loads_json`); errors name the
    file and say what it was read as ("cannot read <what>: not JSON: ...")."""
    text = read_text(path, what=what)
    try:
        return loads_json(text, source=str(path), max_depth=max_depth, strict=strict)
    except BadInputError as exc:
        raise type(exc)(
            f"cannot read {what}: {exc.detail}", source=str(path), record=exc.record, field=exc.field
        ) from None


# --- JSONL lines --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JsonlLine:
    """One line of a JSONL file: its 1-based number, its bytes (newline stripped), whether it ended in one."""

    number: int
    data: bytes
    terminated: bool

    def is_blank(self) -> bool:
        return not self.data.strip()


def jsonl_lines(fh: IO[bytes], *, source: str, max_line_bytes: int | None = None) -> Iterator[JsonlLine]:
    """The lines of a binary stream, each at most `max_line_bytes` (default `MAX_LINE_BYTES`) long; a longer
    one is a BadInputError. A read error part-way (a truncated gzip stream) is one too, naming the line.
    """
    max_line_bytes = MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes
    number = 0
    while True:
        number += 1
        try:
            raw = fh.readline(max_line_bytes + 1)
        except (OSError, EOFError) as exc:
            raise BadInputError(f"cannot read line {number}: {exc}", source=source) from None
        if not raw:
            return
        terminated = raw.endswith(b"\n")
        if not terminated and len(raw) > max_line_bytes:
            raise BadInputError(
                f"line {number} is longer than the limit of {max_line_bytes:,} bytes", source=source
            )
        yield JsonlLine(number, raw[:-1] if terminated else raw, terminated)


def is_torn(line: JsonlLine) -> bool:
    """The one rule for an interrupted append: an unterminated line that is not a complete JSON value."""
    if line.terminated:
        return False
    try:
        loads_json(line.data)
    except NotJsonError:
        return True
    except BadInputError:  # complete but beyond the limits: a bad line, refused where it is read
        return False
    return False


def repair_jsonl_tail(path: str | Path) -> str:
    """Make an appendable JSONL file end in a newline, by the rule of `is_torn`.

    Returns "ok" (it already did, or is empty), "terminated" (a complete last line got its newline) or
    "cut" (a torn last line was removed).
    """
    with Path(path).open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return "ok"
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return "ok"
        start = _last_line_start(fh, size)
        fh.seek(start)
        tail = fh.read(size - start)
        if not is_torn(JsonlLine(0, tail, terminated=False)):
            fh.seek(size)
            fh.write(b"\n")
            return "terminated"
        fh.truncate(start)
        return "cut"


def _last_line_start(fh: IO[bytes], size: int) -> int:
    pos = size
    while pos > 0:
        step = min(65536, pos)
        fh.seek(pos - step)
        chunk = fh.read(step)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return pos - step + nl + 1
        pos -= step
    return 0


# --- atomic writes ------------------------------------------------------------------------------

_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[A-Za-z0-9_]+\.tmp(-journal|-wal|-shm)?$")
"""A temp file of `temp_sibling` (or SQLite's journal beside one): `.<name>.<pid>.<random>.tmp`."""


def chmod_default(path: str | Path) -> None:
    """Give a temp file the mode a plain `open` would have (mkstemp makes it owner-only)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(folder: str | Path) -> list[Path]:
    """Remove the temp files of atomic writes in `folder` whose writing process no longer exists."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match and not _alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def temp_sibling(path: str | Path) -> Path:
    """Create an empty hidden temp file beside `path`, named for this process (see `remove_stale_temps`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
    os.close(fd)
    chmod_default(tmp)
    return Path(tmp)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temp sibling to write `path` through: renamed over `path` when the block ends, removed if it raises.

    For writers that need a path (SQLite, matplotlib); `write_text_atomic` for a whole text.
    """
    path = Path(path)
    tmp = temp_sibling(path)
    try:
        yield tmp
        fsync_path(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_text(path: str | Path) -> Iterator[IO[str]]:
    """A text stream (UTF-8) that replaces `path` when the block ends cleanly: for files written piecemeal."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        yield fh


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write a whole text file (UTF-8) atomically: a failed or killed write leaves the old file intact."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")
    return Path(path)


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write a whole binary file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def fsync_path(path: Path) -> None:
    """Flush a written file to disk before it is renamed into place (best effort)."""
    with contextlib.suppress(OSError), path.open("rb") as fh:
        os.fsync(fh.fileno())
