"""Retries with backoff and the concurrency limit that narrows on rate limits."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolshift.agents.chat import ModelConfigError, ModelError, RetryableModelError
from toolshift.agents.retry import AdaptiveLimiter, RetryPolicy, with_retries


def test_retries_back_off_and_honour_retry_after():
    slept: list[float] = []
    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RetryableModelError("429", rate_limited=True, retry_after=2.5)
        if attempts < 4:
            raise RetryableModelError("503")
        return "ok"

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    limited = []
    policy = RetryPolicy(attempts=5, base_delay=1.0, jitter=0.0)
    assert (
        asyncio.run(with_retries(flaky, policy, on_rate_limit=lambda: limited.append(1), sleep=sleep)) == "ok"
    )
    assert slept == [2.5, 2.0, 4.0] and limited == [1]


def test_retries_give_up_and_config_errors_are_never_retried():
    async def down() -> None:
        raise RetryableModelError("503")

    async def nosleep(_: float) -> None:
        return None

    with pytest.raises(ModelError, match="gave up after 3 attempts"):
        asyncio.run(with_retries(down, RetryPolicy(attempts=3), sleep=nosleep))
    calls = 0

    async def wrong_model() -> None:
        nonlocal calls
        calls += 1
        raise ModelConfigError("model not found")

    with pytest.raises(ModelConfigError):
        asyncio.run(with_retries(wrong_model, RetryPolicy(attempts=3), sleep=nosleep))
    assert calls == 1


@given(st.integers(1, 64), st.integers(0, 10))
def test_limiter_halves_on_rate_limits_and_never_drops_below_one(limit, hits):
    limiter = AdaptiveLimiter(limit)
    for _ in range(hits):
        limiter.rate_limited()
    assert limiter.limit == max(1, limit >> hits) if hits < 64 else limiter.limit == 1


def test_limiter_bounds_concurrency_and_grows_back():
    limiter = AdaptiveLimiter(4, grow_after=2)
    peak = 0

    async def job(i: int) -> None:
        nonlocal peak
        async with limiter:
            peak = max(peak, limiter.in_use)
            if i == 0:
                limiter.rate_limited()
            await asyncio.sleep(0.01)

    async def main() -> None:
        await asyncio.gather(*(job(i) for i in range(12)))

    asyncio.run(main())
    assert peak <= 4 and limiter.rate_limits == 1
    assert limiter.limit == 4  # narrowed to 2, then grew back after runs of successes
