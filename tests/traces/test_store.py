"""The JSONL episode store: round trips, version checks, bad lines, appends and failed writes."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.errors import BadInputError
from toolshift.models import RowChange
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall, Usage, paired_calls
from toolshift.traces.store import EpisodeWriter, ReadReport, iter_episodes, read_header, write_episodes

text = st.text(max_size=30)
json_scalar = st.none() | st.booleans() | st.integers(-(10**9), 10**9) | text
json_value = st.recursive(
    json_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3), max_leaves=8
)
calls = st.builds(
    ToolCall,
    id=text,
    name=st.text(min_size=1, max_size=20),
    arguments=st.dictionaries(text, json_value, max_size=3),
    requestor=st.sampled_from(["assistant", "user"]),
)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=st.none() | text,
    tool_calls=st.none() | st.lists(calls, min_size=1, max_size=3),
    tool_call_id=st.none() | text,
    error=st.booleans(),
    usage=st.none() | st.builds(Usage, prompt_tokens=st.none() | st.integers(0, 10**6)),
    cost=st.none() | st.floats(0, 10, allow_nan=False),
)
episodes = st.builds(
    Episode,
    id=st.text(min_size=1, max_size=20),
    task_id=st.text(min_size=1, max_size=10),
    trial=st.integers(0, 10),
    domain=st.text(min_size=1, max_size=10),
    agent=st.none() | text,
    messages=st.lists(messages, max_size=6),
    outcome=st.none()
    | st.builds(
        Outcome, reward=st.none() | st.floats(0, 1), info=st.dictionaries(text, json_value, max_size=3)
    ),
    world_diff=st.none()
    | st.lists(
        st.builds(
            RowChange,
            table=text,
            key=text,
            field=text,
            op=st.sampled_from(["insert", "update", "delete"]),
            before=json_scalar,
            after=json_scalar,
        ),
        max_size=3,
    ),
    source=st.dictionaries(text, json_value, max_size=3),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(episodes, max_size=5))
def test_store_round_trip(tmp_path, eps):
    path = tmp_path / "x.episodes.jsonl"
    assert write_episodes(path, eps) == len(eps)
    assert list(iter_episodes(path)) == eps


def test_gzip_round_trip(tmp_path):
    eps = [Episode(id=str(i), task_id=str(i), domain="d") for i in range(3)]
    path = tmp_path / "x.episodes.jsonl.gz"
    write_episodes(path, eps, meta={"k": 1})
    assert list(iter_episodes(path)) == eps
    assert read_header(path).meta == {"k": 1}


def _file(tmp_path, lines):
    path = tmp_path / "f.episodes.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


HEADER = json.dumps({"format": "toolshift.episodes/1"})
GOOD = Episode(id="a", task_id="1", domain="d").model_dump_json()


def test_unknown_file_format_is_refused_even_with_skip_bad(tmp_path):
    path = _file(tmp_path, [json.dumps({"format": "toolshift.episodes/9"}), GOOD])
    with pytest.raises(BadInputError, match="unknown episode file format") as err:
        list(iter_episodes(path, skip_bad=True))
    assert (err.value.record, err.value.field) == ("header", "format")


def test_a_file_without_header_is_refused(tmp_path):
    with pytest.raises(BadInputError, match="no header line"):
        list(iter_episodes(_file(tmp_path, [GOOD])))


def test_unknown_episode_format_is_refused(tmp_path):
    other = json.dumps({**json.loads(GOOD), "format": "toolshift.episode/2"})
    with pytest.raises(BadInputError, match="unknown episode format") as err:
        list(iter_episodes(_file(tmp_path, [HEADER, GOOD, other]), skip_bad=True))
    assert (err.value.record, err.value.field) == (1, "format")


def test_a_bad_line_names_its_index_and_field_and_can_be_skipped(tmp_path):
    bad = json.dumps({**json.loads(GOOD), "trial": "first"})
    path = _file(tmp_path, [HEADER, GOOD, bad, "{torn", GOOD])
    with pytest.raises(BadInputError) as err:
        list(iter_episodes(path))
    assert (err.value.source, err.value.record, err.value.field) == (str(path), 1, "trial")
    report = ReadReport()
    assert len(list(iter_episodes(path, skip_bad=True, report=report))) == 2
    assert report.read == 2 and sum(report.skipped.values()) == 2


def test_append_checks_header_and_cuts_a_torn_line(tmp_path):
    path = tmp_path / "run.episodes.jsonl"
    write_episodes(path, [Episode(id="a", task_id="1", domain="d")])
    with path.open("a") as fh:
        fh.write('{"format": "toolshift.episode/1", "id": "half')
    with EpisodeWriter(path, append=True) as writer:
        writer.write(Episode(id="b", task_id="2", domain="d"))
    assert [e.id for e in iter_episodes(path)] == ["a", "b"]


def test_a_failed_write_keeps_the_previous_file(tmp_path):
    path = tmp_path / "x.episodes.jsonl"
    write_episodes(path, [Episode(id="old", task_id="1", domain="d")])

    def boom():
        yield Episode(id="new", task_id="1", domain="d")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_episodes(path, boom())
    assert [e.id for e in iter_episodes(path)] == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["x.episodes.jsonl"]


def test_paired_calls_pair_by_order_not_id():
    ep = Episode(
        id="e",
        task_id="1",
        domain="d",
        messages=[
            Message(role="assistant", tool_calls=[ToolCall(id="x", name="a"), ToolCall(id="x", name="b")]),
            Message(role="tool", tool_call_id="x", content="ra"),
            Message(role="tool", tool_call_id="x", content="rb"),
            Message(role="assistant", content="done"),
            Message(role="assistant", tool_calls=[ToolCall(id="y", name="c")]),
        ],
    )
    assert [(i, c.name, r.content if r else None) for i, c, r in paired_calls(ep)] == [
        (0, "a", "ra"),
        (0, "b", "rb"),
        (4, "c", None),
    ]


def test_a_truncated_gzip_file_is_bad_input(tmp_path):
    path = tmp_path / "x.episodes.jsonl.gz"
    write_episodes(
        path,
        [Episode(id=str(i), task_id="1", domain="d", source={"pad": "x" * 5000 + str(i)}) for i in range(50)],
    )
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BadInputError, match="cannot read episode file"):
        list(iter_episodes(path))


def test_a_binary_file_is_bad_input(tmp_path):
    path = tmp_path / "x.episodes.jsonl"
    path.write_bytes(b'{"format": "toolshift.episodes/1"}\n\xff\xfe\x00garbage\n')
    with pytest.raises(BadInputError) as err:
        list(iter_episodes(path))
    assert err.value.record == 0


def test_a_complete_last_line_without_newline_is_an_episode_and_kept_on_append(tmp_path):
    path = _file(tmp_path, [HEADER, GOOD])
    path.write_text(path.read_text().rstrip("\n"))
    report = ReadReport()
    assert [e.id for e in iter_episodes(path, report=report)] == ["a"] and report.torn == 0
    with EpisodeWriter(path, append=True) as writer:
        writer.write(Episode(id="b", task_id="2", domain="d"))
    assert [e.id for e in iter_episodes(path)] == ["a", "b"]


def test_a_torn_last_line_is_left_out_and_counted_by_every_read(tmp_path):
    path = _file(tmp_path, [HEADER, GOOD])
    with path.open("a") as fh:
        fh.write(GOOD[:25])
    for skip_bad in (False, True):
        report = ReadReport()
        assert [e.id for e in iter_episodes(path, skip_bad=skip_bad, report=report)] == ["a"]
        assert (report.torn, sum(report.skipped.values())) == (1, 0)


def test_append_refuses_a_file_with_a_bad_middle_line(tmp_path):
    path = _file(tmp_path, [HEADER, GOOD, GOOD[:25], GOOD])
    before = path.read_bytes()
    with pytest.raises(BadInputError, match=r"line 3") as err, EpisodeWriter(path, append=True) as writer:
        writer.write(Episode(id="b", task_id="2", domain="d"))
    assert (err.value.source, err.value.record) == (str(path), 1)
    assert path.read_bytes() == before


def test_deep_nesting_is_bad_input_not_a_recursion_error(tmp_path):
    deep = json.dumps({**json.loads(GOOD), "source": {"x": None}}).replace(
        "null", "[" * 50_000 + "]" * 50_000
    )
    path = _file(tmp_path, [HEADER, GOOD, deep])
    with pytest.raises(BadInputError, match="nested more than 201 levels") as err:
        list(iter_episodes(path))
    assert (err.value.source, err.value.record) == (str(path), 1)
    deep_header = _file(
        tmp_path, ['{"format": "toolshift.episodes/1", "meta": ' + "[" * 50_000 + "]" * 50_000 + "}"]
    )
    with pytest.raises(BadInputError, match="header line"):
        list(iter_episodes(deep_header))


def test_an_overlong_line_is_bad_input(tmp_path, monkeypatch):
    import toolshift.fileio

    monkeypatch.setattr(toolshift.fileio, "MAX_LINE_BYTES", 1000)
    path = _file(tmp_path, [HEADER, GOOD, json.dumps({**json.loads(GOOD), "source": {"pad": "x" * 5000}})])
    with pytest.raises(BadInputError, match="line 3 is longer than the limit"):
        list(iter_episodes(path))
