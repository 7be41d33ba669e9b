"""Mutations in OpenEvolve's formats: SEARCH/REPLACE diff blocks, or a full rewrite in a fenced code block.

The formats are OpenEvolve's (`<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` on lines of their own;
a rewrite in a ```python fence), and they are read exactly as OpenEvolve 0.4.1's `extract_diffs` reads
them (any out-of-order marker line is an error; a section's trailing whitespace is dropped). Applying them
is stricter than OpenEvolve's `apply_diff`, which skips a SEARCH text it cannot find: here an unmatched,
empty or ambiguous SEARCH or a change outside the EVOLVE-BLOCK is a refusal with its reason, so a child is
never a silent copy of its parent. Edits outside the block are undone (the parent's frame is kept), as OpenEvolve's
`enforce_evolve_blocks` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolshift.evolve.program import ProgramError, split_block, with_block

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
_MARKER = re.compile(r"^[ \t]*(<<<<<<< SEARCH|=======|>>>>>>> REPLACE)[ \t]*\r?$", re.M)
_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\r?\n(.*?)```", re.S)


@dataclass(frozen=True)
class DiffBlock:
    search: str
    replace: str


def parse_diff(text: str) -> list[DiffBlock]:
    """The SEARCH/REPLACE blocks of a response, in order; a broken marker sequence is a `ProgramError`."""
    order = [SEARCH, DIVIDER, REPLACE]
    blocks: list[DiffBlock] = []
    parts: list[str] = []
    expected = 0
    start = 0
    for m in _MARKER.finditer(text):
        token = m.group(1)
        if token != order[expected]:
            # as OpenEvolve's `extract_diffs`: every marker line counts, so a "=======" banner line
            # outside a block is a broken sequence, not prose
            raise ProgramError(f"diff marker {token!r} where {order[expected]!r} was expected")
        if expected > 0:
            # a section's text ends at its last non-blank character (OpenEvolve's `.rstrip()`): trailing
            # blank lines and spaces before a marker are layout, not text to match or insert
            parts.append(text[start : m.start()].rstrip())
        start = m.end() + 1
        expected = (expected + 1) % 3
        if expected == 0:
            blocks.append(DiffBlock(parts[0], parts[1]))
            parts = []
    if expected:
        raise ProgramError(f"diff ends inside a block (missing {order[expected]!r})")
    return blocks


def _locate(lines: list[str], search: list[str]) -> list[int]:
    size = len(search)
    exact = [i for i in range(len(lines) - size + 1) if lines[i : i + size] == search]
    if exact:
        return exact
    stripped = [s.rstrip() for s in search]
    return [i for i in range(len(lines) - size + 1) if [x.rstrip() for x in lines[i : i + size]] == stripped]


def apply_diff(program: str, blocks: list[DiffBlock]) -> str:
    """Apply every block in order to `program`; each SEARCH must match exactly one place inside the block."""
    if not blocks:
        raise ProgramError("the response holds no SEARCH/REPLACE block")
    before, body, after = split_block(program)
    offset = before.count("\n") + 1
    lines = body.split("\n")
    for n, b in enumerate(blocks, 1):
        search = b.search.split("\n")
        if not b.search.strip():
            raise ProgramError(f"diff block {n}: the SEARCH text is empty")
        hits = _locate(lines, search)
        if not hits:
            whole = program.split("\n")
            if _locate(whole, search):
                raise ProgramError(f"diff block {n}: the SEARCH text is outside the EVOLVE-BLOCK")
            raise ProgramError(
                f"diff block {n}: the SEARCH text is not in the program (first line: {search[0][:80]!r})"
            )
        if len(hits) > 1:
            where = ", ".join(str(offset + h + 1) for h in hits[:5])
            raise ProgramError(f"diff block {n}: the SEARCH text matches {len(hits)} places (lines {where})")
        i = hits[0]
        lines[i : i + len(search)] = b.replace.split("\n")
    changed = "\n".join(lines)
    if changed == body:
        raise ProgramError("the diff changes nothing")
    return f"{before}\n{changed}\n{after}"


def extract_rewrite(text: str) -> str:
    """The program of a full rewrite: the first fenced code block, else the whole text."""
    m = _FENCE.search(text)
    return (m.group(1) if m else text).strip("\n") + "\n"


def apply_response(parent: str, response: str) -> tuple[str, str]:
    """(child program, "diff" | "rewrite") from a proposer's response; the parent's frame is kept."""
    if SEARCH in response:
        return apply_diff(parent, parse_diff(response)), "diff"
    rewrite = extract_rewrite(response)
    try:
        child = with_block(parent, rewrite)
    except ProgramError as exc:
        raise ProgramError(f"the response is neither a SEARCH/REPLACE diff nor a program: {exc}") from None
    if split_block(child)[1] == split_block(parent)[1]:
        raise ProgramError("the rewrite changes nothing")
    return child, "rewrite"


def make_diff(old: str, new: str) -> str:
    """A SEARCH/REPLACE rendering of `old` → `new`: one block over the changed lines of the EVOLVE-BLOCK,
    widened by context lines until its SEARCH text is unique (applying it to `old` gives `new`); ProgramError
    when no such block exists (a change whose lines end in whitespace only, at the block's end)."""
    a, b = split_block(old)[1].split("\n"), split_block(new)[1].split("\n")
    if a == b:
        return ""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo, hi_a, hi_b = head, len(a) - tail, len(b) - tail

    # widen until the SEARCH text is unique, the REPLACE text is not empty ("" would leave a blank line)
    # and neither ends in whitespace (a reader drops it, as OpenEvolve's does)
    def fits() -> bool:
        search, replace = "\n".join(a[lo:hi_a]), "\n".join(b[lo:hi_b])
        kept = search == search.rstrip() and replace == replace.rstrip()
        return hi_b > lo and kept and bool(search.strip()) and len(_locate(a, a[lo:hi_a])) == 1

    while not fits():
        if lo == 0 and hi_a == len(a):
            raise ProgramError(
                "this change cannot be written as a SEARCH/REPLACE diff: the changed lines end in "
                "whitespace only, which every reader (OpenEvolve's too) drops"
            )
        if lo > 0:
            lo -= 1
        if hi_a < len(a):
            hi_a, hi_b = hi_a + 1, hi_b + 1
    search, replace = "\n".join(a[lo:hi_a]), "\n".join(b[lo:hi_b])
    return f"{SEARCH}\n{search}\n{DIVIDER}\n{replace}\n{REPLACE}\n"
