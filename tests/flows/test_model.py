"""The flow file: round trip, and refusal of unknown formats and of another domain's or catalog's flow."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import load_flow, save_flow
from toolshift.flows.timeline import Catalog, timelines

from .builders import AIRLINE, user_walk


@pytest.fixture
def flow():
    return learn_flow(
        timelines([user_walk(f"e{i}", f"t{i}", f"u{i}", ["A", "B"]) for i in range(3)], AIRLINE), AIRLINE
    )


def test_round_trip(tmp_path, flow):
    path = save_flow(flow, tmp_path / "f.json")
    assert load_flow(path, AIRLINE) == flow


def test_saved_file_has_the_mode_a_plain_open_gives(tmp_path, flow):
    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    saved = save_flow(flow, tmp_path / "f.json")
    assert saved.stat().st_mode == plain.stat().st_mode
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("fmt", [0, 9, "3", None])
def test_unknown_format_is_refused(tmp_path, flow, fmt):
    raw = json.loads(flow.model_dump_json())
    raw["format"] = fmt
    path = tmp_path / "f.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="unknown flow format") as err:
        load_flow(path)
    assert err.value.field == "format" and str(path) in str(err.value)


def test_format_1_with_lists_is_refused(tmp_path, flow):
    raw = json.loads(flow.model_dump_json())
    raw["tools"]["get_reservation_details"]["lists"] = {"x": {"source": "a", "path": "$", "agree": 1, "n": 1}}
    path = tmp_path / "f.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="format 1"):
        load_flow(path)


def test_another_domain_or_catalog_is_refused(tmp_path, flow):
    path = save_flow(flow, tmp_path / "f.json")
    with pytest.raises(BadInputError, match="domain"):
        load_flow(path, replace(AIRLINE, domain="retail"))
    changed = Catalog(AIRLINE.domain, {**AIRLINE.effects, "get_user_details": "write"})
    with pytest.raises(BadInputError, match="catalog"):
        load_flow(path, changed)


def test_not_a_flow(tmp_path):
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"kind": "something"}))
    with pytest.raises(BadInputError, match="not a flow"):
        load_flow(path)
    path.write_text("{")
    with pytest.raises(BadInputError, match="cannot read"):
        load_flow(path)


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        (("sites", "<start>", "occurrences"), -3, "sites.<start>.occurrences"),
        (("sites", "<start>", "reach", "get_user_details"), -1, "sites.<start>.reach.get_user_details"),
        (("sites", "<start>", "reach", "get_user_details"), 10**6, "sites.<start>"),
        (("tools", "get_reservation_details", "bindings", "reservation_id", "agree"), -2,
         "tools.get_reservation_details.bindings.reservation_id.agree"),
        (("tools", "get_reservation_details", "bindings", "reservation_id", "n"), 0,
         "tools.get_reservation_details.bindings.reservation_id"),
        (("tools", "get_reservation_details", "calls"), -1, "tools.get_reservation_details.calls"),
        (("learned_from", "episodes"), -5, "learned_from.episodes"),
    ],
)  # fmt: skip
def test_impossible_counts_are_refused_naming_the_field(tmp_path, flow, where, value, field):
    """A negative count (or a part above its whole) would replay as "0 saved" or score above 1: refused."""
    raw = json.loads(save_flow(flow, tmp_path / "f.json").read_text())
    node = raw
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BadInputError) as err:
        load_flow(path, AIRLINE)
    assert err.value.source == str(path) and err.value.field == field


def test_binary_and_deeply_nested_flow_files_are_one_line_errors(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff")
    with pytest.raises(BadInputError, match="not UTF-8") as err:
        load_flow(path)
    assert err.value.source == str(path)
    path.write_text('{"kind": "toolshift.flow", "sites": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(BadInputError, match="nested more than 201 levels"):
        load_flow(path)


def test_catalog_identity_is_the_domains_real_tools():
    """Two conversions of one domain list different made-up tools: their fingerprints agree."""
    from toolshift.traces.catalog import CatalogTool, ToolCatalog

    real = [CatalogTool(name=n, effect=e, origin="source") for n, e in AIRLINE.effects.items()]
    made_up = [CatalogTool(name="teleport", effect="neither", origin="source", exists=False)]
    one = Catalog.of(ToolCatalog(domain=AIRLINE.domain, tools=real))
    other = Catalog.of(ToolCatalog(domain=AIRLINE.domain, tools=real + made_up))
    assert one.fingerprint() == other.fingerprint() == AIRLINE.fingerprint()
    assert other.absent == {"teleport"} and other.effect("teleport") == "neither"
    relabelled = [*real[:-1], CatalogTool(name=real[-1].name, effect="write", origin="manual")]
    assert Catalog.of(ToolCatalog(domain=AIRLINE.domain, tools=relabelled)).fingerprint() != one.fingerprint()


@pytest.mark.parametrize("bad", ["$..[[[", "", "a.b", "$.", "$.x[1]", "$[0]"])
def test_a_binding_path_no_output_could_have_is_refused_at_load(tmp_path, flow, bad):
    """Such a path never matches an output: the replay would silently report 0 saved turns."""
    raw = json.loads(save_flow(flow, tmp_path / "f.json").read_text())
    raw["tools"]["get_reservation_details"]["bindings"]["reservation_id"]["path"] = bad
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BadInputError) as err:
        load_flow(path, AIRLINE)
    assert err.value.field == "tools.get_reservation_details.bindings.reservation_id.path"


def test_string_paths_only_writes_paths_a_flow_can_carry():
    from toolshift.flows.values import string_paths

    assert string_paths({"a": [{"b": "x"}], "": {"c": "y"}, "d[0]": "z", "e": "w"}) == {
        "$.a[*].b": ["x"],
        "$.e": ["w"],
    }
