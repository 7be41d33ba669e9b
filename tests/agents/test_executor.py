"""The executor's parts that need no cluster: assets packed by content and unpacked once, where the driver places
an item after a failure, a node's own endpoint, and how every command chooses its executor (the local and Ray
runs themselves: tests/test_cluster.py, tests/bench/test_ecosystem_settings.py)."""

from __future__ import annotations

import threading
from collections import Counter, deque
from pathlib import Path

import pytest

from toolshift.agents.assets import pack, unpack
from toolshift.errors import BadInputError, ToolshiftError


def _folder(root: Path) -> Path:
    build = root / "build"
    (build / "domains" / "a").mkdir(parents=True)
    (build / "manifest.json").write_text('{"x": 1}')
    (build / "domains" / "a" / "tasks.jsonl").write_text("{}\n")
    return build


def test_an_asset_packs_to_the_same_digest_whatever_its_times_and_unpacks_as_it_was(tmp_path):
    import os

    build = _folder(tmp_path)
    digest, data = pack(build)
    os.utime(build / "manifest.json", (1, 1))
    assert pack(build) == (digest, data)  # its content names it, not when it was written
    (build / "manifest.json").write_text('{"x": 2}')
    assert pack(build)[0] != digest
    got = unpack(digest, "build", lambda: data, root=tmp_path / "cache")
    assert (got / "domains" / "a" / "tasks.jsonl").read_text() == "{}\n"
    assert (got / "manifest.json").read_text() == '{"x": 1}'
    with pytest.raises(BadInputError, match="not found"):
        pack(tmp_path / "missing")


def test_a_node_fetches_an_asset_once_however_many_processes_ask_and_refuses_other_bytes(tmp_path):
    build = _folder(tmp_path)
    digest, data = pack(build)
    fetches = Counter()

    def fetch() -> bytes:
        fetches["n"] += 1
        return data

    cache = tmp_path / "cache"
    threads = [threading.Thread(target=unpack, args=(digest, "build", fetch, cache)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fetches["n"] == 1
    assert (cache / "fetched.log").read_text().split()[0] == digest
    other, _ = pack(tmp_path / "build" / "manifest.json")
    with pytest.raises(ToolshiftError, match="expected"):
        unpack(other, "manifest.json", lambda: data, root=cache)  # bytes that are not what the digest names
    assert not (cache / other).exists()


def test_an_item_never_goes_back_to_a_node_it_failed_on_while_another_can_take_it():
    from toolshift.agents.ray_executor import _Node, _place

    nodes = {"a": _Node("head a", 1), "b": _Node("node b", 1)}
    pending = deque([0, 1])
    # item 0 failed on b; b is the only free node: item 0 waits for a, item 1 goes to b
    assert _place(pending, nodes, Counter({"a": 1}), {0: {"b"}}, {}, now=0.0) == (1, "b")
    assert list(pending) == [0]
    assert _place(pending, nodes, Counter({"a": 1, "b": 1}), {0: {"b"}}, {}, now=0.0) is None
    # it failed on every live node: any free one will do
    assert _place(deque([0]), nodes, Counter({"a": 1}), {0: {"a", "b"}}, {}, now=0.0) == (0, "b")
    # a node where a worker just died gets new work only when no other is free
    assert _place(deque([2]), nodes, Counter(), {}, {"a": 10.0}, now=1.0) == (2, "b")
    assert _place(deque([2]), nodes, Counter({"b": 1}), {}, {"a": 10.0}, now=1.0) == (2, "a")
    assert _place(deque([2]), nodes, Counter(), {}, {"b": 10.0}, now=11.0) == (2, "a")  # suspicion ends


def test_a_nodes_own_endpoint_wins_over_the_runs(monkeypatch):
    from toolshift.agents.openai_backend import NODE_BASE_URL, OpenAIChatModel

    monkeypatch.delenv("TOOLSHIFT_BASE_URL", raising=False)
    assert OpenAIChatModel("m", base_url="http://driver:1/v1").where == "http://driver:1/v1"
    monkeypatch.setenv(NODE_BASE_URL, "http://127.0.0.1:8000/v1")
    assert OpenAIChatModel("m", base_url="http://driver:1/v1").where == "http://127.0.0.1:8000/v1"


def test_the_executor_is_chosen_the_same_way_by_every_command():
    from toolshift.agents.executor import Executor

    assert Executor.choose("local", 2) == Executor("local", 2)
    assert Executor.choose("ray", 1, "127.0.0.1:6379").address == "127.0.0.1:6379"
    for bad, field in ((("cloud", 1, None), "executor"), (("local", 0, None), "workers"),
                       (("local", 1, "h:1"), "ray-address")):  # fmt: skip
        with pytest.raises(BadInputError) as err:
            Executor.choose(*bad)
        assert err.value.field == field
