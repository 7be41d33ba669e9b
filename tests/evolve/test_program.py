"""Task programs are data: parsed, never run. Code of any kind is refused with its line, whatever it would do."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.evolve.program import (
    MAX_PROGRAM_CHARS,
    ProgramError,
    TaskSpec,
    parse_program,
    render_program,
    split_block,
)

from .builders import program_of, spec_of


def _with_block(program: str, block: str) -> str:
    before, _, after = split_block(program)
    return f"{before}\n{block}\n{after}"


def test_a_seed_round_trips(cancel):
    text = program_of(cancel)
    domain, spec = parse_program(text)
    assert domain == "clinic"
    assert spec == spec_of(cancel)
    assert spec.ground_truth_calls[1].tool == "cancel_appointment"


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("block", "says"),
    [
        ("    while True:\n        pass", "While"),
        ("    return [0] * 10 ** 10", "BinOp"),
        ("    return 'x' * (1 << 40)", "BinOp"),
        ("    import os\n    return {}", "Import"),
        ("    return __import__('os').system('true')", "Call"),
        ("    return {'public_request': open('/etc/passwd').read()}", "Call"),
        ("    return [x for x in range(10 ** 12)]", "ListComp"),
        ("    return {'a': true}", "write True"),
        ("    return {'a': null}", "write None"),
        ("    return get_task()", "Call"),
        ("    return {'a': lambda: 1}", "Lambda"),
        ("    return {1, 2}", "Set"),
    ],
)
def test_code_in_the_block_is_refused_not_run(cancel, block, says):
    """A loop that never ends, unbounded allocation, imports and calls are refused at once, by line."""
    with pytest.raises(ProgramError, match=says):
        parse_program(_with_block(program_of(cancel), block))


def test_opening_a_file_is_refused_and_nothing_is_written(cancel, tmp_path: Path):
    target = tmp_path / "written-by-the-program"
    block = f"    return {{'public_request': open({str(target)!r}, 'w').write('x')}}"
    with pytest.raises(ProgramError, match="Call is code"):
        parse_program(_with_block(program_of(cancel), block))
    assert not target.exists()


def test_code_outside_the_block_is_refused(cancel):
    text = program_of(cancel).replace('DOMAIN = "clinic"', 'import os\nDOMAIN = "clinic"')
    with pytest.raises(ProgramError, match="outside the EVOLVE-BLOCK"):
        parse_program(text)


def test_the_domain_is_a_built_in_name_not_a_path(cancel):
    text = program_of(cancel).replace('DOMAIN = "clinic"', 'DOMAIN = "../../etc/spec.yaml"')
    with pytest.raises(ProgramError, match="DOMAIN"):
        parse_program(text)


def test_markers_must_be_one_block(cancel):
    text = program_of(cancel)
    with pytest.raises(ProgramError, match="no EVOLVE-BLOCK"):
        parse_program(text.replace("EVOLVE-BLOCK", "EVOLVE BLOCK"))
    with pytest.raises(ProgramError, match="exactly one EVOLVE-BLOCK"):
        parse_program(text + "# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-END\n")


@pytest.mark.timeout(20)
def test_sizes_and_depths_are_bounded(cancel):
    with pytest.raises(ProgramError, match="limit"):
        parse_program("x" * (MAX_PROGRAM_CHARS + 1))
    deep = "    return " + "[" * 60 + "]" * 60
    with pytest.raises(ProgramError, match=r"nested deeper|not valid Python"):
        parse_program(_with_block(program_of(cancel), deep))
    huge_int = "    return {'a': " + "9" * 5000 + "}"
    with pytest.raises(ProgramError):
        parse_program(_with_block(program_of(cancel), huge_int))
    with pytest.raises(ProgramError, match="not finite"):
        parse_program(_with_block(program_of(cancel), "    return {'a': 1e999}"))


def test_the_literal_is_checked_against_the_task_model(cancel):
    with pytest.raises(ProgramError, match="ground_truth_calls"):
        parse_program(
            _with_block(
                program_of(cancel), "    return {'public_request': 'hi', 'instruction': {'intent': 'x'}}"
            )
        )
    with pytest.raises(ProgramError, match=r"Extra inputs|extra"):
        parse_program(
            _with_block(
                program_of(cancel),
                "    return {'public_request': 'hi', 'instruction': {'intent': 'x'}, "
                "'ground_truth_calls': [{'tool': 't'}], 'code': 'import os'}",
            )
        )


_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**9), 10**9)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


@settings(deadline=None, max_examples=60)
@given(
    request=_text,
    intent=_text,
    facts=st.dictionaries(_text, _text, max_size=4),
    args=st.dictionaries(_text, _value, max_size=4),
)
def test_any_task_renders_to_a_program_that_parses_back_to_it(request, intent, facts, args):
    spec = TaskSpec.model_validate(
        {
            "public_request": request,
            "instruction": {"intent": intent, "facts": facts},
            "ground_truth_calls": [{"tool": "some_tool", "arguments": args}],
        }
    )
    domain, back = parse_program(render_program("clinic", spec))
    assert domain == "clinic"
    assert back == spec
