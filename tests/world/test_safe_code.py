"""Data must not run code: a spec's `check` / `code` is refused at load outside the safe subset, and bounded at run time."""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolshift.errors import BadInputError
from toolshift.world import World, compile_domain
from toolshift.world.language.spec import parse_spec


def _with_action(
    tiny_data: dict[str, Any], code: str, *, effect: str = "write", **extra: Any
) -> dict[str, Any]:
    """A copy of the tiny spec with one more action, `probe`, running `code`."""
    tiny_data = copy.deepcopy(tiny_data)
    tiny_data["actions"].append(
        {
            "name": "probe",
            "description": "An action under test.",
            "effect": effect,
            "params": [{"name": "customer_id", "type": "ref", "ref": "customer", "required": False}],
            "code": code,
            **extra,
        }
    )
    return tiny_data


def _world(data: dict[str, Any]) -> World:
    return World(compile_domain(parse_spec(data, "probe.yaml"), "probe.yaml"))


ESCAPES = [
    ("import os\nos.system('touch /tmp/pwned')", "import is not allowed"),
    ("os.system('touch /tmp/pwned')", "unknown name 'os'"),
    ("return args.system('touch /tmp/pwned')", "the method .system() is not allowed"),
    ("__import__('os').system('touch /tmp/pwned')", "'__import__' is not allowed"),
    ("return open('/etc/passwd').read()", "open() cannot be called"),
    ("return ().__class__.__bases__[0].__subclasses__()", "attribute access (.__bases__)"),
    ("return [c for c in ().__class__.__base__.__subclasses__()]", "attribute access"),
    ("return get.__self__.conn", "attribute access (.conn)"),
    ("return args.__class__", "attribute access (.__class__)"),
    ("return '{0.__class__}'.format(args)", "the method .format() is not allowed"),
    ("return eval('1 + 1')", "eval() cannot be called"),
    ("return getattr(args, 'get')", "getattr() cannot be called"),
    ("return type(args)", "type() cannot be called"),
    ("return globals()", "globals() cannot be called"),
    ("f = get\nreturn f('customer', 'C001')", "get can only be called"),
    ("get = 1", "'get' names a helper or builtin"),
    ("return sorted([1], key=str)", "str can only be called"),
    ("g = lambda: 1", "lambda"),
    ("def f():\n    return 1", "def is not allowed"),
    ("class X:\n    pass", "class is not allowed"),
    ("while True:\n    pass", "while"),
    ("try:\n    pass\nexcept Exception:\n    pass", "try is not allowed"),
    ("raise SystemExit(1)", "raise"),
    ("x = [1]\nx.clear()", "the method .clear() is not allowed"),
    ("return f'{1:999999999}'", "format spec"),
    ("return (x := 1)", "the := operator"),
    ("return 1 << 100000", "LShift"),
    ("return b'x'", "constant bytes"),
]


@pytest.mark.parametrize(("code", "why"), ESCAPES)
def test_code_outside_the_subset_is_refused_at_load(tiny_data, code, why):
    with pytest.raises(BadInputError) as err:
        parse_spec(_with_action(tiny_data, code), "probe.yaml")
    index = len(tiny_data["actions"])
    assert err.value.field == f"actions[{index}].code"
    assert "probe.yaml" in str(err.value) and "'probe'" in str(err.value) and why in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_a_check_outside_the_subset_is_refused_at_load_naming_the_precondition(tiny_data):
    pre = {"check": "__import__('os').system('true') == 0", "code": "nope", "message": "no"}
    with pytest.raises(BadInputError) as err:
        parse_spec(_with_action(tiny_data, "return 1", preconditions=[pre]), "probe.yaml")
    assert err.value.field == f"actions[{len(tiny_data['actions'])}].preconditions[0].check"


def test_a_message_may_only_name_parameters_today_and_now(tiny_data):
    pre = {"check": "True", "code": "nope", "message": "{customer_id.__class__.__mro__}"}
    with pytest.raises(BadInputError) as err:
        parse_spec(_with_action(tiny_data, "return 1", preconditions=[pre]), "probe.yaml")
    assert err.value.field.endswith("preconditions[0].message")


def test_an_action_labelled_read_cannot_call_write_helpers(tiny_data):
    with pytest.raises(BadInputError) as err:
        parse_spec(
            _with_action(tiny_data, "update('customer', 'C001', vip=True)", effect="read"), "probe.yaml"
        )
    assert "labelled read, so it cannot call update()" in str(err.value)


def test_a_read_action_called_from_a_write_cannot_write_through_call(tiny_data):
    tiny_data["actions"].append(
        {
            "name": "outer",
            "description": "A write that calls a read.",
            "effect": "write",
            "code": "return call('probe', {'customer_id': 'C001'})",
        }
    )
    world = _world(
        _with_action(
            tiny_data,
            "return call('update_customer', {'customer_id': customer_id, 'vip': True})",
            effect="read",
        )
    )
    before = world.snapshot()
    for tool in ("probe", "outer"):
        r = world.call(tool, {"customer_id": "C001"} if tool == "probe" else {})
        assert not r.ok and r.error["code"] == "read_only", r
    assert world.changes_since(before) == []


def test_a_registered_read_implementation_cannot_write_even_when_nested(tiny_data):
    tiny_data["actions"].append(
        {
            "name": "outer",
            "description": "Calls the sneaky read.",
            "effect": "write",
            "code": "return call('sneaky_read', args)",
            "params": [{"name": "customer_id", "type": "string"}],
        }
    )
    world = _world(tiny_data)
    before = world.snapshot()
    r = world.call("outer", {"customer_id": "C001"})
    assert not r.ok and "labelled read but tried to write" in r.error["message"]
    assert world.changes_since(before) == []


RUNAWAYS = [
    "items = [1]\nfor x in items:\n    items.append(x)",
    "return 'x' * 10 ** 9",
    "return [0] * 10 ** 9",
    "return 7 ** 10 ** 9",
    "n = 2\nfor i in [1] * 40:\n    n = n * n\nreturn 1",
    "s = 'ab'\nfor i in [1] * 40:\n    s = s + s\nreturn len(s)",
    "a = [0] * 100000\nb = [a] * 100000\nreturn str(b)",
    "a = [0] * 100000\nreturn [a] * 100000",
    "a = [0] * 100000\nreturn [a] * 100000 == [[0] * 100000] * 100000",
    "a = 'x' * 1000000\nreturn ','.join([a] * 1000)",
    "a = 'x' * 100000\nreturn f'{[a] * 100000}'",
    "return round(5, -10 ** 9)",
    "return call('probe', args)",
    "t = ()\nfor i in [1] * 1000:\n    t = (t,)\nreturn {t}",
    "t = ()\nfor i in [1] * 500:\n    for j in [1] * 500:\n        t = (t,)\nreturn t in {t}",
]


@pytest.mark.parametrize("code", RUNAWAYS)
def test_runaway_code_is_stopped_with_a_clear_error_and_rolled_back(tiny_data, code):
    world = _world(_with_action(tiny_data, "update('customer', 'C001', name='changed')\n" + code))
    before = world.snapshot()
    r = world.call("probe", {})
    assert not r.ok and r.error["code"] == "limit_exceeded", r
    assert 0 < len(r.error["message"]) < 200
    assert world.changes_since(before) == []
    assert world.call("get_customer", {"customer_id": "C001"}).ok


def test_sum_adds_numbers_only(tiny_data):
    world = _world(_with_action(tiny_data, "return sum([[1]] * 1000, [])"))
    assert world.call("probe", {}).error["code"] == "invalid_code"


INTERPRETED = [
    ("return [x * 2 for x in [1, 2, 3] if x != 2]", [2, 6]),
    ("return {k: v for k, v in [('a', 1), ('b', 2)]}", {"a": 1, "b": 2}),
    ("return sorted({'b', 'a'} | {'c'})", ["a", "b", "c"]),
    ("d = {(1, 2): 'pair', 'k': 'v'}\nreturn d[1, 2], d['k'], 'v' in ('u', 'v'), ('u', today) != ('u', now)", ["pair", "v", True, True]),
    ("return sorted([{'n': 2}, {'n': 1}], key=lambda r: r['n'])[0]", {"n": 1}),
    ("return max([3, 9, 4]), min(5, 2), sum(x for x in [1.5, 2.5]), any([]), all([])", [9, 2, 4.0, False, True]),
    ("return f\"{7:03d}-{'ab'!r}-{today}\"", "007-'ab'-2026-06-01"),
    ("return 0 <= 3 < 2, 1 if None else 2, not [], -(3 // 2), 7 % 3, 2 ** 10", [False, 2, True, -1, 1, 1024]),
    ("out = []\nfor i in [1, 2, 3, 4]:\n    if i == 2:\n        continue\n    if i == 4:\n        break\n    out.append(i)\nreturn out", [1, 3]),
    ("a, b = ['x', 'y']\nn = 1\nn += 2\nreturn a + b, n, ' Hi '.strip().lower(), 'a,b'.split(','), {'k': 1}.get('z', 0)", ["xy", 3, "hi", ["a", "b"], 0]),
    ("return get('customer', 'C001')['customer_id'], count('order', customer_id='C001') >= 0, add_days('2026-01-30', 3)", ["C001", True, "2026-02-02"]),
    ("update('customer', 'C001', **{'vip': True})\nreturn get('customer', 'C001')['vip']", True),
]  # fmt: skip


@pytest.mark.parametrize(("code", "expected"), INTERPRETED)
def test_the_subset_behaves_as_python(tiny_data, code, expected):
    r = _world(_with_action(tiny_data, code)).call("probe", {})
    assert r.ok, r.error
    assert r.result == expected


def test_python_errors_in_code_are_reported_as_before(tiny_data):
    world = _world(_with_action(tiny_data, "x = get('customer', 'NOPE')['name']"))
    r = world.call("probe", {})
    assert r.error == {
        "code": "internal_error",
        "message": "probe failed: TypeError: 'NoneType' object is not subscriptable",
    }
    world = _world(_with_action(tiny_data, "if customer_id:\n    return 1\ncustomer_id = 2"))
    assert "UnboundLocalError" in world.call("probe", {"customer_id": "C001"}).error["message"]
    world = _world(_with_action(tiny_data, "return customer_id"))
    assert (
        world.call("probe", {}).error["message"]
        == "probe failed: NameError: name 'customer_id' is not defined"
    )


def _spec_file(tmp_path: Path, tiny_data: dict[str, Any], code: str) -> Path:
    """The tiny spec plus `code`, without the action implemented in the test process."""
    tiny_data["actions"] = [a for a in tiny_data["actions"] if "impl" not in a]
    path = tmp_path / "evil.yaml"
    path.write_text(yaml.safe_dump(_with_action(tiny_data, code)), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["world", "call", "{spec}", "probe", "--args", "{{}}"],
        ["world", "tools", "{spec}"],
        ["bench", "check", "{spec}"],
    ],
)
def test_cli_refuses_a_spec_that_would_run_code_and_runs_nothing(tmp_path, tiny_data, command):
    marker = tmp_path / "pwned"
    spec = _spec_file(tmp_path, tiny_data, f"__import__('os').system('touch {marker}')")
    args = [part.format(spec=spec) for part in command]
    proc = subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "'__import__' is not allowed" in proc.stderr
    assert not marker.exists()


def test_a_saved_world_carrying_code_is_refused_when_opened(tmp_path, tiny_data):
    path = _world(_with_action(tiny_data, "return 1")).save(tmp_path / "w.sqlite")
    conn = sqlite3.connect(path)
    spec = json.loads(conn.execute("SELECT value FROM _ts_meta WHERE key = 'spec'").fetchone()[0])
    spec["actions"][-1]["code"] = f"__import__('os').system('touch {tmp_path / 'pwned'}')"
    conn.execute("UPDATE _ts_meta SET value = ? WHERE key = 'spec'", (json.dumps(spec),))
    conn.commit()
    conn.close()
    with pytest.raises(BadInputError) as err:
        World.open(path)
    assert "_ts_meta.spec" in str(err.value) and err.value.field.endswith(".code")
    assert not (tmp_path / "pwned").exists()
