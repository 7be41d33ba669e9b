"""Retries with exponential backoff, and a concurrency limit that shrinks when a provider rate-limits us."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from toolshift.agents.chat import ModelError, RetryableModelError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a retryable failure is retried."""

    attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    jitter: float = 0.25

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `attempt` (1-based): the server's hint wins when given."""
        if retry_after is not None:
            return min(self.max_delay, max(0.0, retry_after))
        base = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return base * (1 + random.uniform(-self.jitter, self.jitter))


RateLimitListener = Callable[[], None]


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_rate_limit: RateLimitListener | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run `call`, retrying `RetryableModelError` with backoff; other errors pass straight through."""
    last: RetryableModelError | None = None
    for attempt in range(1, policy.attempts + 1):
        try:
            return await call()
        except RetryableModelError as exc:
            last = exc
            if exc.rate_limited and on_rate_limit is not None:
                on_rate_limit()
            if attempt == policy.attempts:
                break
            await sleep(policy.delay(attempt, exc.retry_after))
    raise ModelError(f"gave up after {policy.attempts} attempts: {last}") from last


class AdaptiveLimiter:
    """A semaphore whose width halves on a rate limit and grows back by one after a run of successes.

    The run loop takes a slot per episode; model backends report rate limits through `rate_limited`.
    """

    def __init__(self, limit: int, *, grow_after: int = 8) -> None:
        if limit < 1:
            raise ValueError("concurrency limit must be at least 1")
        self.max_limit = limit
        self.limit = limit
        self.grow_after = grow_after
        self.in_use = 0
        self.rate_limits = 0
        self._successes = 0
        self._cond = asyncio.Condition()

    async def acquire(self) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_use < self.limit)
            self.in_use += 1

    async def release(self, *, ok: bool = True) -> None:
        async with self._cond:
            self.in_use -= 1
            if ok:
                self._successes += 1
                if self._successes >= self.grow_after and self.limit < self.max_limit:
                    self.limit += 1
                    self._successes = 0
            self._cond.notify_all()

    def rate_limited(self) -> None:
        """Called (synchronously) by a backend that hit a rate limit: halve the width."""
        self.rate_limits += 1
        self.limit = max(1, self.limit // 2)
        self._successes = 0

    async def __aenter__(self) -> AdaptiveLimiter:
        await self.acquire()
        return self

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        await self.release(ok=exc_type is None)
