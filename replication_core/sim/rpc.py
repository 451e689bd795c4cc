"""Request / response over the simulated network, answered exactly once.

Mirrors what Kafka's `NetworkClient` guarantees a caller: every request ends with either the
server's response or an error (disconnect / request timeout). A request or response lost or blocked
by a partition is therefore answered with the caller's error value at `sent + timeout_ms`, as is a
request to a host that lost power. A process that dies with its host up (kill -9, or the exit after a
clean shutdown) is different: its kernel closes the connections, so each caller holding a request on
it learns of the disconnect one trip later (`reset`), and a new connection to it is refused one round
trip after the attempt (`refuse`). Every call is registered for its timeout up front and the first of
(response, error, timeout) wins, so no message can be answered twice or forgotten.

Timeouts are kept per timeout length in a FIFO (deadlines of one length arrive in increasing order)
with one scheduled sweep at the head's deadline, instead of one queue entry per call; an answered
call drops its request and continuation at once, so a long timeout (30 s of in-flight fetches)
costs a small object per call, not the whole request.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from replication_core.sim.clock import EventQueue
from replication_core.sim.network import Network

ReplyFn = Callable[[Any, int], None]
"""Caller continuation: (response or error value, arrival time in ms)."""


class Call:
    """One in-flight request: who asked whom, how to answer, what to answer on failure."""

    __slots__ = ("deadline_ms", "done", "dst", "error", "on_reply", "request", "src")

    def __init__(self, src: int, dst: int, request: Any, on_reply: ReplyFn, error: Any, deadline_ms: int) -> None:
        self.src = src
        self.dst = dst
        self.request = request
        self.on_reply: ReplyFn | None = on_reply
        self.error = error
        self.deadline_ms = deadline_ms
        self.done = False

    def finish(self, response: Any, now_ms: int) -> None:
        """Answer the caller once and let go of everything the call held."""
        on_reply = self.on_reply
        self.done = True
        self.on_reply = self.request = self.error = None
        if on_reply is not None:
            on_reply(response, now_ms)


class RpcLayer:
    """Sends requests to handlers and routes their (possibly delayed) replies back."""

    def __init__(self, queue: EventQueue, network: Network) -> None:
        self._queue = queue
        self._network = network
        self._timeouts: dict[int, deque[Call]] = {}
        self._armed: set[int] = set()

    def call(self, src: int, dst: int, request: Any, handler: Callable[[Call], None], on_reply: ReplyFn,
             error: Any, timeout_ms: int) -> Call:
        """Send `request` from `src` to `dst`; `handler(call)` runs at `dst` on arrival and answers with
        `reply(call, response)` now or later; `on_reply(response_or_error, now_ms)` runs at `src`."""
        queue = self._queue
        call = Call(src, dst, request, on_reply, error, queue.now_ms + timeout_ms)
        pending = self._timeouts.get(timeout_ms)
        if pending is None:
            pending = self._timeouts[timeout_ms] = deque()
        pending.append(call)
        if timeout_ms not in self._armed:
            self._armed.add(timeout_ms)
            queue.at(call.deadline_ms, self._sweep, timeout_ms)
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

    def refuse(self, call: Call) -> None:
        """The caller's error one trip back from `call.dst`: a connection the server's kernel refused or reset
        (`NetworkClient` reports the disconnect at once); a cut way back leaves the caller to its timeout."""
        if call.done:
            return
        delay = self._network.delay(call.dst, call.src)
        if delay is not None:
            self._queue.after(delay, self._deliver, call, call.error)

    def reset(self, dst: int) -> None:
        """The process at `dst` died with its host up: every call waiting on it is refused (`refuse`), in the
        order the calls were made within each timeout length."""
        for pending in self._timeouts.values():
            for call in pending:
                if call.dst == dst and not call.done:
                    self.refuse(call)

    def _deliver(self, call: Call, response: Any) -> None:
        if not call.done:
            call.finish(response, self._queue.now_ms)

    def _sweep(self, timeout_ms: int) -> None:
        """Fire the timeouts that are due for this timeout length, then re-arm at the next deadline."""
        pending = self._timeouts[timeout_ms]
        now = self._queue.now_ms
        while pending and (pending[0].done or pending[0].deadline_ms <= now):
            call = pending.popleft()
            if not call.done:
                call.finish(call.error, now)
        if pending:
            self._queue.at(pending[0].deadline_ms, self._sweep, timeout_ms)
        else:
            self._armed.discard(timeout_ms)
