"""Every file toolshift reads, given binary bytes or JSON nested 100,000 deep: one BadInputError naming the file.

Never a `UnicodeDecodeError` or `RecursionError` traceback: every reader goes through `toolshift.fileio`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolshift.errors import BadInputError
from toolshift.fileio import MAX_JSON_DEPTH, json_depth, loads_json

BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x80\x81"
DEEP = "[" * 100_000 + "]" * 100_000


def _deep_object(key: str = "deep", **fields: object) -> str:
    """A JSON object of `fields` whose `key` holds 100,000 nested lists."""
    return json.dumps({**fields, key: None}).replace("null", DEEP)


def _catalog(path: Path) -> None:
    from toolshift.traces.catalog import load_catalog

    load_catalog(path)


def _episodes(path: Path) -> None:
    from toolshift.traces.store import iter_episodes

    list(iter_episodes(path))


def _tasks(path: Path) -> None:
    from toolshift.taskfile import read_tasks

    read_tasks(path)


def _flow(path: Path) -> None:
    from toolshift.flows.model import load_flow

    load_flow(path)


def _tau2(path: Path) -> None:
    from toolshift.traces.tau2 import convert_tau2

    convert_tau2(path)


def _taubench(path: Path) -> None:
    from toolshift.traces.taubench import convert_taubench_v1

    convert_taubench_v1(path, domain="airline")


def _workbench(path: Path) -> None:
    from toolshift.traces.workbench import convert_workbench_csv

    convert_workbench_csv(path)


def _manifest(path: Path) -> None:
    from toolshift.bench.build import load_manifest

    load_manifest(path.parent)


def _graph(path: Path) -> None:
    from toolshift.bench.graph import DependencyGraph

    DependencyGraph.load(path)


READERS: dict[str, tuple[str, Callable[[Path], None], str]] = {
    # name: (file name, reader, a deeply nested document of the right shape)
    "catalog": ("d.catalog.json", _catalog, _deep_object(format="toolshift.catalog/1", domain="d")),
    "episodes": ("x.episodes.jsonl", _episodes, '{"format": "toolshift.episodes/1"}\n' + _deep_object(id="a") + "\n"),
    "tasks": ("t.jsonl", _tasks, _deep_object(id="t") + "\n"),
    "flow": ("f.json", _flow, _deep_object(kind="toolshift.flow", format=1)),
    "tau2": ("results.json", _tau2, _deep_object(key="simulations")),
    "taubench": ("gpt-4o-airline.json", _taubench, DEEP),
    "workbench": ("gpt-4_all_2024-03-23_21-56-59.csv", _workbench, ""),  # CSV: binary only
    "manifest": ("manifest.json", _manifest, _deep_object(format="toolshift.bench-build/1")),
    "graph": ("graph.json", _graph, _deep_object(format="toolshift.bench-graph/1")),
}  # fmt: skip


CASES = [
    (name, kind)
    for name in sorted(READERS)
    for kind in ("binary", "deep")
    if kind == "binary" or READERS[name][2]
]


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_every_reader_names_the_file_of_binary_or_deeply_nested_input(tmp_path, name, kind):
    file_name, read, deep = READERS[name]
    path = tmp_path / "email" / file_name  # WorkBench reads the domain from the folder
    path.parent.mkdir()
    if kind == "binary":
        path.write_bytes(
            BINARY if name != "episodes" else b'{"format": "toolshift.episodes/1"}\n' + BINARY + b"\n"
        )
    else:
        path.write_text(deep)
    with pytest.raises(BadInputError) as err:
        read(path)
    assert err.value.source == str(path)
    assert ("not UTF-8" if kind == "binary" else "nested more than") in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_refuses_a_fifo_without_waiting_on_it(tmp_path, name):
    """A FIFO where a file should be is refused at once (opened without blocking, then checked): before,
    `traces convert` and a `loop` resume waited for a writer forever (issue 56)."""
    import threading

    file_name, read, _ = READERS[name]
    path = tmp_path / "email" / file_name
    path.parent.mkdir()
    os.mkfifo(path)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            read(path)
            outcome.append(None)
        except BaseException as exc:  # what escaped is the finding
            outcome.append(exc)

    reader = threading.Thread(target=attempt, daemon=True)
    reader.start()
    reader.join(timeout=60)
    if reader.is_alive():  # let the blocked open return, so the thread ends with the test
        with open(path, "wb"):
            pass
        pytest.fail(f"{name} waited on a FIFO")
    assert isinstance(outcome[0], BadInputError), outcome
    assert str(path) in str(outcome[0]) and "\n" not in str(outcome[0])


def test_the_command_line_prints_one_line_and_exits_2(tmp_path):
    path = tmp_path / "d.catalog.json"
    path.write_bytes(BINARY)
    episodes = tmp_path / "x.episodes.jsonl"
    episodes.write_text('{"format": "toolshift.episodes/1"}\n')
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    args = [sys.executable, "-m", "toolshift", "traces", "stats", str(episodes), "--catalog", str(path)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and str(path) in done.stderr and "not UTF-8" in done.stderr


def test_a_deep_tool_argument_inside_a_converted_run_is_named(tmp_path):
    """τ-bench logs arguments as a JSON string: a deep one inside an otherwise valid file names its field."""
    from toolshift.traces.taubench import convert_taubench_v1

    call = {"id": "c", "type": "function", "function": {"name": "get_user_details", "arguments": DEEP}}
    task = {"user_id": "u", "actions": [], "instruction": "i", "outputs": []}
    run = {"task_id": 0, "trial": 0, "reward": 1.0, "info": {"task": task, "reward_info": {}},
           "traj": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]}]}  # fmt: skip
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps([run]))
    with pytest.raises(BadInputError, match="nested more than") as err:
        convert_taubench_v1(path)
    assert err.value.source == str(path) and err.value.field.endswith("function.arguments")


def test_a_catalog_listing_a_tool_twice_with_conflicting_effects_is_refused(tmp_path):
    from toolshift.traces.catalog import load_catalog

    tools = [
        {"name": "get_user", "effect": "read", "origin": "source"},
        {"name": "cancel", "effect": "write", "origin": "source"},
        {"name": "get_user", "effect": "write", "origin": "manual"},
    ]
    path = tmp_path / "d.catalog.json"
    path.write_text(json.dumps({"format": "toolshift.catalog/1", "domain": "d", "tools": tools}))
    with pytest.raises(BadInputError, match="listed twice with conflicting effects") as err:
        load_catalog(path)
    assert (err.value.source, err.value.record, err.value.field) == (str(path), 2, "effect")
    tools[2]["effect"] = "read"  # the same label twice is only a repetition
    path.write_text(json.dumps({"format": "toolshift.catalog/1", "domain": "d", "tools": tools}))
    assert load_catalog(path).effects() == {"get_user": "read", "cancel": "write"}


def test_depth_is_counted_without_recursion_and_strings_do_not_count():
    assert json_depth(DEEP) > MAX_JSON_DEPTH
    assert json_depth('{"a": "[[[[{{{{", "b": [["\\"]]]"]]}') == 3
    assert json_depth('["\\\\", {"x": "\\u005b"}]') == 2
    assert json_depth('[["]", "["], {"k": "}", "v": [""]}]') == 3  # adjacent strings, brackets inside
    with pytest.raises(BadInputError, match="nested more than"):
        loads_json("[" * 100_000)  # unbalanced as well as deep


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1])
@pytest.mark.parametrize("tail", ["", ", oops"])
def test_the_bound_is_the_same_on_both_parsers(depth, tail):
    """pydantic-core's parser (the fast path) and the standard library's (malformed text) share the bound."""
    text = "[" * depth + "]" * depth
    if tail:
        text = text[:-1] + tail + "]"  # malformed: only the standard library's parser says why
    if depth > MAX_JSON_DEPTH:
        with pytest.raises(BadInputError, match=f"nested more than {MAX_JSON_DEPTH} levels"):
            loads_json(text)
    elif tail:
        with pytest.raises(BadInputError, match="not JSON"):
            loads_json(text)
    else:
        assert loads_json(text) is not None


def test_json_python_cannot_hold_is_bad_input():
    with pytest.raises(BadInputError, match="4300 digits") as err:
        loads_json("[" + "9" * 5000 + "]", source="--args")
    assert err.value.source == "--args"


def test_what_only_the_standard_parser_reads_is_still_read():
    assert loads_json(b"\xef\xbb\xbf[1]") == [1]  # a byte-order mark
    assert loads_json("[1, 2, 12345678901234567890123]") == [1, 2, 12345678901234567890123]
    assert loads_json('["\\ud83d\\ude00", 1.5e300]') == ["\U0001f600", 1.5e300]  # a surrogate pair is text


@pytest.mark.parametrize(
    ("text", "field", "why"),
    [
        ('{"a": [1, {"b": NaN}]}', "a[1].b", "nan is not a JSON number"),
        ('{"a": Infinity}', "a", "inf is not a JSON number"),
        ('{"a": [2, -1e400]}', "a[1]", "-inf is not a JSON number"),
        ('{"a": 1E+999}', "a", "inf is not a JSON number"),
        ('{"a": ' + "9" * 400 + ".5}", "a", "inf is not a JSON number"),
        ('{"x": ["ok", "a\\ud800b"]}', "x[1]", "lone surrogate \\ud800 at character 1"),
        ('{"\\udc00": 1}', "\\udc00", "lone surrogate \\udc00"),
    ],
)
def test_json_is_strict_naming_the_field_of_a_nan_an_infinity_or_a_lone_surrogate(text, field, why):
    """What strict parsers refuse and UTF-8 cannot hold is refused where it is read, naming the field (D301),
    never read as a float or a string that nothing can write again."""
    for given in (text, text.encode()):
        with pytest.raises(BadInputError) as err:
            loads_json(given, source="f.json", record=3)
        assert (err.value.source, err.value.record, err.value.field) == ("f.json", 3, field)
        assert why in str(err.value) and "\n" not in str(err.value)
