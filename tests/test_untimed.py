"""No test depends on wall-clock speed: hypothesis's profile for the whole suite has no deadline."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def test_the_default_profile_never_times_an_example():
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


def test_no_property_test_sets_a_deadline_or_slowness_check(request):
    """Every collected hypothesis test, with its own @settings, still has no deadline and no too_slow check."""
    checked = 0
    for item in request.session.items:
        own = getattr(getattr(item, "obj", None), "_hypothesis_internal_use_settings", None)
        if own is None:
            continue
        checked += 1
        assert own.deadline is None, item.nodeid
        assert HealthCheck.too_slow in own.suppress_health_check, item.nodeid
    assert checked >= 1 or len(request.session.items) < 10
