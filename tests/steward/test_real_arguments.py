"""Arguments as real MCP servers take them (D364, D365, D366): lists and nested objects bound leaf by leaf, texts
built around the user's facts bound as templates, a deprecated tool's skills moved to the successor it names,
and `steward check` telling which skills a new catalog breaks without writing anything."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.check import catalog_from_tools, check_library
from toolshift.steward.distill import Call, Trajectory, fill_template, workflow
from toolshift.steward.instruments import bind_step
from toolshift.steward.library import Library
from toolshift.steward.maintain import Maintainer, deprecated_successors

ENTITY = {"name": "Linus", "entityType": "person", "observations": ["maintains a kernel"]}
FACTS = {"name": "Linus", "kind": "person", "fact": "maintains a kernel"}


def _traj(calls: list[Call], facts: dict[str, str]) -> Trajectory:
    return Trajectory("ep-1", "memory", "Remember someone", facts, calls)


def test_a_list_of_objects_is_bound_leaf_by_leaf_and_rebuilt_for_other_facts():
    wf = workflow(_traj([Call("create_entities", {"entities": [ENTITY]}, "ok", True)], FACTS))
    args = wf.steps[0]["args"]
    assert args == {
        "entities.0.name": {"fact": "name"},
        "entities.0.entityType": {"fact": "kind"},
        "entities.0.observations.0": {"fact": "fact"},
    }
    assert sorted(wf.facts) == ["fact", "kind", "name"]
    other = {"name": "Oslo", "kind": "city", "fact": "has fjords"}
    assert bind_step(wf.steps[0], other, [], None) == [
        {"entities": [{"name": "Oslo", "entityType": "city", "observations": ["has fjords"]}]}
    ]


def test_a_list_whose_leaves_are_all_constants_stays_one_constant():
    wf = workflow(_traj([Call("git_add", {"files": ["setup.py"], "repo_path": "repo"}, "ok", True)], FACTS))
    assert wf.steps[0]["args"] == {"files": {"value": ["setup.py"]}, "repo_path": {"value": "repo"}}


def test_a_text_around_the_facts_is_a_template_only_when_asked():
    sql = "INSERT INTO products (name, price, stock) VALUES ('Sofa', 450.0, 2)"
    facts = {"product name": "Sofa", "price": "450.0", "stock": "2"}
    call = Call("write_query", {"query": sql}, "ok", True)
    assert workflow(_traj([call], facts)).steps[0]["args"]["query"] == {"value": sql}
    bound = workflow(_traj([call], facts), templates=True).steps[0]["args"]["query"]
    assert bound == {
        "template": "INSERT INTO products (name, price, stock) VALUES ('{product name}', {price}, {stock})",
        "facts": ["price", "product name", "stock"],
    }
    made = bind_step({"tool": "write_query", "args": {"query": bound}},
                     {"product name": "Vase", "price": "12.5", "stock": "20"}, [], None)  # fmt: skip
    assert made == [{"query": "INSERT INTO products (name, price, stock) VALUES ('Vase', 12.5, 20)"}]
    # braces in the text are literal; a fact inside a longer word is not the fact
    assert fill_template("{{x}} {a}", {"a": "1"}) == "{x} 1"
    path = workflow(_traj([Call("write_file", {"path": "gardens/garden/seeds.txt"}, "ok", True)],
                          {"folder": "garden", "file name": "seeds.txt"}), templates=True)  # fmt: skip
    assert path.steps[0]["args"]["path"]["template"] == "gardens/{folder}/{file name}"


def _tool(name: str, description: str, props: list[str], effect: str = "read") -> CatalogTool:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in props}, "required": props}
    return CatalogTool(name, "filesystem", description, schema, effect)


OLD = Catalog(1, {t.name: t for t in [
    _tool("read_file", "Read the complete contents of a file.", ["path"]),
    _tool("write_file", "Create or overwrite a file.", ["path", "content"], "write"),
]})  # fmt: skip
NEW = Catalog(2, {t.name: t for t in [
    _tool("read_file", "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
          ["path"]),
    _tool("read_text_file", "Read the complete contents of a file as text.", ["path"]),
    _tool("write_file", "Create or overwrite a file.", ["path", "content"], "write"),
]})  # fmt: skip


def _copy_episode_library(tmp_path) -> Library:
    from toolshift.traces.episode import Episode, Message, Outcome, ToolCall

    messages = [
        Message(role="user", content="Copy a file"),
        Message(role="user", content="My file path is notes/a.txt. My copy path is b.txt."),
        Message(role="assistant", tool_calls=[ToolCall(id="1", name="read_file", arguments={"path": "notes/a.txt"})]),
        Message(role="tool", tool_call_id="1", content="hello"),
        Message(role="assistant", tool_calls=[ToolCall(id="2", name="write_file",
                                                       arguments={"path": "b.txt", "content": "hello"})]),
        Message(role="tool", tool_call_id="2", content="Successfully wrote to b.txt"),
    ]  # fmt: skip
    ep = Episode(id="e1", task_id="t1", domain="filesystem", agent="a", model="a", harness="h", messages=messages,
                 outcome=Outcome(success=True, reward=1.0, judged_by="delta-cover"))  # fmt: skip
    lib = Library.create(tmp_path / "lib.sqlite")
    Maintainer(lib).initialise(OLD, [ep])
    return lib


def test_a_skill_on_a_deprecated_tool_moves_to_the_successor_it_names(tmp_path):
    lib = _copy_episode_library(tmp_path)
    plan = lib.skills("planning")[0]
    assert plan.tools == ("read_file", "write_file")
    assert plan.body["steps"][1]["args"]["content"] == {"step": 0, "path": [], "where": {}}
    assert deprecated_successors(lib, NEW) == {"read_file": "read_text_file"}
    checks = {c.skill: c for c in check_library(lib, NEW)}
    assert checks[plan.id].status == "rebound" and checks[plan.id].reasons == ["read_file → read_text_file"]
    assert lib.get(plan.id).tools == ("read_file", "write_file")  # the check wrote nothing
    Maintainer(lib).maintain(NEW, [])
    moved = lib.get(plan.id)
    assert moved.active and moved.tools == ("read_text_file", "write_file")
    edit = next(e for e in lib.edits() if e.skill_id == plan.id and e.catalog_version == 2)
    assert edit.evidence["deprecated"] == ["read_file"] and edit.evidence["renamed"] == {
        "read_file": "read_text_file"
    }
    lib.close()


def test_check_names_what_breaks_a_skill(tmp_path):
    lib = _copy_episode_library(tmp_path)
    plan = lib.skills("planning")[0]
    gone = catalog_from_tools("filesystem", [
        {"name": "read_text_file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"},
                                                                                     "encoding": {"type": "string"}},
                                                   "required": ["path", "encoding"]},
         "annotations": {"readOnlyHint": True}},
        {"name": "write_file", "description": "Create or overwrite a file.", "inputSchema": OLD.tools["write_file"].input_schema},
    ])  # fmt: skip
    assert gone.tools["read_text_file"].effect == "read" and gone.tools["write_file"].effect == "write"
    checks = {c.skill: c for c in check_library(lib, gone)}
    assert checks[plan.id].status == "broken" and checks[plan.id].reasons == ["read_file is gone"]
    assert {c.status for c in checks.values() if c.level == "tool"} == {"broken", "ok"}
    lib.close()


def test_steward_check_on_the_command_line(tmp_path):
    import json
    import subprocess
    import sys

    _copy_episode_library(tmp_path).close()
    new = [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
        for t in NEW.tools.values()
    ]
    (tmp_path / "new.json").write_text(json.dumps({"tools": new}))
    (tmp_path / "gone.json").write_text(json.dumps({"tools": new[2:]}))  # write_file alone
    (tmp_path / "bad.json").write_text(json.dumps({"tools": [{"title": "no name"}]}))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "toolshift", "steward", "check", str(tmp_path / "lib.sqlite"), *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    ok = run("--catalog", str(tmp_path / "new.json"), "--json")
    assert ok.returncode == 0, ok.stderr
    body = json.loads(ok.stdout)
    assert (
        body["domain"] == "filesystem" and body["counts"]["rebound"] >= 1 and "broken" not in body["counts"]
    )
    broken = run("--catalog", str(tmp_path / "gone.json"))
    assert broken.returncode == 1 and "read_file is gone" in " ".join(broken.stdout.split())
    bad = run("--catalog", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "bad.json" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
