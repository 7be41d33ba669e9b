"""Tool results read as the values they print (`toolshift.traces.result_values`): parsed as data, never run."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.traces.result_values import MAX_DEPTH, read_result

# AgentDojo's own printouts (the travel, banking and slack suites' tools, as its published runs hold them).
HOTELS = "Hotel Names: Le Marais Boutique\nGood Night\nLuxury Palace\nMontmartre Suites\n"
PRICES = "{'Le Marais Boutique': 'Price range: 120.0 - 180.0', 'Good Night': 'Price range: 240.0 - 400.0'}"
TRANSACTIONS = "- amount: 100.0\n  date: '2022-01-01'\n  id: 1\n  recurring: false\n- amount: 50.0\n  date: 2022-03-01\n  id: 3"


def test_a_listing_of_a_label_and_one_name_a_line_is_its_items() -> None:
    assert read_result(HOTELS, "yaml") == {
        "Hotel Names": ["Le Marais Boutique", "Good Night", "Luxury Palace", "Montmartre Suites"]
    }
    assert read_result("Car Rental Companies in Los Angeles: SunSet\nSpeedy Rentals\n", "yaml") == {
        "Car Rental Companies in Los Angeles": ["SunSet", "Speedy Rentals"]
    }


def test_python_reprs_and_yaml_records_are_read_as_the_data_they_print() -> None:
    assert read_result(PRICES, "yaml") == {
        "Le Marais Boutique": "Price range: 120.0 - 180.0",
        "Good Night": "Price range: 240.0 - 400.0",
    }
    assert read_result(PRICES, "python") == read_result(PRICES, "yaml")
    records = read_result(TRANSACTIONS, "yaml")
    # dates stay the strings an agent passes back; `false` is a boolean, an id an integer
    assert records == [
        {"amount": 100.0, "date": "2022-01-01", "id": 1, "recurring": False},
        {"amount": 50.0, "date": "2022-03-01", "id": 3},
    ]
    assert read_result("- general\n- random\n- No\n- on", "yaml") == ["general", "random", "No", "on"]


def test_json_reads_as_before_and_leaves_other_text_as_text() -> None:
    for text in (HOTELS, PRICES, TRANSACTIONS, "Transfer successful", "mei_kovacs_8020"):
        assert read_result(text, "json") == text
    assert read_result('{"a": [1, "b"]}', "json") == {"a": [1, "b"]}
    assert read_result("-148.0", "json") == -148.0
    assert read_result(None, "yaml") is None
    # free text that is no structure stays text in every form
    for form in ("json", "python", "yaml"):
        assert read_result(
            "Airline: BA, Flight Number: BA123\nAirline: AF, Flight Number: AF456", form
        ).startswith("Airline")
        assert read_result("2024-05-15", form) == "2024-05-15"


def _data_only(value: object) -> bool:
    if isinstance(value, dict):
        return all(_data_only(k) and _data_only(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_data_only(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


HOSTILE = [
    "__import__('os').system('touch /tmp/toolshift-pwned')",
    "[x for x in ().__class__.__base__.__subclasses__()]",
    "{'a': (lambda: 1)()}",
    "{'a': open('/etc/passwd').read()}",
    "!!python/object/apply:os.system ['touch /tmp/toolshift-pwned']",
    "a: !!python/name:os.system",
    "- !!python/object/new:subprocess.Popen [['true']]",
]
WATCH = """
import json, sys
from toolshift.traces.result_values import read_result
warm = [read_result(t, "yaml") for t in ("{'a': 1}", "a: [1]", "L: a\\nb")]  # imports done before the hook
events = []
sys.addaudithook(lambda e, a: events.append(e) if e in ("os.system", "exec", "import", "open",
                                                        "subprocess.Popen") else None)
values = [read_result(t, f) for t in json.loads(sys.argv[1]) for f in ("json", "python", "yaml")]
print(json.dumps({"events": events, "values": values}))
"""


def test_nothing_in_a_result_is_run() -> None:
    """In a process of its own (an audit hook cannot be removed): reading the results opens, imports and runs
    nothing, and gives only data."""
    out = subprocess.run([sys.executable, "-c", WATCH, json.dumps(HOSTILE)], capture_output=True, text=True,
                         check=True)  # fmt: skip
    got = json.loads(out.stdout)
    assert got["events"] == []
    assert all(_data_only(v) for v in got["values"])
    for value in got["values"]:
        assert not isinstance(value, dict) or all(isinstance(v, str) for v in value.values())


def test_aliases_and_depth_are_refused_not_expanded() -> None:
    laughs = "a: &a ['x','x','x','x']\nb: &b [*a,*a,*a,*a]\nc: [*b,*b,*b,*b]"
    assert read_result(laughs, "yaml") == laughs
    deep = "(" * (MAX_DEPTH + 5) + "1" + ",)" * (MAX_DEPTH + 5)
    assert read_result(deep, "python") == deep
    shallow = "(" * 5 + "1" + ",)" * 5
    assert read_result(shallow, "python") == [[[[[1]]]]]
    deep_yaml = "".join("  " * i + "- \n" for i in range(MAX_DEPTH + 5))
    assert isinstance(read_result(deep_yaml, "yaml"), str)
    assert read_result("[" * 100_000, "python") == "[" * 100_000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(deadline=None, max_examples=150)
@given(json_values)
def test_every_form_reads_what_python_and_yaml_print(value: object) -> None:
    assert read_result(json.dumps(value), "json") == value or not isinstance(value, (dict, list))
    if isinstance(value, (dict, list)):
        assert read_result(repr(value), "python") == value
        assert read_result(repr(value), "yaml") == value
        assert read_result(yaml.safe_dump(value), "yaml") == value
