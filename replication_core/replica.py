"""The leader's view of one follower: `kafka.cluster.Replica` / `ReplicaState` (reference §2.1).

Only a leader keeps these (one per remote replica). The state is mutated in place by the two transitions
Kafka defines — `update_fetch_state` after every follower fetch and `reset_replica_state` when the leader
epoch is bumped — and read by the ISR and high-watermark rules through `is_caught_up`.
"""

from __future__ import annotations

from replication_core.errors import NotLeaderOrFollowerError

UNKNOWN_OFFSET = -1


class Replica:
    """`Replica` + `ReplicaState`: a remote replica's fetch state as the leader sees it.

    `log_end_offset` is the fetch offset of the follower's last fetch (the leader's notion of its LEO).
    Initial values are `ReplicaState.Empty`: offsets -1, `last_fetch_leader_log_end_offset` 0, times 0.
    """

    __slots__ = (
        "broker_epoch",
        "broker_id",
        "last_caught_up_time_ms",
        "last_fetch_leader_log_end_offset",
        "last_fetch_time_ms",
        "log_end_offset",
        "log_start_offset",
    )

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.log_start_offset = UNKNOWN_OFFSET
        self.log_end_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_log_end_offset = 0
        self.last_fetch_time_ms = 0
        self.last_caught_up_time_ms = 0
        self.broker_epoch: int | None = None

    def __repr__(self) -> str:
        return (f"Replica(brokerId={self.broker_id}, logStartOffset={self.log_start_offset}, "
                f"logEndOffset={self.log_end_offset}, lastCaughtUpTimeMs={self.last_caught_up_time_ms}, "
                f"lastFetchLeaderLogEndOffset={self.last_fetch_leader_log_end_offset}, "
                f"lastFetchTimeMs={self.last_fetch_time_ms}, brokerEpoch={self.broker_epoch})")

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """`ReplicaState.isCaughtUp`: at the leader LEO, or caught up within the last `max_lag_ms`."""
        return leader_end_offset == self.log_end_offset or now_ms - self.last_caught_up_time_ms <= max_lag_ms

    def update_fetch_state(
        self,
        fetch_offset: int,
        follower_log_start_offset: int,
        fetch_time_ms: int,
        leader_end_offset: int,
        broker_epoch: int = -1,
        cached_broker_epoch: int | None = None,
    ) -> None:
        """`updateFetchStateOrThrow`: apply one follower fetch (reference §2.1 steps 1-3).

        `leader_end_offset` is the leader LEO captured before the read; `cached_broker_epoch` is the
        metadata cache's alive epoch for this broker (KRaft), used to reject stale fetch state.
        """
        if broker_epoch != -1 and cached_broker_epoch is not None and cached_broker_epoch > broker_epoch:
            raise NotLeaderOrFollowerError(
                f"Received stale fetch state update. broker epoch={broker_epoch} vs expected="
                f"{cached_broker_epoch}")
        if fetch_offset >= leader_end_offset:
            if fetch_time_ms > self.last_caught_up_time_ms:
                self.last_caught_up_time_ms = fetch_time_ms
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            # Caught up to where the leader was at the previous fetch: caught up as of that fetch.
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_start_offset = follower_log_start_offset
        self.log_end_offset = fetch_offset
        if leader_end_offset > self.last_fetch_leader_log_end_offset:
            self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms
        self.broker_epoch = broker_epoch

    def reset_replica_state(
        self, now_ms: int, leader_end_offset: int, is_new_leader: bool, is_follower_in_sync: bool
    ) -> None:
        """`resetReplicaState`: called by `makeLeader` only when the leader epoch increases."""
        self.last_caught_up_time_ms = now_ms if is_follower_in_sync else 0
        if is_new_leader:
            self.log_start_offset = UNKNOWN_OFFSET
            self.log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_time_ms = 0
            self.broker_epoch = None
        else:
            self.last_fetch_leader_log_end_offset = leader_end_offset
            self.last_fetch_time_ms = now_ms if is_follower_in_sync else 0
