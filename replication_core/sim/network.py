"""The simulated network: per-link latency distributions, message loss, and partitions.

Nodes are integers (broker ids, the controller id, client ids). A link is directed: a one-way partition blocks
`src -> dst` only, a two-way partition blocks both directions. Partitions may overlap: a link stays cut until
every partition that cut it is healed (or everything is, by a `heal` naming no link). `delay(src, dst)`
decides one message's fate with the run's seeded RNG: None (lost or blocked) or its latency in ms. A message
sent to the same node (a broker talking to itself) is delivered at once.

RPC semantics are built on top by the callers: a request or its answer that does not arrive is
answered with an error at the caller's timeout (Kafka's `NetworkClient` disconnect / request timeout),
never silently dropped, because the fetcher's contract requires every request to be answered.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from replication_core.sim.scenario import Latency, NetworkSpec


class Network:
    """Latency, loss and partitions of every directed link."""

    def __init__(self, spec: NetworkSpec, rng: random.Random) -> None:
        self._rng = rng
        self._default = spec.latency
        self._default_loss = spec.loss
        self._links: dict[tuple[int, int], tuple[Latency, float]] = {}
        for link in spec.links:
            self._links[(link.src, link.dst)] = (link.latency or spec.latency,
                                                 spec.loss if link.loss is None else link.loss)
        self._blocked: dict[tuple[int, int], int] = {}  # link -> how many partitions in force cut it
        self._extra: dict[int, int] = {}
        self.sent = 0
        self.dropped = 0

    # --- faults ---------------------------------------------------------------------------------

    def partition(self, src: Iterable[int], dst: Iterable[int], two_way: bool) -> None:
        """Cut `src -> dst` (and `dst -> src` if `two_way`)."""
        dst = tuple(dst)
        blocked = self._blocked
        for a in src:
            for b in dst:
                if a != b:
                    blocked[(a, b)] = blocked.get((a, b), 0) + 1
                    if two_way:
                        blocked[(b, a)] = blocked.get((b, a), 0) + 1

    def heal(self, src: Iterable[int] = (), dst: Iterable[int] = (), two_way: bool = True) -> None:
        """Undo one partition of the given links (a link another partition also cuts stays cut), or restore
        every link when none is named."""
        src, dst = tuple(src), tuple(dst)
        if not src and not dst:
            self._blocked.clear()
            return
        for a in src:
            for b in dst:
                self._release((a, b))
                if two_way:
                    self._release((b, a))

    def _release(self, link: tuple[int, int]) -> None:
        cuts = self._blocked.get(link, 0)
        if cuts > 1:
            self._blocked[link] = cuts - 1
        elif cuts:
            del self._blocked[link]

    def is_blocked(self, src: int, dst: int) -> bool:
        """True if `src -> dst` is partitioned."""
        return (src, dst) in self._blocked

    @property
    def partitioned(self) -> bool:
        """True if any link is cut."""
        return bool(self._blocked)

    # --- one message ----------------------------------------------------------------------------

    def delay(self, src: int, dst: int) -> int | None:
        """The fate of one message: None if lost or partitioned, else its latency in whole ms (>= 0)."""
        self.sent += 1
        if src == dst:
            return 0
        if self._blocked and (src, dst) in self._blocked:
            self.dropped += 1
            return None
        lat, loss = self._links.get((src, dst)) or (self._default, self._default_loss)
        rng = self._rng
        if loss > 0.0 and rng.random() < loss:
            self.dropped += 1
            return None
        if lat.dist == "constant":
            ms = lat.value
        elif lat.dist == "uniform":
            ms = lat.min + (lat.max - lat.min) * rng.random()
        else:
            ms = lat.min + rng.expovariate(1.0 / lat.mean) if lat.mean > 0 else lat.min
        return int(ms)
