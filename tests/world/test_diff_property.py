"""Snapshots, restores and diffs; the property that per-call changes compose to the world's diff."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.models import RowChange
from toolshift.world import World, compose_changes


def test_restore_is_exact(clinic):
    snap = clinic.snapshot()
    clinic.call("update_patient", {"patient_id": "PAT-00001", "phone": "9"})
    clinic.call("cancel_appointment", {"appointment_id": "APT-00003"})
    assert clinic.changes_since(snap)
    clinic.restore(snap)
    assert clinic.changes_since(snap) == []
    assert clinic.call("update_patient", {"patient_id": "PAT-00001", "phone": "8"}).changes[0].before != "9"


def test_diff_conventions_for_insert_update_delete(tiny):
    a = tiny.snapshot()
    original = tiny.runtime.get("customer", "C001")["name"]
    created = tiny.call("create_customer", {"name": "New", "credit": 3.0}).result["customer_id"]
    tiny.call("update_customer", {"customer_id": "C001", "name": "Renamed"})
    for o in tiny.runtime.find("order", customer_id="C002"):
        assert tiny.call("delete_order", {"order_id": o["order_id"]}).ok
    assert tiny.call("delete_customer", {"customer_id": "C002"}).ok
    b = tiny.snapshot()
    diff = tiny.diff(a, b)
    inserted = [c for c in diff if c.key == created]
    assert {c.op for c in inserted} == {"insert"} and all(c.before is None for c in inserted)
    assert {c.field for c in inserted} == {"customer_id", "name", "vip", "credit"}
    assert [c for c in diff if c.key == "C001"] == [
        RowChange(table="customer", key="C001", field="name", op="update", before=original, after="Renamed")
    ]
    deleted = [c for c in diff if c.key == "C002"]
    assert {c.op for c in deleted} == {"delete"} and all(c.after is None for c in deleted)
    assert {c.field for c in deleted} == {"customer_id", "name", "vip", "credit"}
    assert diff == sorted(diff, key=lambda c: (c.table, c.key, c.field))
    assert compose_changes(diff + tiny.diff(b, a)) == []


def test_diff_of_a_world_against_its_fork(tiny):
    before = tiny.snapshot()
    fork = tiny.fork()
    fork.call("update_customer", {"customer_id": "C003", "name": "Forked"})
    changes = tiny.diff(tiny, fork)
    assert [(c.key, c.field, c.after) for c in changes] == [("C003", "name", "Forked")]
    assert tiny.changes_since(before) == []


PATIENTS = [f"PAT-{n:05d}" for n in range(1, 21)]
APPOINTMENTS = [f"APT-{n:05d}" for n in range(1, 41)] + ["APT-00501", "APT-00502"]
INVOICES = [f"INV-{n:05d}" for n in range(1, 31)]
DOCTORS = [f"DOC-{n:03d}" for n in range(1, 6)]
slots = st.builds(
    lambda d, h, m: f"2026-06-{d:02d}T{h:02d}:{m:02d}",
    st.integers(1, 5),
    st.integers(9, 10),
    st.sampled_from([0, 30]),
)
calls = st.one_of(
    st.builds(
        lambda p, ph: ("update_patient", {"patient_id": p, "phone": ph}),
        st.sampled_from(PATIENTS),
        st.sampled_from(["1", "2", "3"]),
    ),
    st.builds(
        lambda p, d, s: ("book_appointment", {"patient_id": p, "doctor_id": d, "starts_at": s}),
        st.sampled_from(PATIENTS),
        st.sampled_from(DOCTORS),
        slots,
    ),
    st.builds(lambda a: ("cancel_appointment", {"appointment_id": a}), st.sampled_from(APPOINTMENTS)),
    st.builds(lambda a: ("delete_appointment", {"appointment_id": a}), st.sampled_from(APPOINTMENTS)),
    st.builds(lambda i: ("pay_invoice", {"invoice_id": i}), st.sampled_from(INVOICES)),
    st.builds(
        lambda a, amt: ("complete_appointment", {"appointment_id": a, "amount": amt}),
        st.sampled_from(APPOINTMENTS),
        st.sampled_from([-5.0, 50.0, 120.25]),
    ),
    st.builds(
        lambda d, acc: ("update_doctor", {"doctor_id": d, "accepting": acc}),
        st.sampled_from(DOCTORS),
        st.booleans(),
    ),
    st.builds(lambda p: ("deactivate_patient", {"patient_id": p}), st.sampled_from(PATIENTS)),
    st.builds(
        lambda n: (
            "create_patient",
            {
                "full_name": n,
                "email": f"{n}@x.example",
                "phone": "5",
                "date_of_birth": "1990-02-03",
                "doctor_id": "DOC-001",
            },
        ),
        st.sampled_from(["aa", "bb"]),
    ),
    st.builds(
        lambda p: ("delete_patient", {"patient_id": p}),
        st.sampled_from(["PAT-00301", "PAT-00302", *PATIENTS[:3]]),
    ),
    st.builds(lambda p: ("get_patient", {"patient_id": p}), st.sampled_from(PATIENTS)),
    st.just(("update_patient", {"patient_id": "PAT-00001", "phone": 42})),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(calls, min_size=1, max_size=25))
def test_reported_changes_compose_to_the_diff(clinic_domain, sequence):
    world = World(clinic_domain)
    start = world.snapshot()
    reported = []
    for name, args in sequence:
        before = world.snapshot()
        result = world.call(name, args)
        if not result.ok:
            assert result.changes == []
        assert result.changes == world.changes_since(before)
        reported += result.changes
    assert compose_changes(reported) == world.changes_since(start)
    assert world._diff_in_python(start.conn, world.conn) == world.changes_since(start)
    world.restore(start)
    assert world.changes_since(start) == []
