"""The virtual clock: a discrete-event queue ordered by (time, sequence number).

Every action of the simulation is a callback scheduled at a virtual instant. Ties are broken by the
order of scheduling (a monotonically increasing sequence number), never by object identity or hash,
so the same scenario and seed replay the same callbacks in the same order. There is no cancellation:
actors keep a generation / token and ignore callbacks that belong to a superseded incarnation, which
is cheaper than removing entries from a heap.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any


class EventQueue:
    """The simulation's clock and agenda (the driver loop of a discrete-event simulator)."""

    __slots__ = ("_heap", "_seq", "now_ms", "processed")

    def __init__(self, start_ms: int) -> None:
        self._heap: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        self.now_ms = start_ms
        self.processed = 0

    def at(self, when_ms: int, fn: Callable[..., None], *args: Any) -> None:
        """Run `fn(*args)` at virtual time `when_ms` (never before now)."""
        self._seq += 1
        if when_ms < self.now_ms:
            when_ms = self.now_ms
        heapq.heappush(self._heap, (when_ms, self._seq, fn, args))

    def after(self, delay_ms: int, fn: Callable[..., None], *args: Any) -> None:
        """Run `fn(*args)` `delay_ms` from now (`at` inlined: most callbacks are scheduled this way)."""
        self._seq += 1
        now = self.now_ms
        when_ms = now + delay_ms
        heapq.heappush(self._heap, (when_ms if when_ms >= now else now, self._seq, fn, args))

    def next_time(self) -> int | None:
        """Instant of the next callback, or None if the agenda is empty."""
        return self._heap[0][0] if self._heap else None

    def run_until(self, end_ms: int, on_step: Callable[[], None] | None = None, step_every: int = 4096) -> None:
        """Run every callback scheduled at or before `end_ms`, in (time, sequence) order; the clock ends
        at `end_ms`. `on_step` (progress, flushing) is called every `step_every` callbacks."""
        heap = self._heap
        pop = heapq.heappop
        count = 0
        while heap and heap[0][0] <= end_ms:
            when, _, fn, args = pop(heap)
            self.now_ms = when
            fn(*args)
            count += 1
            if on_step is not None and count % step_every == 0:
                on_step()
        self.processed += count
        self.now_ms = max(self.now_ms, end_ms)
