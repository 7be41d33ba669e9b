"""The episode index: offsets that read back each line, the cache key, torn and bad lines, filters and facets."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from toolshift.report.episode_index import FileIndex, RunSet, index_file
from toolshift.traces.store import write_episodes

from .episodes import make_episode


def test_offsets_read_back_every_episode_and_fields_match(tmp_path):
    episodes = [make_episode(k, agent="a" if k < 5 else "b", success=k % 2 == 0) for k in range(12)]
    path = tmp_path / "x.episodes.jsonl"
    write_episodes(path, episodes)
    index = index_file(path, cache=tmp_path / "cache")
    assert index.episodes == 12 and index.bad_lines == 0 and index.torn == 0
    for row, ep in enumerate(episodes):
        assert index.episode(row) == ep
        assert index.value("agent", row) == ep.agent
        assert index.value("outcome", row) == ("success" if ep.outcome.success else "failure")
    assert index.columns["turns"][0] == 2 and index.columns["calls"][0] == 1
    assert index.columns["line"][:2].tolist() == [2, 3]  # line 1 is the header
    assert [index.id(r) for r in range(12)] == index.ids() == [e.id for e in episodes]


def test_cache_is_reused_until_the_file_changes(tmp_path):
    path = tmp_path / "x.episodes.jsonl"
    write_episodes(path, [make_episode(k) for k in range(3)])
    cache = tmp_path / "cache"
    index_file(path, cache=cache)
    entries = sorted(cache.glob("*.index.npz"))
    assert len(entries) == 1
    # A cached index is read as written: changing the cache entry shows it is what a second open returns.
    cached = FileIndex.load(entries[0], path)
    cached.values["agent"][0] = "from-the-cache"
    cached.save(entries[0])
    assert index_file(path, cache=cache).values["agent"][0] == "from-the-cache"
    # Appending changes size and mtime: the file is indexed afresh under a new key.
    with path.open("a", encoding="utf-8") as fh:
        fh.write(make_episode(9).model_dump_json(exclude_none=True) + "\n")
    os.utime(path, ns=(1, 10**18))
    fresh = index_file(path, cache=cache)
    assert fresh.episodes == 4 and fresh.values["agent"][0] == "a" and fresh.id(3) == "ep-9"
    assert len(list(cache.glob("*.index.npz"))) == 2
    entries[0].write_bytes(b"not an index")  # a damaged cache entry is rebuilt, never trusted
    assert index_file(path, cache=cache).episodes == 4


def test_torn_last_line_and_bad_lines_are_counted_and_named(tmp_path):
    path = tmp_path / "x.episodes.jsonl"
    write_episodes(path, [make_episode(k) for k in range(4)])
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(2, b'{"id": "broken", "task_id": 3, "domain": "d"}\n')  # task_id must be a string
    lines.insert(3, b"not json at all\n")
    text = b"".join(lines) + make_episode(5).model_dump_json().encode()[:40]  # a torn append
    path.write_bytes(text)
    index = index_file(path, cache=tmp_path / "cache")
    assert index.episodes == 4 and index.torn == 1 and index.bad_lines == 2
    assert any("line 3" in e and "task_id" in e for e in index.errors), index.errors
    assert any("line 4" in e and "not JSON" in e for e in index.errors), index.errors
    assert [index.episode(r).id for r in range(4)] == ["ep-0", "ep-1", "ep-2", "ep-3"]


def test_a_complete_last_line_without_newline_is_an_episode(tmp_path):
    path = tmp_path / "x.episodes.jsonl"
    write_episodes(path, [make_episode(k) for k in range(2)])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    index = index_file(path, cache=tmp_path / "cache")
    assert index.episodes == 2 and index.torn == 0


def test_compressed_store_is_read_through_a_plain_copy(tmp_path):
    plain = tmp_path / "x.episodes.jsonl"
    write_episodes(plain, [make_episode(k) for k in range(3)])
    gz = tmp_path / "y.episodes.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    index = index_file(gz, cache=tmp_path / "cache")
    assert index.read_from != gz and index.read_from.parent == tmp_path / "cache"
    assert index.episode(2).id == "ep-2" and index.source == gz


def test_runset_filters_facets_and_text_across_files(tmp_path):
    a = tmp_path / "a.episodes.jsonl"
    b = tmp_path / "b.episodes.jsonl"
    write_episodes(a, [make_episode(k, agent="alpha", version="eco-1/v1") for k in range(10)])
    write_episodes(
        b, [make_episode(k, agent="beta", success=k % 2 == 0, version="eco-1/v2") for k in range(10, 20)]
    )
    rs = RunSet([index_file(p, cache=tmp_path / "cache") for p in (a, b)])
    assert rs.size == 20
    beta = rs.mask({"agent": "beta"})
    assert beta.sum() == 10 and all(rs.summary(int(r))["agent"] == "beta" for r in beta.nonzero()[0])
    both = rs.mask({"agent": "beta", "outcome": "failure"})
    assert sorted(rs.summary(int(r))["id"] for r in both.nonzero()[0]) == [
        f"ep-{k}" for k in range(11, 20, 2)
    ]
    assert rs.mask({"agent": "nobody"}).sum() == 0
    assert rs.mask({"task_id": "task-3"}).sum() == sum(1 for k in range(20) if k % 7 == 3)
    assert rs.mask({}, text="EP-1").sum() == 11  # ep-1 and ep-10..ep-19, case-insensitive
    facets = rs.facets({"agent": "beta"})
    assert dict(map(tuple, facets["agent"])) == {"alpha": 10, "beta": 10}  # a column's own filter is left out
    assert dict(map(tuple, facets["version"])) == {"eco-1/v2": 10}
    assert dict(map(tuple, facets["outcome"])) == {"success": 5, "failure": 5}
    f, local = rs.locate(15)
    assert f.source == b and f.episode(local).id == "ep-15"
    assert Path(rs.summary(0)["file"]) == a
