"""SEARCH/REPLACE diffs and full rewrites in OpenEvolve's format, applied strictly, and checked against
OpenEvolve's own parser (the `openevolve` package)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.evolve.diffs import DiffBlock, apply_diff, apply_response, make_diff, parse_diff
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
            st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=20),
            max_size=3,
        )
    )
    changed = lines[:i] + new + lines[j:]
    child = f"{before}\n" + "\n".join(changed) + f"\n{after}"
    text = make_diff(parent, child)
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
