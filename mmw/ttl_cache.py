"""A short-lived, per-process, thread-safe cache: key -> (value, expiry), bounded, emptied whole.

The one mechanism behind ``accounts.key_cache`` (resolved keys) and ``billing.state_cache`` (an
account's stored subscription): each subclass names the setting that holds its lifetime in
seconds (0 turns it off) and keeps its own contract (what invalidates it) in its module.
Values are shared by the callers that hit them: callers read them, never change them. ``None`` is
never stored (``get`` answers it for a miss).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import ClassVar, Generic, TypeVar

from django.conf import settings
from django.db import transaction

MAX_ENTRIES = 10_000
V = TypeVar("V")


class TtlCache(Generic[V]):
    """key -> (value, expiry); past ``MAX_ENTRIES`` it is emptied rather than evicted one by one."""

    setting: ClassVar[str]  # the settings name of the lifetime in seconds

    def __init__(self, ttl: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[Hashable, tuple[V, float]] = {}

    @property
    def ttl(self) -> float:
        return self._ttl if self._ttl is not None else float(getattr(settings, self.setting))

    def get(self, key: Hashable) -> V | None:
        """The value kept for ``key`` while fresh, else ``None`` (an expired entry is dropped)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        value, expires = entry
        if self._clock() >= expires:
            with self._lock:
                self._entries.pop(key, None)
            return None
        return value

    def put(self, key: Hashable, value: V) -> None:
        """Keep ``value`` for ``ttl`` seconds (nothing with ``ttl`` 0)."""
        ttl = self.ttl
        if ttl <= 0:
            return
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[key] = (value, self._clock() + ttl)

    def get_or_read(self, key: Hashable, read: Callable[[], V]) -> V:
        """The value kept for ``key``, or ``read()`` kept from now (with ``ttl`` 0: ``read()``)."""
        if self.ttl <= 0:
            return read()
        value = self.get(key)
        if value is None:
            value = read()
            self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def invalidate(self) -> None:
        """Empty now and again when the current transaction commits (a call may re-read the old
        rows before the commit and keep them)."""
        self.clear()
        transaction.on_commit(self.clear)
