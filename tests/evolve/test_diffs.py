"""SEARCH/REPLACE diffs and full rewrites in OpenEvolve's format, applied strictly, and checked against
OpenEvolve's own parser (the `openevolve` package)."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.evolve.diffs import (
    DIVIDER,
    REPLACE,
    SEARCH,
    DiffBlock,
    apply_diff,
    apply_response,
    make_diff,
    parse_diff,
)
from toolshift.evolve.program import ProgramError, parse_program, split_block

from .builders import program_of


def _diff(search: str, replace: str) -> str:
    return f"Here is my change.\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def test_a_diff_changes_the_block(cancel):
    parent = program_of(cancel)
    response = _diff(
        '        "public_request": "I need to cancel my appointment.",',
        '        "public_request": "Please cancel APT-00003 for me.",',
    )
    child, kind = apply_response(parent, response)
    assert kind == "diff"
    _, spec = parse_program(child)
    assert spec.public_request == "Please cancel APT-00003 for me."


def test_a_search_that_is_not_there_is_refused(cancel):
    with pytest.raises(ProgramError, match="not in the program"):
        apply_response(program_of(cancel), _diff("    nothing like this", "    x"))


def test_an_ambiguous_search_is_refused(cancel):
    text = program_of(cancel)
    line = next(x for x in text.split("\n") if '"appointment_id": "APT-00003"' in x)
    assert text.split("\n").count(line) == 2
    with pytest.raises(ProgramError, match="matches 2 places"):
        apply_response(text, _diff(line, line.replace("3", "4")))


def test_a_search_outside_the_block_is_refused(cancel):
    with pytest.raises(ProgramError, match="outside the EVOLVE-BLOCK"):
        apply_response(program_of(cancel), _diff('DOMAIN = "clinic"', 'DOMAIN = "library"'))


def test_broken_marker_sequences_are_refused():
    with pytest.raises(ProgramError, match="expected"):
        parse_diff("<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n")
    with pytest.raises(ProgramError, match="ends inside"):
        parse_diff("<<<<<<< SEARCH\na\n=======\nb\n")
    with pytest.raises(ProgramError, match="expected"):  # a banner line is a marker out of place
        parse_diff("=======\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n")
    assert parse_diff("# ======= a comment, not a marker\n") == []


def test_a_sections_trailing_blank_lines_and_spaces_are_dropped():
    text = "<<<<<<< SEARCH\na\n\n  \n=======\n\nb  \n\n>>>>>>> REPLACE\n"
    assert parse_diff(text) == [DiffBlock("a", "\nb")]


def test_a_rewrite_keeps_the_parents_frame(cancel):
    parent = program_of(cancel)
    new = parent.replace("I need to cancel my appointment.", "Cancel it, please.")
    tampered = new.replace('DOMAIN = "clinic"', 'DOMAIN = "library"')
    child, kind = apply_response(parent, f"Sure:\n```python\n{tampered}```\nDone.")
    assert kind == "rewrite"
    domain, spec = parse_program(child)
    assert domain == "clinic"
    assert spec.public_request == "Cancel it, please."


def test_a_rewrite_without_markers_is_refused(cancel):
    with pytest.raises(ProgramError, match="neither a SEARCH/REPLACE diff nor a program"):
        apply_response(program_of(cancel), "```python\ndef get_task():\n    return {}\n```")


@settings(deadline=None, max_examples=40)
@given(st.data())
def test_make_diff_applies_back_to_the_child(cancel, data):
    """Any change of the block's lines: the rendered diff, applied to the parent, gives the child."""
    parent = program_of(cancel)
    before, block, after = split_block(parent)
    lines = block.split("\n")
    i = data.draw(st.integers(0, len(lines) - 1))
    j = data.draw(st.integers(i, len(lines)))
    new = data.draw(
        st.lists(
            st.text(
                st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=20
            ).filter(
                lambda t: (
                    "EVOLVE-BLOCK" not in t
                )  # a marker line is another program, not a change of this block
            ),
            max_size=3,
        )
    )
    changed = lines[:i] + new + lines[j:]
    child = f"{before}\n" + "\n".join(changed) + f"\n{after}"
    try:
        text = make_diff(parent, child)
    except ProgramError as exc:
        # only a block left empty or ending in whitespace has no SEARCH/REPLACE form: every reader
        # (OpenEvolve's too) drops a section's trailing whitespace, and an empty REPLACE leaves a blank line
        assert "cannot be written as a SEARCH/REPLACE diff" in str(exc)
        text = "\n".join(changed)
        assert not text.strip() or text != text.rstrip()
        return
    if child == parent:
        assert text == ""
        return
    assert apply_diff(parent, parse_diff(text)) == child


openevolve = pytest.importorskip("openevolve.utils.code_utils", reason="openevolve is not installed")


def _line(text: str, needle: str) -> str:
    return next(x for x in text.split("\n") if needle in x)


@pytest.mark.parametrize("blocks", [1, 2])
def test_we_read_and_apply_diffs_as_openevolve_does(cancel, blocks):
    parent = program_of(cancel)
    request, intent = _line(parent, '"public_request"'), _line(parent, '"intent"')
    motivation = _line(parent, '"motivation"')
    response = _diff(request, request.replace("I need to cancel my appointment.", "Cancel it."))
    if blocks == 2:
        new_intent = intent.replace(".", " today.")
        new_motivation = motivation.replace('""', '"A trip came up."')
        response += _diff(intent + "\n" + motivation, new_intent + "\n" + new_motivation)
    ours = [(b.search, b.replace) for b in parse_diff(response)]
    assert ours == openevolve.extract_diffs(response)
    child, _ = apply_response(parent, response)
    assert child == openevolve.apply_diff(parent, response)


def _openevolve_reads(text: str) -> list[tuple[str, str]] | None:
    try:
        return openevolve.extract_diffs(text)
    except ValueError:
        return None


def test_a_banner_before_the_first_block_is_refused_as_openevolve_raises(cancel):
    parent = program_of(cancel)
    line = _line(parent, '"public_request"')
    response = "=======\n" + _diff(line, line.replace("my appointment", "it"))
    assert _openevolve_reads(response) is None
    with pytest.raises(ProgramError, match="'=======' where '<<<<<<< SEARCH' was expected"):
        apply_response(parent, response)


@pytest.mark.parametrize("pad", ["\n", "\n\n", "   \n", "\r\n"])
def test_a_trailing_blank_line_before_the_divider_applies_as_openevolve_applies(cancel, pad):
    parent = program_of(cancel)
    line = _line(parent, '"public_request"')
    new = line.replace("my appointment", "it")
    response = f"<<<<<<< SEARCH\n{line}\n{pad}=======\n{new}\n{pad}>>>>>>> REPLACE\n"
    assert [(b.search, b.replace) for b in parse_diff(response)] == _openevolve_reads(response)
    child, _ = apply_response(parent, response)
    assert child == openevolve.apply_diff(parent, response) != parent


_PROSE = [
    "Here is my change.",
    "",
    "======= my change =======",
    "# =======",
    "Done.",
    "=======",
    ">>>>>>> REPLACE",
]
_PADS = ["", "", "", "\n", "\n\n", "  ", "\n \t\n"]
_EDGES = ["", "", " ", "\t", "  "]


def _generated_diff(rng: random.Random, body: list[str]) -> str:
    """A proposer-like response: 0-3 blocks over the block's lines, with the layout a model varies (blank
    lines and spaces around markers, indented markers, prose and stray markers between blocks, CRLF)."""
    out: list[str] = []
    for _ in range(rng.choice([0, 1, 1, 1, 1, 2, 2, 3])):
        if rng.random() < 0.3:
            out.append(rng.choice(_PROSE[:5] if rng.random() < 0.8 else _PROSE))
        i = rng.randrange(len(body))
        search = body[i : i + rng.choice([1, 2, 3, 3])]
        if rng.random() < 0.1:
            search = [rng.choice(["    nothing like this", "", '"appointment_id": "APT-00003",'])]
        replace = [x + "  # changed" if rng.random() < 0.7 else x for x in search]
        if rng.random() < 0.15:
            replace = rng.choice([[], [""], search, [*replace, "        # added"]])
        marks = [rng.choice(_EDGES) + m + rng.choice(_EDGES) for m in (SEARCH, DIVIDER, REPLACE)]
        if rng.random() < 0.05:
            marks[rng.randrange(3)] = ""
        out.append(marks[0])
        out.append("\n".join(search) + rng.choice(_PADS))
        out.append(marks[1])
        out.append("\n".join(replace) + rng.choice(_PADS))
        out.append(marks[2])
    if rng.random() < 0.2:
        out.insert(rng.randrange(len(out) + 1), rng.choice(_PROSE))
    text = "\n".join(x for x in out) + "\n"
    return text.replace("\n", "\r\n") if rng.random() < 0.1 else text


def _openevolve_child(parent: str, text: str) -> str | None:
    """OpenEvolve's child of `parent` (its diff path in process_parallel.py), None where it rejects."""
    blocks = _openevolve_reads(text)
    if not blocks:
        return None
    child, applied = openevolve.apply_diff_blocks(parent, blocks)
    if applied == 0 or child == parent:
        return None
    try:
        return openevolve.enforce_evolve_blocks(parent, child)
    except ValueError:
        return None


_STRICTER = ("not in the program", "outside the EVOLVE-BLOCK", "matches", "SEARCH text is empty")
_REASONS = ("no SEARCH/REPLACE block", "changes nothing", *_STRICTER)


def test_generated_diffs_read_and_apply_as_openevolve_does(cancel):
    """3,000 generated responses: both readers accept or refuse the same texts and read the same blocks; a
    child we make is OpenEvolve's child; we refuse only what OpenEvolve rejects, or for D86's reasons."""
    parent = program_of(cancel)
    body = split_block(parent)[1].split("\n")
    rng = random.Random(30)
    tally: Counter[str] = Counter()
    for n in range(3000):
        text = _generated_diff(rng, body)
        theirs = _openevolve_reads(text)
        try:
            ours = [(b.search, b.replace) for b in parse_diff(text)]
        except ProgramError:
            ours = None
        assert ours == theirs, f"case {n}: {text!r}"
        first = re.search(r"^[ \t]*(<<<<<<< SEARCH|=======)[ \t]*\r?$", text, re.M)
        tally["edge: '=======' before the first block"] += bool(first and first.group(1) == DIVIDER)
        tally["edge: blank line before '======='"] += bool(
            re.search(r"\n[ \t]*\r?\n[ \t]*=======[ \t]*\r?$", text, re.M)
        )
        if ours is None:
            tally["malformed for both"] += 1
            continue
        their_child = _openevolve_child(parent, text)
        try:
            child = apply_diff(parent, parse_diff(text))
        except ProgramError as exc:
            if their_child is None:
                tally["rejected by both"] += 1
                reason = next((s for s in _REASONS if s in str(exc)), str(exc))
                tally[f"both reject: {reason}"] += 1
            else:
                reason = next((s for s in _STRICTER if s in str(exc)), None)
                assert reason, f"case {n}: {exc} for {text!r}"
                tally["refused by us only (D86)"] += 1
                tally[f"ours only: {reason}"] += 1
            continue
        assert child == their_child, f"case {n}: {text!r}"
        tally["same child"] += 1
    print(sorted(tally.items()))
    assert tally["same child"] >= 900 and tally["malformed for both"] >= 300
    assert tally["refused by us only (D86)"] >= 300 and tally["rejected by both"] >= 300
    assert (
        tally["edge: '=======' before the first block"] >= 50
        and tally["edge: blank line before '======='"] >= 300
    )


def test_a_rendered_diff_with_trailing_spaces_reads_back_in_both_parsers(cancel):
    """make_diff widens its hunk past a line ending in spaces, which either reader would drop."""
    parent = program_of(cancel)
    line = _line(parent, '"motivation"')
    child = parent.replace(line, line + "\n        # a note   ")
    text = make_diff(parent, child)
    assert apply_diff(parent, parse_diff(text)) == child == openevolve.apply_diff(parent, text)
