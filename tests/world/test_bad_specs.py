"""Bad domain specs: one-line errors naming the file and the key, exit code 2 from the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from toolshift.errors import BadInputError
from toolshift.world import compile_domain
from toolshift.world.language.spec import load_spec, parse_spec


def _write(tmp_path: Path, data: dict | str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = _write(tmp_path, "name: x\nentities: [\n  - {name: a\n")
    with pytest.raises(BadInputError) as err:
        load_spec(path)
    assert str(path) in str(err.value) and "malformed YAML at line" in str(err.value)


def test_unknown_field_type_names_the_key(tmp_path, tiny_data):
    tiny_data["entities"][1]["fields"][2]["type"] = "currency"
    with pytest.raises(BadInputError) as err:
        load_spec(_write(tmp_path, tiny_data))
    assert err.value.field == "entities[1].fields[2].type"
    assert "spec.yaml" in str(err.value)


def test_dangling_relation_names_the_key(tmp_path, tiny_data):
    tiny_data["relations"][0]["to"] = "invoice"
    with pytest.raises(BadInputError) as err:
        load_spec(_write(tmp_path, tiny_data))
    assert err.value.field == "relations[0].to" and "invoice" in str(err.value)


def test_dangling_ref_field(tmp_path, tiny_data):
    tiny_data["entities"][1]["fields"][1]["ref"] = "client"
    with pytest.raises(BadInputError) as err:
        load_spec(_write(tmp_path, tiny_data))
    assert err.value.field == "entities[1].fields[1].ref"


def test_action_code_may_return_but_syntax_errors_are_caught(tiny_data):
    tiny_data["actions"][0]["code"] = "return (1 +"
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "inline.yaml")
    assert err.value.field == "actions[0].code" and "syntax error" in str(err.value)
    assert "'ship_order'" in str(err.value)


def test_unknown_generator_kind_names_the_gen_key(tiny_data):
    tiny_data["entities"][0]["fields"][1]["gen"] = {"kind": "lorem"}
    with pytest.raises(BadInputError) as err:
        compile_domain(parse_spec(tiny_data, "inline.yaml"), "inline.yaml")
    assert err.value.field == "entities[0].fields[1].gen" and "lorem" in str(err.value)


def test_bad_generator_dates_name_the_key(tiny_data):
    tiny_data["entities"][1]["fields"][4]["gen"] = {"kind": "date", "start": "someday"}
    with pytest.raises(BadInputError) as err:
        compile_domain(parse_spec(tiny_data, "inline.yaml"), "inline.yaml")
    assert err.value.field == "entities[1].fields[4].gen.start"


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda d: d["entities"][0]["fields"][1].__setitem__("type", "strng"), "entities[0].fields[1].type"),
        (lambda d: d["relations"][0].__setitem__("via", "total"), "relations[0].via"),
    ],
)
def test_cli_prints_one_line_and_exits_2(tmp_path, tiny_data, mutate, key):
    mutate(tiny_data)
    path = _write(tmp_path, tiny_data)
    proc = subprocess.run(
        [sys.executable, "-m", "toolshift", "world", "tools", str(path)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and key in lines[0]


def test_cli_malformed_yaml_exit_2(tmp_path):
    path = _write(tmp_path, "format: toolshift.domain/1\nname: [oops\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolshift",
            "world",
            "compile",
            str(path),
            "--out",
            str(tmp_path / "x.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 2 and str(path) in proc.stderr and "malformed YAML" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unknown_domain_name_suggests():
    proc = subprocess.run(
        [sys.executable, "-m", "toolshift", "world", "tools", "clinik"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 2 and "clinic" in proc.stderr


# --- bounded, strictly read specs (issue 10: "Bad input gets one clear line") -------------------------

BOMB = """\
format: toolshift.domain/1
name: bomb
title: Bomb
entities:
- name: thing
  key: thing_id
  id_format: "T{:03d}"
  rows: 100
  fields:
  - {name: thing_id, type: string}
  - name: blob
    type: text
    gen:
      kind: choice
      values: [&a [lol,lol,lol,lol,lol,lol,lol,lol,lol], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a],
        &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], &d [*c,*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]]
"""


def _one_line_exit_2(path: Path, *command: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "toolshift", "world", *command, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and str(path) in lines[0], proc.stderr
    return lines[0]


def test_a_binary_spec_is_one_line_of_bad_input(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"format: toolshift.domain/1\nname: \xff\xfe\x00\x81 bin\n")
    with pytest.raises(BadInputError) as err:
        load_spec(path)
    assert "not UTF-8 text (byte 0xff at offset 33)" in str(err.value)
    assert "not UTF-8" in _one_line_exit_2(path, "tools")


def test_control_characters_are_one_line(tmp_path):
    path = _write(tmp_path, "format: toolshift.domain/1\nname: a\x07b\n")
    assert "malformed YAML" in _one_line_exit_2(path, "tools")


def test_today_must_be_an_iso_date(tiny_data):
    tiny_data["today"] = "not-a-date"
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "inline.yaml")
    assert err.value.field == "today" and "not an ISO date" in str(err.value)


@pytest.mark.parametrize(
    ("entity", "rows", "field"),
    [(0, 10**9, "entities[0].rows"), (1, 100_000, "entities")],
)
def test_oversized_rows_are_refused(tiny_data, entity, rows, field):
    for e in tiny_data["entities"]:
        e["rows"] = 100_000 if field == "entities" else e["rows"]
    tiny_data["entities"].extend(
        {**tiny_data["entities"][1], "name": f"order{i}", "key": "order_id"}
        for i in range(4 if field == "entities" else 0)
    )
    tiny_data["entities"][entity]["rows"] = rows
    tiny_data["relations"] = []
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "inline.yaml")
    assert err.value.field == field


@pytest.mark.parametrize(
    ("fmt", "why"),
    [
        ("C{:0999999999d}", "not a plain number format"),
        ("C{:>99999}", "not a plain number format"),
        ("C{0.__class__}", "is not the row number"),
        ("C{0[0]}", "is not the row number"),
        ("C{:070d}", "longer than 64 characters"),
        ("C" * 300 + "{}", "longer than 256"),
        ("C{:05d", "unmatched"),
        ("plain", "no {} field"),
    ],
)
def test_unsafe_or_oversized_id_formats_are_refused(tiny_data, fmt, why):
    tiny_data["entities"][0]["id_format"] = fmt
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "inline.yaml")
    assert err.value.field == "entities[0].id_format" and why in str(err.value)


def test_a_yaml_alias_bomb_in_a_generator_is_refused(tmp_path):
    path = _write(tmp_path, BOMB)
    assert len(BOMB.encode()) < 450
    line = _one_line_exit_2(path, "compile", "--out", str(tmp_path / "w.sqlite"))
    assert "entities[0].fields[1].gen.values" in line and "plain value" in line
    assert not (tmp_path / "w.sqlite").exists()


def test_a_yaml_alias_bomb_that_expands_past_the_bound_is_refused_before_it_is_built(tmp_path):
    deeper = BOMB.replace(
        "*d,*d,*d,*d,*d,*d,*d,*d,*d]]", "*d,*d,*d,*d,*d,*d,*d,*d,*d], [*e,*e,*e,*e,*e,*e,*e,*e,*e]]"
    )
    with pytest.raises(BadInputError) as err:
        load_spec(_write(tmp_path, deeper))
    assert "expands to more than 200,000 values" in str(err.value)


def test_recursive_and_deep_yaml_are_refused(tmp_path):
    with pytest.raises(BadInputError) as err:
        load_spec(_write(tmp_path, "name: &a [x, *a]\n"))
    assert "malformed YAML" in str(err.value) or "contains it" in str(err.value)
    with pytest.raises(BadInputError) as err:
        load_spec(_write(tmp_path, "name: " + "[" * 100 + "]" * 100 + "\n"))
    assert "levels deep" in str(err.value)


def test_duplicate_yaml_keys_are_refused_naming_the_line(tmp_path):
    text = yaml.safe_dump(
        {"format": "toolshift.domain/1", "name": "x", "title": "X", "entities": []}, sort_keys=False
    )
    path = _write(tmp_path, text + "name: y\n")
    with pytest.raises(BadInputError) as err:
        load_spec(path)
    assert "duplicate key 'name'" in str(err.value) and "line 5" in str(err.value)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.__setitem__("name", "../../etc/tiny"), "name"),
        (lambda d: d.__setitem__("tool_prefix", "my shop "), "tool_prefix"),
        (lambda d: d.__setitem__("tool_prefix", "p" * 65), "tool_prefix"),
        (lambda d: d["actions"][0].__setitem__("name", "ship order!"), "actions[0].name"),
        (lambda d: d["actions"][0]["params"][0].__setitem__("name", "order-id"), "actions[0].params[0].name"),
        (lambda d: d["entities"][0].__setitem__("plural", "Customers Now"), "entities[0].plural"),
        (lambda d: d["relations"][0].__setitem__("name", "all orders"), "relations[0].name"),
    ],
)
def test_names_that_make_tool_names_are_validated(tiny_data, mutate, field):
    mutate(tiny_data)
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "inline.yaml")
    assert err.value.field == field


def test_a_generated_tool_name_longer_than_mcp_allows_names_its_source(tiny_data):
    tiny_data["tool_prefix"] = "p" * 60
    tiny_data["actions"][0]["name"] = "ship_" + "x" * 70
    with pytest.raises(BadInputError) as err:
        compile_domain(parse_spec(tiny_data, "inline.yaml"), "inline.yaml")
    assert err.value.field == "actions[0].name" and "not an MCP tool name" in str(err.value)


@pytest.mark.parametrize(
    ("where", "default", "why"),
    [
        ((0, 2), "yes", "'yes' is not a bool value"),
        ((0, 3), "12.5", "is not a money value"),
        ((1, 3), "closed", "is not one of ['open', 'shipped']"),
        ((1, 4), "2026-13-01", "is not an ISO date"),
        ((1, 4), 20260101, "is not a date value"),
    ],
)
def test_a_field_default_of_the_wrong_type_is_refused(tiny_data, where, default, why):
    entity, field = where
    tiny_data["entities"][entity]["fields"][field]["default"] = default
    tiny_data["entities"][entity]["fields"][field]["required"] = False
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "inline.yaml")
    assert err.value.field == f"entities[{entity}].fields[{field}].default" and why in str(err.value)


def test_a_parameter_default_of_the_wrong_type_is_refused(tiny_data):
    tiny_data["actions"][0]["params"].append(
        {"name": "rush", "type": "bool", "required": False, "default": 1}
    )
    with pytest.raises(BadInputError) as err:
        parse_spec(tiny_data, "inline.yaml")
    assert err.value.field == "actions[0].params[1].default"


@pytest.mark.parametrize(
    ("gen", "key"),
    [
        ({"kind": "pattern", "format": "N{n:0999999999d}"}, ""),
        ({"kind": "pattern", "format": "N{n.__class__}"}, ""),
        ({"kind": "sentence", "min": 1, "max": 10**9}, ""),
        ({"kind": "const", "value": "x" * 20_000}, ".value"),
        ({"kind": "choice", "values": ["a"] * 20_000}, ".values"),
        ({"kind": "choice", "values": [["nested"]]}, ".values"),
    ],
)
def test_generators_that_would_make_huge_values_are_refused(tiny_data, gen, key):
    tiny_data["entities"][0]["fields"][1]["gen"] = gen
    with pytest.raises(BadInputError) as err:
        compile_domain(parse_spec(tiny_data, "inline.yaml"), "inline.yaml")
    assert err.value.field == f"entities[0].fields[1].gen{key}"
