"""A broker's disk: the logs and the HW checkpoint file that survive a restart.

Kafka relies on replication, not fsync: appended data sits in the page cache until the OS writes it
back (modelled by a periodic `flush_all`, `disk.flush_interval_ms`), and a power failure loses what
was not flushed. A process crash (kill -9) keeps the page cache, so nothing is lost. On restart the
log is recovered to its recovery point (`Log.recover_to_flushed`) and its HW loaded from the last
`replication-offset-checkpoint` written every `replica.high.watermark.checkpoint.interval.ms`, as
`LogManager` / `ReplicaManager` do. A clean shutdown flushes everything and writes the checkpoint.
"""

from __future__ import annotations

from replication_core.event_log import EventLog
from replication_core.events import make_event
from replication_core.log import FOLLOWER, Log
from replication_core.partition_fetch_state import TopicPartition


class Disk:
    """The durable state of one broker (`LogManager` log dirs + `replication-offset-checkpoint`)."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.logs: dict[TopicPartition, Log] = {}
        self.hw_checkpoint: dict[TopicPartition, int] = {}
        # The clean shutdown file (`LogManager`'s `.kafka_cleanshutdown`, KIP-966): the broker epoch of the
        # process that shut down cleanly, -1 after a crash. The next start sends it to the controller as its
        # previous broker epoch, which tells a clean shutdown from an unclean one.
        self.clean_shutdown_epoch = -1

    def flush_all(self) -> None:
        """OS write-back / `LogManager.flush`: everything appended so far becomes durable."""
        for log in self.logs.values():
            log.flush()

    def write_hw_checkpoint(self, hws: dict[TopicPartition, int]) -> None:
        """`checkpointHighWatermarks`: replace the checkpoint file with the current HWs."""
        self.hw_checkpoint.update(hws)

    def forget(self, tp: TopicPartition) -> None:
        """The replica was deleted (StopReplica with delete)."""
        self.logs.pop(tp, None)
        self.hw_checkpoint.pop(tp, None)

    def crash(self, now_ms: int, lose_unflushed: bool, events: EventLog | None) -> int:
        """What survives a crash, computed at the crash instant (`LogLoader` recovery on the next start):
        after a power failure every log loses what follows its recovery point; in every case the HW is
        what the checkpoint file says (0 when never checkpointed), because the in-memory HW is gone.

        The schema has no "recovery" truncation reason: a loss is reported as a `truncation` event with
        reason `full` (log emptied) or `out_of_range` (an unflushed tail dropped), emitted right after the
        broker's `broker_lifecycle` crash event, so a reader can rebuild every replica's log from events
        alone. Returns the number of offsets lost."""
        lost_total = 0
        for tp in sorted(self.logs):
            log = self.logs[tp]
            old_leo, old_hw = log.log_end_offset, log.high_watermark
            if not lose_unflushed:
                log.flush()
            lost = log.recover_to_flushed(self.hw_checkpoint.get(tp, 0))
            lost_total += lost
            if events is not None and lost > 0:
                events.append(make_event(
                    "truncation", now_ms, self.broker_id, tp.topic, tp.partition, log.leader_epoch,
                    role=FOLLOWER, old_leo=old_leo, truncate_offset=log.log_end_offset,
                    reason="full" if log.log_end_offset == log.log_start_offset else "out_of_range", hw=old_hw))
            if events is not None and log.high_watermark != old_hw:
                events.append(make_event(
                    "hw_change", now_ms, self.broker_id, tp.topic, tp.partition, log.leader_epoch,
                    role=FOLLOWER, old_hw=old_hw, hw=log.high_watermark))
        return lost_total
