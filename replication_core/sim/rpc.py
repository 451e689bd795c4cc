"""Request / response over the simulated network, answered exactly once.

Mirrors what Kafka's `NetworkClient` guarantees a caller: every request ends with either the
server's response or an error (disconnect / request timeout). A request or response lost or blocked
by a partition is therefore answered with the caller's error value at `sent + timeout_ms`; a server
that crashed while holding a request (a parked fetch) never answers and the timeout fires. Every
call schedules its timeout up front and the first of (response, timeout) wins, so no message can be
answered twice or forgotten.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from replication_core.sim.clock import EventQueue
from replication_core.sim.network import Network

ReplyFn = Callable[[Any, int], None]
"""Caller continuation: (response or error value, arrival time in ms)."""


class Call:
    """One in-flight request: who asked whom, how to answer, what to answer on failure."""

    __slots__ = ("done", "dst", "error", "on_reply", "request", "src")

    def __init__(self, src: int, dst: int, request: Any, on_reply: ReplyFn, error: Any) -> None:
        self.src = src
        self.dst = dst
        self.request = request
        self.on_reply = on_reply
        self.error = error
        self.done = False


class RpcLayer:
    """Sends requests to handlers and routes their (possibly delayed) replies back."""

    def __init__(self, queue: EventQueue, network: Network) -> None:
        self._queue = queue
        self._network = network

    def call(self, src: int, dst: int, request: Any, handler: Callable[[Call], None], on_reply: ReplyFn,
             error: Any, timeout_ms: int) -> Call:
        """Send `request` from `src` to `dst`; `handler(call)` runs at `dst` on arrival and answers with
        `reply(call, response)` now or later; `on_reply(response_or_error, now_ms)` runs at `src`."""
        call = Call(src, dst, request, on_reply, error)
        queue = self._queue
        queue.after(timeout_ms, self._timeout, call)
        delay = self._network.delay(src, dst)
        if delay is not None:
            queue.after(delay, self._arrive, call, handler)
        return call

    def send(self, src: int, dst: int, fn: Callable[..., None], *args: Any) -> bool:
        """A one-way message (heartbeat): `fn(*args)` runs at `dst` unless lost. Returns False if lost."""
        delay = self._network.delay(src, dst)
        if delay is None:
            return False
        self._queue.after(delay, fn, *args)
        return True

    def _arrive(self, call: Call, handler: Callable[[Call], None]) -> None:
        if not call.done:
            handler(call)

    def reply(self, call: Call, response: Any) -> None:
        """The server's answer; lost or blocked answers leave the caller to its timeout."""
        if call.done:
            return
        delay = self._network.delay(call.dst, call.src)
        if delay is not None:
            self._queue.after(delay, self._deliver, call, response)

    def _deliver(self, call: Call, response: Any) -> None:
        if not call.done:
            call.done = True
            call.on_reply(response, self._queue.now_ms)

    def _timeout(self, call: Call) -> None:
        if not call.done:
            call.done = True
            call.on_reply(call.error, self._queue.now_ms)
