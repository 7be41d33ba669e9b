"""The judge `covers` / `missing_changes`: Δgold ⊆ Δagent up to a renaming of generated keys (D70).

Diffs here are made the way a world makes them: a created row contributes one `insert` change per
field (its key field included), an update one change per field it sets. The properties: renaming
the created rows' keys (and running numbers) never changes the verdict; a wrong value, a wrong
reference or a missing row still fails; extra rows the agent made never hurt; `missing_changes` is
empty exactly when `covers` holds; and whenever the old exact-identity judge passed, this one does.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.models import MAX_JUDGE_STEPS, RowChange, covers, judge_diff, missing_changes


def created(table: str, key: str, **fields) -> list[RowChange]:
    id_field = f"{table}_id"
    return [RowChange(table=table, key=key, field=id_field, op="insert", after=key)] + [
        RowChange(table=table, key=key, field=f, op="insert", after=v) for f, v in fields.items()
    ]


def updated(table: str, key: str, field: str, before, after) -> RowChange:
    return RowChange(table=table, key=key, field=field, op="update", before=before, after=after)


# --- worked examples ---------------------------------------------------------------------------------


def test_two_creates_in_the_other_order_swap_keys_and_still_pass():
    gold = created("refund", "REF-01", order_id="ORD-7", amount=10.0) + created(
        "refund", "REF-02", order_id="ORD-9", amount=25.0
    )
    agent = created("refund", "REF-01", order_id="ORD-9", amount=25.0) + created(
        "refund", "REF-02", order_id="ORD-7", amount=10.0
    )
    assert not {c.identity() for c in gold} <= {c.identity() for c in agent}  # the old judge failed
    assert covers(agent, gold)
    assert missing_changes(agent, gold) == []


def test_references_to_created_rows_must_map_consistently():
    # a created order and its created line; an existing customer pointed at the new order
    gold = [
        *created("order", "O-1", customer="C-1", total=5.0),
        *created("order", "O-2", customer="C-2", total=5.0),
        *created("line", "L-1", order_id="O-1", sku="A"),
        updated("customer", "C-1", "last_order", "O-0", "O-1"),
    ]
    renamed = [
        *created("order", "O-2", customer="C-1", total=5.0),
        *created("order", "O-1", customer="C-2", total=5.0),
        *created("line", "L-1", order_id="O-2", sku="A"),
        updated("customer", "C-1", "last_order", "O-0", "O-2"),
    ]
    assert covers(renamed, gold)
    # the line on the other customer's order: content matches, the reference does not
    wrong_line = [
        c.model_copy(update={"after": "O-1"}) if (c.table, c.field) == ("line", "order_id") else c
        for c in renamed
    ]
    assert not covers(wrong_line, gold)
    assert [(c.table, c.field) for c in missing_changes(wrong_line, gold)] == [("line", "order_id")]
    # the pointer at the other order
    wrong_pointer = [*renamed[:-1], updated("customer", "C-1", "last_order", "O-0", "O-1")]
    assert not covers(wrong_pointer, gold)


def test_running_numbers_are_renamed_like_keys_only_when_declared():
    gold = created("shipment", "SHP-1", order_id="ORD-7", tracking="1Z-0001") + created(
        "shipment", "SHP-2", order_id="ORD-9", tracking="1Z-0002"
    )
    agent = created("shipment", "SHP-1", order_id="ORD-9", tracking="1Z-0001") + created(
        "shipment", "SHP-2", order_id="ORD-7", tracking="1Z-0002"
    )
    assert not covers(agent, gold)  # tracking numbers are content unless the task says the world made them
    assert covers(agent, gold, generated=["1Z-0001", "1Z-0002"])
    # a generated number still has to be there
    blank = [c.model_copy(update={"after": None}) if c.field == "tracking" else c for c in agent]
    assert not covers(blank, gold, generated=["1Z-0001", "1Z-0002"])


def test_a_generated_number_quoted_elsewhere_maps_with_its_row():
    gold = [
        *created("ncr", "N-1", lot="L-4", number="NCR-26-0001"),
        updated("lot", "L-4", "ncr", None, "NCR-26-0001"),
    ]
    agent = [
        *created("ncr", "N-5", lot="L-4", number="NCR-26-0005"),
        updated("lot", "L-4", "ncr", None, "NCR-26-0005"),
    ]
    assert covers(agent, gold, generated=["NCR-26-0001"])
    stale = [*agent[:-1], updated("lot", "L-4", "ncr", None, "NCR-26-0001")]
    assert not covers(stale, gold, generated=["NCR-26-0001"])


def test_identical_gold_rows_need_as_many_agent_rows():
    gold = created("note", "N-1", text="x") + created("note", "N-2", text="x")
    assert not covers(created("note", "N-7", text="x"), gold)
    assert covers(created("note", "N-7", text="x") + created("note", "N-8", text="x"), gold)


def test_updates_and_deletes_of_existing_rows_are_judged_exactly():
    gold = [updated("order", "O-1", "status", "open", "closed")]
    assert covers(gold + created("note", "N-1", text="x"), gold)
    assert not covers([updated("order", "O-2", "status", "open", "closed")], gold)
    assert not covers([], gold)
    assert covers([], [])


# --- properties ----------------------------------------------------------------------------------------

VALUES = st.sampled_from(["a", "b", "c", 1, 2.5, None, True])


@st.composite
def scenario(draw):
    """A gold diff creating parents, children that point at them and pointers from existing rows."""
    n_parents = draw(st.integers(1, 4))
    n_children = draw(st.integers(0, 4))
    numbered = draw(st.booleans())
    parents = [(f"P-{i + 1:02d}", draw(VALUES)) for i in range(n_parents)]
    children = [
        (f"C-{i + 1:02d}", draw(st.integers(0, n_parents - 1)), draw(VALUES)) for i in range(n_children)
    ]
    pointers = draw(st.lists(st.integers(0, n_parents - 1), max_size=2))
    updates = draw(
        st.lists(
            st.tuples(st.sampled_from(["E-1", "E-2", "E-3"]), VALUES), max_size=2, unique_by=lambda t: t[0]
        )
    )
    seed = draw(st.integers(0, 10_000))
    return parents, children, pointers, updates, numbered, seed


def render(parents, children, pointers, updates, numbered, pkeys, ckeys, numbers):
    """The diff of a scenario with the given keys for parents and children and running numbers."""
    out: list[RowChange] = []
    for (_, v), k, num in zip(parents, pkeys, numbers, strict=True):
        fields = {"v": v}
        if numbered:
            fields["number"] = num
        out += created("parent", k, **fields)
    for (_, p, v), k in zip(children, ckeys, strict=True):
        out += created("child", k, parent_id=pkeys[p], v=v)
    for i, p in enumerate(pointers):
        out.append(updated("existing", f"X-{i}", "parent_id", None, pkeys[p]))
    for key, v in updates:
        out.append(updated("existing", key, "v", "old", v))
    return out


def gold_of(s):
    parents, children, pointers, updates, numbered, _ = s
    pkeys = [k for k, _ in parents]
    numbers = [f"N-{i:03d}" for i in range(len(parents))]
    gold = render(parents, children, pointers, updates, numbered, pkeys, [k for k, _, _ in children], numbers)
    return gold, (numbers if numbered else [])


def renamed_of(s, extra_parents: int = 0):
    """The same diff with keys and numbers drawn afresh (often each other's), rows in another order."""
    parents, children, pointers, updates, numbered, seed = s
    rng = random.Random(seed)
    pool = [f"P-{i + 1:02d}" for i in range(len(parents) + 3)]
    rng.shuffle(pool)
    cpool = [f"C-{i + 1:02d}" for i in range(len(children) + 2)]
    rng.shuffle(cpool)
    npool = [f"N-{i:03d}" for i in range(len(parents) + 3)]
    rng.shuffle(npool)
    diff = render(
        parents,
        children,
        pointers,
        updates,
        numbered,
        pool[: len(parents)],
        cpool[: len(children)],
        npool[: len(parents)],
    )
    for i in range(extra_parents):
        diff += created("parent", f"Q-{i}", v="extra", **({"number": f"M-{i}"} if numbered else {}))
    rng.shuffle(diff)
    return diff


@settings(deadline=None, max_examples=300)
@given(scenario())
def test_renaming_generated_keys_never_changes_the_verdict(s):
    gold, generated = gold_of(s)
    agent = renamed_of(s)
    assert covers(agent, gold, generated=generated)
    assert missing_changes(agent, gold, generated=generated) == []
    assert covers(gold, gold, generated=generated)


@settings(deadline=None, max_examples=300)
@given(scenario(), st.integers(1, 3))
def test_extra_agent_rows_never_break_it(s, extra):
    gold, generated = gold_of(s)
    assert covers(renamed_of(s, extra_parents=extra), gold, generated=generated)


@settings(deadline=None, max_examples=300)
@given(scenario(), st.data())
def test_a_wrong_value_still_fails(s, data):
    gold, generated = gold_of(s)
    agent = renamed_of(s)
    # change one content value (never a key, a reference or a running number) to one gold never holds
    content = [i for i, c in enumerate(agent) if c.field == "v"]
    i = data.draw(st.sampled_from(content))
    agent[i] = agent[i].model_copy(update={"after": "wrong"})
    assert not covers(agent, gold, generated=generated)
    assert missing_changes(agent, gold, generated=generated)


@settings(deadline=None, max_examples=300)
@given(scenario(), st.data())
def test_a_dropped_change_fails_and_is_reported(s, data):
    gold, generated = gold_of(s)
    agent = renamed_of(s)
    i = data.draw(st.integers(0, len(agent) - 1))
    dropped = agent[:i] + agent[i + 1 :]
    assert not covers(dropped, gold, generated=generated)
    missing = missing_changes(dropped, gold, generated=generated)
    assert missing and all(c in gold for c in missing)


@settings(deadline=None, max_examples=300)
@given(scenario(), st.data())
def test_a_reference_moved_to_another_created_row_fails(s, data):
    parents, children, pointers, updates, numbered, seed = s
    # parents told apart by content, so the renaming of parents is forced
    parents = [(k, f"content-{i}") for i, (k, _) in enumerate(parents)]
    s = parents, children, pointers, updates, numbered, seed
    gold, generated = gold_of(s)
    agent = renamed_of(s)
    refs = [i for i, c in enumerate(agent) if c.field == "parent_id"]
    keys = sorted({c.key for c in agent if c.table == "parent"})
    if not refs or len(keys) < 2:
        return
    i = data.draw(st.sampled_from(refs))
    other = data.draw(st.sampled_from([k for k in keys if k != agent[i].after]))
    agent[i] = agent[i].model_copy(update={"after": other})
    assert not covers(agent, gold, generated=generated)


def flat_changes(ops: list[str], keys: list[str]):
    """Arbitrary diffs (not necessarily world-shaped) over two tables, two fields and the given keys."""

    def mk(t):
        table, key, field, op, v = t
        return RowChange(table=table, key=key, field=field, op=op, after=None if op == "delete" else v)

    change = st.tuples(
        st.sampled_from(["t", "u"]),
        st.sampled_from(keys),
        st.sampled_from(["f", "g"]),
        st.sampled_from(ops),
        VALUES,
    )
    return st.lists(change.map(mk), max_size=8)


@settings(deadline=None, max_examples=200)
@given(
    flat_changes(["insert", "update", "delete"], ["K1", "K2", "K3"]),
    flat_changes(["insert", "update", "delete"], ["K1", "K2", "K3", "K4"]),
)
def test_agrees_with_missing_and_never_fails_what_exact_identity_passed(gold, agent):
    """On arbitrary diffs (not necessarily world-shaped): `covers` ⇔ nothing missing, and it is a
    relaxation of the old judge (every diff the exact identity check passed still passes)."""
    verdict = covers(agent, gold)
    assert verdict == (missing_changes(agent, gold) == [])
    if {c.identity() for c in gold} <= {c.identity() for c in agent}:
        assert verdict


def test_search_budget_is_bounded_and_reported_consistently():
    # many interchangeable linked rows: the search stays within its budget and agrees with itself
    gold, agent = [], []
    n = 12
    for i in range(n):
        gold += created("p", f"P-{i}", v="same")
        gold += created("c", f"C-{i}", p_id=f"P-{i}", v=str(i % 2))
        agent += created("p", f"P-{(i * 5) % n}", v="same")
        agent += created("c", f"C-{i}", p_id=f"P-{(i * 5) % n}", v=str(i % 2))
    assert MAX_JUDGE_STEPS >= 1000
    assert covers(agent, gold) == (missing_changes(agent, gold) == [])
    assert covers(agent, gold)


# --- strict success: collateral writes (changes in Δagent outside σ(Δgold)) ----------------------------


def test_collateral_names_the_other_rows_an_agent_changed():
    gold = [updated("appointment", "A-1", "status", "booked", "cancelled")]
    agent = [
        updated("appointment", "A-1", "status", "booked", "cancelled"),
        updated("appointment", "A-2", "status", "booked", "cancelled"),
        *created("doctor", "D-9", name="stray"),
    ]
    v = judge_diff(agent, gold)
    assert v.success and not v.strict_success
    assert v.collateral_rows() == ["appointment/A-2", "doctor/D-9"]
    assert len(v.collateral) == 3
    assert v.info()["collateral_changes"] == 3
    assert judge_diff(gold, gold).strict_success


def test_renamed_creates_are_not_collateral_but_a_wrong_value_is_both_missing_and_collateral():
    gold = created("refund", "REF-01", order_id="ORD-7", amount=10.0)
    agent = created("refund", "REF-02", order_id="ORD-7", amount=10.0)
    assert judge_diff(agent, gold).strict_success
    wrong = [updated("order", "O-1", "total", 5.0, 6.0)]
    v = judge_diff(wrong, [updated("order", "O-1", "total", 5.0, 7.0)])
    assert not v.success and v.collateral == wrong


@settings(deadline=None, max_examples=300)
@given(scenario(), st.integers(0, 3))
def test_collateral_is_exactly_what_lies_outside_the_renamed_gold(s, extra):
    """collateral = ∅ ⇔ Δagent ⊆ σ(Δgold): a renamed gold diff has none; each extra row the agent made
    is collateral, field by field, and nothing else is."""
    gold, generated = gold_of(s)
    agent = renamed_of(s, extra_parents=extra)
    v = judge_diff(agent, gold, generated=generated)
    assert v.success
    assert {c.key for c in v.collateral} == {f"Q-{i}" for i in range(extra)}
    assert len(v.collateral) == sum(1 for c in agent if c.key.startswith("Q-"))
    assert v.strict_success == (extra == 0)
    assert judge_diff(gold, gold, generated=generated).strict_success


@settings(deadline=None, max_examples=200)
@given(
    flat_changes(["update", "delete"], ["K1", "K2", "K3"]),
    flat_changes(["update", "delete"], ["K1", "K2", "K3", "K4"]),
)
def test_without_creates_collateral_is_the_set_difference(gold, agent):
    """With no created rows σ is the identity: collateral is Δagent − Δgold by identity, and strict
    success holds exactly when the two diffs have the same identities."""
    v = judge_diff(agent, gold)
    gold_ids = {c.identity() for c in gold}
    assert v.collateral == [c for c in agent if c.identity() not in gold_ids]
    assert v.success == covers(agent, gold)
    assert v.strict_success == ({c.identity() for c in agent} == gold_ids)
