"""A fact the request names twice (D194): each write takes the value of the clause it serves, whatever the
order of the plan's parts."""

from __future__ import annotations

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.ordinal import by_clause, step_clauses
from toolshift.steward.supply import clauses


def _tool(name: str, effect: str) -> CatalogTool:
    return CatalogTool(name, "qa", name, {"type": "object", "properties": {}}, effect)


CATALOG = Catalog(1, {t.name: t for t in [
    _tool("qa_search_capas", "read"), _tool("qa_create_capa", "write"), _tool("qa_close_capa", "write"),
]})  # fmt: skip
# a composed plan whose parts run in the other order than the request's: create first, then close
STEPS = [
    {"tool": "qa_create_capa", "args": {"capa_number": {"fact": "capa number"}}},
    {"tool": "qa_search_capas", "args": {"capa_number": {"fact": "capa number (2)"}}},
    {"tool": "qa_close_capa", "args": {"capa_id": {"step": 1, "path": ["items", "*", "capa_id"],
                                                   "where": {"capa_number": "capa number (2)"}}}},
]  # fmt: skip
TEXT = "You want to close capa CA-1; then you also want to have a new capa recorded (capa number: CA-9)."
FACTS = {"capa number": "CA-1", "capa number (2)": "CA-9"}


def test_each_write_takes_the_value_of_its_clause():
    parts = clauses(TEXT)
    assert step_clauses(STEPS, parts, CATALOG) == [1, 0, 0]  # the lookup serves the close after it
    got = by_clause(STEPS, parts, FACTS, CATALOG)
    assert got[0]["args"]["capa_number"] == {"fact": "capa number (2)"}  # the new capa: the later clause
    assert got[1]["args"]["capa_number"] == {"fact": "capa number"}
    assert got[2]["args"]["capa_id"]["where"] == {"capa_number": "capa number"}


def test_a_value_the_user_did_not_give_twice_is_left_as_bound():
    got = by_clause(STEPS, clauses(TEXT), {"capa number": "CA-1"}, CATALOG)
    assert got[0]["args"]["capa_number"] == {"fact": "capa number"}
    assert by_clause(STEPS, ["close capa CA-1"], FACTS, CATALOG) == STEPS  # one clause: nothing to order
