"""`Violation`: one broken invariant, with the events that prove it.

Output order is detection order: the checker emits a violation while it processes the event that
completes the proof (or at the end of the stream for end-of-run checks, which are dated at the loss they
found, so their times can be earlier), so sorting is never needed and two runs over the same events print
the same lines.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Violation:
    """One violation of a catalogue invariant.

    `offset` / `expected` / `actual` are the invariant's three numbers (see `Invariant.offsets`);
    `evidence` lists the event_ids that prove the violation, the detecting event last; `event_id` is
    the detecting event (-1 for end-of-run checks: `acked_write_lost` / `acks1_write_lost`, whose `ts_ms` is when
    the write last left the partition's leader in office, or the last event's time if no leader is known).
    """

    invariant: str
    severity: str
    run_id: str
    topic: str | None
    partition: int | None
    replica: int | None
    ts_ms: int
    event_id: int
    offset: int | None
    expected: int | None
    actual: int | None
    evidence: tuple[int, ...]
    message: str

    @property
    def topic_partition(self) -> str:
        """`topic-partition`, or `-` for violations that are not partition-scoped."""
        if self.topic is None:
            return "-"
        return f"{self.topic}-{self.partition}"

    def line(self) -> str:
        """The one-line rendering `replog check` prints."""
        parts = [self.invariant, self.severity, self.topic_partition,
                 f"replica={'-' if self.replica is None else self.replica}", f"ts={self.ts_ms}"]
        for name in ("offset", "expected", "actual"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value}")
        parts.append("evidence=[" + ",".join(str(e) for e in self.evidence) + "]")
        parts.append(self.message)
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (evidence as a list)."""
        out = asdict(self)
        out["evidence"] = list(self.evidence)
        return out
