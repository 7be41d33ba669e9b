"""Crafted skill folders: each is refused on one line naming its file and field (exit 2 from the CLI), never a
traceback, never accepted to crash `steward export` later, never accepted silently; and a fuzzer of SKILL.md
files finds nothing else (import refuses with `BadInputError` or accepts what export then writes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.errors import BadInputError
from toolshift.steward.library import Library
from toolshift.steward.skillmd import MAX_FILE_BYTES, export_skills, import_skills

NAME = "plan-x-00000000"
GOOD_BODY = {
    "facts": ["order"],
    "steps": [{"tool": "po_get", "args": {"id": {"fact": "order"}}, "each": False}],
}


def skill_md(
    *, front: str = "", meta: dict[str, str] | None = None, body: str | None = None, level="planning"
) -> str:
    m = {
        "level": level,
        "domain": "po",
        "tools": "po_get",
        "catalog_version": "1",
        "revision": "1",
        "active": "true",
    }
    m.update(meta or {})
    meta_lines = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in m.items())
    data = json.dumps(GOOD_BODY) if body is None else body
    return f"---\nname: {NAME}\ndescription: Get an order\n{front}metadata:\n{meta_lines}---\n# x\n\n```json\n{data}\n```\n"


def _folder(tmp_path: Path, text: str, name: str = NAME) -> Path:
    root = tmp_path / "skills"
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(text, encoding="utf-8", errors="surrogatepass")
    return root


DEEP_YAML = "license: " + "[" * 200 + "]" * 200 + "\n"
BOMB = "".join(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
CASES: dict[str, tuple[str, str]] = {
    # tracebacks before
    "deep YAML front matter": (skill_md(front=DEEP_YAML), "front matter"),
    "deep JSON body": (skill_md(body='{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}"), "body"),
    "lone surrogate in the body": (skill_md(body='{"steps": [], "facts": ["\\ud800"]}'), "body.facts.0"),
    "30-digit catalog_version": (skill_md(meta={"catalog_version": "9" * 30}), "metadata.catalog_version"),
    "catalog_version superscript two": (skill_md(meta={"catalog_version": "²"}), "metadata.catalog_version"),
    # accepted, then `steward export` crashed
    "steps a string": (skill_md(body='{"steps": "do it"}'), "body.steps"),
    "a step without tool": (skill_md(body='{"steps": [{"args": {}}]}'), "body.steps.0.tool"),
    "calls a number": (skill_md(body='{"calls": 5}', level="atomic"), "body.calls"),
    "params a list": (skill_md(body='{"params": [1, 2]}', level="tool"), "body.params"),
    # accepted silently
    "alias bomb in license": ("---\n" + BOMB + skill_md(front="license: *a8\n")[4:], "front matter"),
    "duplicate name key": (skill_md(front=f"name: {NAME}\n"), "front matter"),
    "NaN in the body": (skill_md(body='{"steps": [], "score": NaN}'), "body"),
    "Infinity in the body": (skill_md(body='{"steps": [], "score": 1e999}'), "body"),
    "license a mapping": (skill_md(front="license: {a: 1}\n"), "license"),
    "allowed-tools a list": (skill_md(front="allowed-tools: [a, b]\n"), "allowed-tools"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_crafted_skill_is_refused_naming_file_and_field(tmp_path, case):
    text, field = CASES[case]
    root = _folder(tmp_path, text)
    with pytest.raises(BadInputError) as err:
        import_skills(root)
    assert err.value.field == field, str(err.value)
    assert "SKILL.md" in str(err.value) and "\n" not in str(err.value) and len(str(err.value)) < 400


def test_a_symlinked_skill_folder_outside_dir_is_refused(tmp_path):
    outside = _folder(tmp_path / "elsewhere", skill_md()) / NAME
    root = tmp_path / "skills"
    root.mkdir()
    os.symlink(outside, root / NAME)
    with pytest.raises(BadInputError, match="symlink") as err:
        import_skills(root)
    assert NAME in str(err.value)


def test_an_empty_folder_is_refused(tmp_path):
    (tmp_path / "skills").mkdir()
    with pytest.raises(BadInputError, match="no skill folders"):
        import_skills(tmp_path / "skills")


def test_a_huge_skill_md_is_refused_before_it_is_read(tmp_path, monkeypatch):
    root = _folder(tmp_path, skill_md())
    with (root / NAME / "SKILL.md").open("r+b") as fh:
        fh.truncate(300 * 1024 * 1024)  # sparse: 300 MB on paper, nothing on disk
    reads: list[int] = []
    real_read_text, real_read_bytes = Path.read_text, Path.read_bytes
    monkeypatch.setattr(
        Path, "read_text", lambda self, *a, **k: reads.append(1) or real_read_text(self, *a, **k)
    )
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(1) or real_read_bytes(self))
    with pytest.raises(BadInputError, match=f"over {MAX_FILE_BYTES} bytes"):
        import_skills(root)
    assert reads == []


def test_the_cli_says_one_line_and_exits_2(tmp_path):
    root = _folder(tmp_path, CASES["a step without tool"][0])
    done = subprocess.run(
        [sys.executable, "-m", "toolshift", "steward", "import", str(root), "--out", str(tmp_path / "l.sqlite")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "SKILL.md" in done.stderr and "body.steps.0.tool" in done.stderr
    assert not (tmp_path / "l.sqlite").exists()


_text = st.text(st.characters(categories=["L", "N", "P", "S", "Zs", "Cs"]), max_size=20)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=15,
)
_binding = st.one_of(
    st.fixed_dictionaries({"fact": _text}),
    st.fixed_dictionaries({"step": st.integers(-2, 5), "path": st.lists(_text | st.integers(), max_size=3)}),
    st.fixed_dictionaries({"value": _json}),
    _json,
)
_step = st.fixed_dictionaries(
    {},
    optional={
        "tool": _text | _json,
        "args": st.dictionaries(_text, _binding, max_size=3) | _json,
        "each": _json,
    },
)
_body = st.just(GOOD_BODY) | st.fixed_dictionaries(
    {},
    optional={
        "steps": st.lists(_step, max_size=3) | _json,
        "calls": st.lists(_step, max_size=3) | _json,
        "facts": st.lists(_text, max_size=3) | _json,
        "requests": st.lists(_text, max_size=3) | _json,
        "required": st.lists(_text, max_size=3) | _json,
        "params": st.dictionaries(_text, st.dictionaries(_text, _json, max_size=2), max_size=2) | _json,
        "errors": st.lists(st.fixed_dictionaries({"message": _text}), max_size=2) | _json,
    },
)
_meta_value = st.sampled_from(["1", "1", "1", "7", "0", "²", "9" * 30, "", "x"]) | _text


@settings(
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    level=st.sampled_from(["planning", "atomic", "tool"]),
    body=_body,
    version=_meta_value,
    front=st.sampled_from(
        ["", "license: MIT\n", "license: [1]\n", "allowed-tools: a b\n", "license: &x [*x]\n"]
    ),
    raw=st.booleans(),
)
def test_import_refuses_cleanly_or_accepts_what_export_can_write(
    tmp_path_factory, level, body, version, front, raw
):
    tmp = tmp_path_factory.mktemp("fuzz")
    data = json.dumps(body, ensure_ascii=raw)  # NaN / Infinity included: json.dumps writes them
    root = _folder(tmp, skill_md(front=front, meta={"catalog_version": version}, body=data, level=level))
    try:
        skills = import_skills(root)
    except BadInputError as exc:
        assert "\n" not in str(exc)
        return
    lib = Library.create(tmp / "lib.sqlite")
    with lib.transaction():
        for s in skills:
            lib.edit("add", s, s.catalog_version, {}, as_is=True)
    lib.close()
    with Library.open(tmp / "lib.sqlite") as again:
        export_skills(again.skills(), tmp / "out")
    assert import_skills(tmp / "out") == skills
