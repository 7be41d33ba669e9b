"""Bad domain specs: one-line errors naming the file and the key, exit code 2 from the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from toolshift.errors import BadInputError
from toolshift.world import compile_domain
from toolshift.world.spec import load_spec, parse_spec


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
        timeout=60,
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
        timeout=60,
    )
    assert proc.returncode == 2 and str(path) in proc.stderr and "malformed YAML" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unknown_domain_name_suggests():
    proc = subprocess.run(
        [sys.executable, "-m", "toolshift", "world", "tools", "clinik"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "clinic" in proc.stderr
