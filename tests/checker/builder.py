"""Hand-built event sequences for the checker tests.

`Run` numbers events (event_id = position, ts increasing by 1 ms unless given) and stamps the envelope;
its helpers emit the events the engine emits, in the engine's order, so a test reads like the scenario
it describes. `healthy()` is the common starting point: three replicas, broker 1 leading epoch 0 with
ISR {1, 2, 3}, brokers 2 and 3 following.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from replication_core.checker.checker import CheckOptions, CheckResult, check_events
from replication_core.checker.violation import Violation
from replication_core.events import make_event

TOPIC = "t"
CONTROLLER = 100


class Run:
    """An event sequence under construction for one partition (`t-0`) of run `r`."""

    def __init__(self, start_ts: int = 1_000_000) -> None:
        self.events: list[dict[str, Any]] = []
        self.ts = start_ts
        self.leo: dict[int, int] = {}
        self.hws: dict[int, int] = {}

    # --- raw ---------------------------------------------------------------------------------------

    def add(self, event_type: str, broker: int, epoch: int | None = None, *, ts: int | None = None,
            scoped: bool = True, **payload: Any) -> int:
        """Append one event; returns its event_id."""
        if ts is None:
            self.ts += 1
            ts = self.ts
        else:
            self.ts = ts
        ev = make_event(event_type, ts, broker, TOPIC if scoped else None, 0 if scoped else None, epoch, **payload)
        ev.update(schema_version="1.0", source="engine", run_id="r", event_id=len(self.events))
        self.events.append(ev)
        return len(self.events) - 1

    # --- helpers mirroring the engine ------------------------------------------------------------------

    def config(self, broker: int, **values: str) -> int:
        """A broker_config with Kafka config names (`min.insync.replicas` ...) given as keywords with `_`."""
        return self.add("broker_config", broker, scoped=False,
                        config={k.replace("_", "."): v for k, v in values.items()})

    def election(self, leader: int | None, epoch: int, isr: Iterable[int], action: str = "clean",
                 replicas: Iterable[int] = (1, 2, 3)) -> int:
        """The controller elects `leader` in `epoch`."""
        return self.add("leader_election", CONTROLLER, epoch, action=action, leader_id=leader, partition_epoch=epoch,
                        isr=list(isr), replicas=list(replicas))

    def become_leader(self, broker: int, epoch: int, isr: Iterable[int], replicas: Iterable[int] = (1, 2, 3)) -> int:
        """`Partition.makeLeader`."""
        return self.add("leadership_change", broker, epoch, action="become_leader", leader_id=broker,
                        partition_epoch=epoch, replicas=list(replicas), isr=sorted(isr),
                        leo=self.leo.get(broker, 0), hw=self.hws.get(broker, 0))

    def become_follower(self, broker: int, epoch: int, leader: int, replicas: Iterable[int] = (1, 2, 3)) -> int:
        """`Partition.makeFollower`."""
        return self.add("leadership_change", broker, epoch, action="become_follower", leader_id=leader,
                        partition_epoch=epoch, replicas=list(replicas), isr=[],
                        leo=self.leo.get(broker, 0), hw=self.hws.get(broker, 0))

    def append(self, broker: int, count: int, batch_epoch: int, checksum: int, role: str = "follower",
               epoch: int | None = None, base: int | None = None) -> int:
        """A batch of `count` records at the broker's LEO (or `base`)."""
        start = self.leo.get(broker, 0) if base is None else base
        self.leo[broker] = start + count
        return self.add("append", broker, batch_epoch if epoch is None else epoch, role=role, base_offset=start,
                        last_offset=start + count - 1, record_count=count, bytes=100 * count,
                        batch_leader_epoch=batch_epoch, batch_checksum=checksum, leo=start + count)

    def hw(self, broker: int, new: int, role: str, epoch: int) -> int:
        """A HW move."""
        old = self.hws.get(broker, 0)
        self.hws[broker] = new
        return self.add("hw_change", broker, epoch, role=role, old_hw=old, hw=new)

    def fetch_state(self, leader: int, follower: int, fetch_offset: int, epoch: int,
                    caught_up_ms: int | None = None) -> int:
        """The leader records a follower fetch at `fetch_offset`."""
        return self.add("follower_fetch_state", leader, epoch, follower_id=follower, fetch_offset=fetch_offset,
                        last_caught_up_time_ms=self.ts + 1 if caught_up_ms is None else caught_up_ms,
                        leo=self.leo.get(leader, 0))

    def truncate(self, broker: int, to: int, reason: str, epoch: int) -> int:
        """A truncation (the event's hw is the HW before it), then the HW clamp."""
        old_leo, old_hw = self.leo.get(broker, 0), self.hws.get(broker, 0)
        self.leo[broker] = to
        eid = self.add("truncation", broker, epoch, role="follower", old_leo=old_leo, truncate_offset=to,
                       reason=reason, hw=old_hw)
        if old_hw > to:
            self.hw(broker, to, "follower", epoch)
        return eid

    def ack(self, broker: int, base: int, last: int, checksum: int, epoch: int, acks: int = -1,
            error: str = "NONE") -> int:
        """The leader's produce answer."""
        return self.add("produce_ack", broker, epoch, acks=acks, error=error, base_offset=base, last_offset=last,
                        batch_checksum=checksum)

    def isr(self, leader: int, action: str, state: str, old: Iterable[int], new: Iterable[int], epoch: int,
            reason: str = "alter_partition") -> int:
        """An isr_change of the leader."""
        return self.add("isr_change", leader, epoch, action=action, isr_state=state, old_isr=sorted(old),
                        isr=sorted(new), partition_epoch=epoch, reason=reason, error="NONE")

    def fetch(self, follower: int, leader: int, epoch: int, offset: int, last_fetched_epoch: int | None = None,
              ts: int | None = None) -> int:
        """A follower FetchRequest."""
        return self.add("fetch", follower, epoch, ts=ts, leader_id=leader, fetcher_id=0, fetch_offset=offset,
                        last_fetched_epoch=last_fetched_epoch)

    def response(self, follower: int, leader: int, epoch: int, offset: int, *, error: str = "NONE",
                 leader_hw: int | None = None, records: int = 0, diverging: tuple[int, int] | None = None,
                 ts: int | None = None, received: int | None = None) -> int:
        """The follower processes a fetch response (that arrived at `received`, when given)."""
        return self.add("fetch_response", follower, epoch, ts=ts, leader_id=leader, fetcher_id=0,
                        response_received_ms=received,
                        fetch_offset=offset, error=error, leader_hw=leader_hw, record_count=records,
                        bytes=100 * records, diverging_epoch=None if diverging is None else diverging[0],
                        diverging_end_offset=None if diverging is None else diverging[1])

    def fault(self, broker: int, action: str, duration_ms: int | None = None, ts: int | None = None) -> int:
        """A broker_fault the simulator's fault injector records (gc_pause, disk_stall, ...)."""
        return self.add("broker_fault", broker, scoped=False, ts=ts, action=action, duration_ms=duration_ms)

    def lifecycle(self, broker: int, action: str) -> int:
        """A broker start / crash / restart / shutdown."""
        return self.add("broker_lifecycle", broker, scoped=False, action=action)

    def produce(self, leader: int, followers: Iterable[int], count: int, epoch: int, checksum: int,
                acks: int = -1) -> tuple[int, int]:
        """A replicated write: leader append, follower appends and fetches, leader HW, ack, follower HWs.
        Returns (leader append event_id, ack event_id)."""
        followers = list(followers)
        base = self.leo.get(leader, 0)
        append_id = self.append(leader, count, epoch, checksum, role="leader")
        for f in followers:
            self.append(f, count, epoch, checksum)
        for f in followers:
            self.fetch_state(leader, f, self.leo[f], epoch)
        self.hw(leader, base + count, "leader", epoch)
        ack_id = self.ack(leader, base, base + count - 1, checksum, epoch, acks=acks)
        for f in followers:
            self.hw(f, base + count, "follower", epoch)
        return append_id, ack_id

    def check(self, options: CheckOptions | None = None) -> CheckResult:
        """Run the checker over the events so far."""
        return check_events(self.events, options)


def healthy() -> Run:
    """Three replicas, broker 1 leads epoch 0 with ISR {1,2,3}; two writes (offsets 0, 1) committed."""
    run = Run()
    run.election(1, 0, [1, 2, 3])
    run.become_leader(1, 0, [1, 2, 3])
    run.become_follower(2, 0, 1)
    run.become_follower(3, 0, 1)
    run.produce(1, [2, 3], 1, 0, 1000)
    run.produce(1, [2, 3], 1, 0, 1001)
    return run


def only(result: CheckResult, invariant: str) -> list[Violation]:
    """The violations of one invariant."""
    return [v for v in result.violations if v.invariant == invariant]


def _stale_follower_under_new_leader(records: int) -> Run:
    """Follower 3 holds epoch-0 records 2..3 the leader never had (LEO 4); broker 2 leads epoch 1 with ISR
    {1, 2} and wrote `records` epoch-1 records from offset 2, replicated to broker 1."""
    run = healthy()
    run.append(3, 2, 0, 3000)
    run.election(2, 1, [1, 2])
    run.become_leader(2, 1, [1, 2])
    run.become_follower(1, 1, 2)
    run.become_follower(3, 1, 2)
    run.produce(2, [1], records, 1, 2001)
    return run


def follower_with_stale_epoch_records() -> Run:
    """Follower 3 holds epoch-0 records 2..3 the leader never had; the leader (broker 2, epoch 1) has
    epoch-1 data from offset 2, and follower 3 fetches at 4 with LastFetchedEpoch 0."""
    run = _stale_follower_under_new_leader(1)
    run.fetch(3, 2, 1, 4, last_fetched_epoch=0)
    return run


def follower_behind_the_leaders_cache() -> Run:
    """Follower 3 holds epoch-0 records 2..3 (LEO 4); leader 2 (epoch 1) wrote epoch-1 records 2..4 and its
    retention moved its log start offset to 3, so its epoch cache is {1: 3}: epoch 0 is older than all of it.
    Follower 3 fetches at 4 with LastFetchedEpoch 0, which the leader answers (0, 3) (`endOffsetFor`: the
    asked epoch, the start of the first cached one)."""
    run = _stale_follower_under_new_leader(3)
    run.add("log_start_offset_change", 2, 1, role="leader", old_log_start_offset=0, log_start_offset=3)
    run.fetch(3, 2, 1, 4, last_fetched_epoch=0)
    return run


def names(result: CheckResult) -> list[str]:
    """Invariant names of all violations, in order."""
    return [v.invariant for v in result.violations]
