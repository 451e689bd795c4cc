"""A broker's disk: the logs and the HW checkpoint file that survive a restart.

Kafka relies on replication, not fsync: appended data sits in the page cache until the OS writes it
back (modelled by a periodic `flush_all`, `disk.flush_interval_ms`), and a power failure loses what
was not flushed. A process crash (kill -9) keeps the page cache, so nothing is lost. On restart the
log is recovered to its recovery point (`Log.recover_to_flushed`) and its HW loaded from the last
`replication-offset-checkpoint` written every `replica.high.watermark.checkpoint.interval.ms`, as
`LogManager` / `ReplicaManager` do; its log start offset is the larger of its entry in the
`log-start-offset-checkpoint` (written every `log.flush.start.offset.checkpoint.interval.ms`) and its first
segment's base, so a start raised since that checkpoint (by the leader's, on a follower) steps back to records
still on disk until the leader's next answer raises it again. A clean shutdown flushes everything and writes both
checkpoints.
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
        self.log_start_checkpoint: dict[TopicPartition, int] = {}
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

    def write_log_start_checkpoint(self) -> None:
        """`LogManager.checkpointLogStartOffsets`: replace the file with the start of every log that starts above its
        first segment's base (a log without an entry loads its first segment's base)."""
        self.log_start_checkpoint = {tp: log.log_start_offset for tp, log in self.logs.items()
                                     if log.log_start_offset > log.first_segment_base}

    def forget(self, tp: TopicPartition) -> None:
        """The replica's log was deleted (StopReplica with delete, a stray log): `LogManager.asyncDelete` rewrites the
        log start checkpoint without it, from every other log's current start."""
        self.logs.pop(tp, None)
        self.hw_checkpoint.pop(tp, None)
        self.write_log_start_checkpoint()

    def crash(self, now_ms: int, lose_unflushed: bool, events: EventLog | None) -> int:
        """What survives a crash, computed at the crash instant (`LogLoader` recovery on the next start):
        after a power failure every log loses what follows its recovery point; in every case the log start
        offset and the HW are what their checkpoint files say (`Log.recover_to_flushed`), because the in-memory
        ones are gone.

        The schema has no "recovery" truncation reason: a loss is reported as a `truncation` event with
        reason `full` (log emptied) or `out_of_range` (an unflushed tail dropped), emitted right after the
        broker's `broker_lifecycle` crash event, then a `log_start_offset_change` with reason `log_load` where
        the loaded start differs, then the `hw_change`, so a reader can rebuild every replica's log from events
        alone. Returns the number of offsets lost."""
        lost_total = 0
        for tp in sorted(self.logs):
            log = self.logs[tp]
            old_leo, old_hw, old_lso = log.log_end_offset, log.high_watermark, log.log_start_offset
            if not lose_unflushed:
                log.flush()
            lost = log.recover_to_flushed(self.hw_checkpoint.get(tp, 0), self.log_start_checkpoint.get(tp, 0))
            lost_total += lost
            if events is None:
                continue
            if log.log_end_offset != old_leo:
                # A recovered end above the old one is a log restarted empty at its checkpointed start.
                events.append(make_event(
                    "truncation", now_ms, self.broker_id, tp.topic, tp.partition, log.leader_epoch,
                    role=FOLLOWER, old_leo=old_leo, truncate_offset=log.log_end_offset,
                    reason="full" if log.log_end_offset == log.log_start_offset else "out_of_range", hw=old_hw))
            if log.log_start_offset != old_lso:
                events.append(make_event(
                    "log_start_offset_change", now_ms, self.broker_id, tp.topic, tp.partition, log.leader_epoch,
                    role=FOLLOWER, old_log_start_offset=old_lso, log_start_offset=log.log_start_offset,
                    reason="log_load"))
            if log.high_watermark != old_hw:
                events.append(make_event(
                    "hw_change", now_ms, self.broker_id, tp.topic, tp.partition, log.leader_epoch,
                    role=FOLLOWER, old_hw=old_hw, hw=log.high_watermark))
        return lost_total
