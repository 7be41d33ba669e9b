"""Declared format changes decode back exactly, and say so when they cannot."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolshift.bench.ecosystem.codecs import camel_to_snake, codec, snake_to_camel

snake = st.from_regex(r"[a-z]{1,6}(_[a-z]{1,6}){0,3}", fullmatch=True)
dates = st.dates().map(lambda d: d.isoformat())
scalars = st.one_of(
    st.integers(-1000, 1000), st.booleans(), st.none(), dates, st.sampled_from(["open", "closed"])
)
money = st.integers(-(10**6), 10**6).map(lambda c: round(c / 100, 2))
rows = st.dictionaries(snake, scalars, max_size=5)


@given(value=st.one_of(rows, st.lists(rows, max_size=4), st.fixed_dictionaries({"items": st.lists(rows)})))
def test_nest_dates_camel_round_trip(value):
    for name in ("nest", "dates", "camel"):
        c = codec(name)
        assert c.decode(c.encode(value)) == value


@given(row=st.fixed_dictionaries({"total": money, "status": st.just("open")}))
def test_money_round_trip_on_two_decimals(row):
    c = codec("money", frozenset({"total"}))
    encoded = c.encode(row)
    assert encoded["total"]["currency"] == "USD"
    assert c.decode(encoded) == row


def test_dates_are_reformatted():
    c = codec("dates")
    assert c.encode({"due": "2026-06-01", "at": "2026-06-01T09:30"}) == {
        "due": "01/06/2026",
        "at": "01/06/2026 09:30",
    }


@given(name=snake)
def test_camel_names_invert(name):
    assert camel_to_snake(snake_to_camel(name)) == name


def test_lossy_cases_are_visible():
    # a field name with a digit does not survive camelCase: the capability check must see the difference
    c = codec("camel")
    assert c.decode(c.encode({"address_2": "x"})) != {"address_2": "x"}
    # money with three decimals is rounded by the new format
    m = codec("money", frozenset({"rate"}))
    assert m.decode(m.encode({"rate": 1.005})) != {"rate": 1.005}
