"""Property tests of the leader-side rules (reference §2.3-§2.5, §11 invariants 1, 2 and 7): random
appends, follower fetches, clock steps, ISR expirations and controller answers never break them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replication_core.config import ReplicationConfig
from replication_core.errors import Errors, NotEnoughReplicasError
from replication_core.partition import (
    AlterPartitionRequest,
    LeaderAndIsr,
    Partition,
    PartitionRegistration,
)

T0 = 1_000_000
FOLLOWERS = (2, 3)

op = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3), st.sampled_from([0, 1, -1])),
    st.tuples(st.just("fetch"), st.sampled_from(FOLLOWERS), st.booleans()),
    st.tuples(st.just("sleep"), st.sampled_from([100, 5_000, 15_000, 30_001]), st.just(0)),
    st.tuples(st.just("shrink"), st.just(0), st.just(0)),
    st.tuples(st.just("answer"), st.sampled_from(["ok", "NETWORK_EXCEPTION", "INVALID_UPDATE_VERSION",
                                                  "OPERATION_NOT_ATTEMPTED"]), st.just(0)),
)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 3), st.lists(op, max_size=60))
def test_leader_invariants(min_isr: int, ops: list[tuple[str, object, object]]) -> None:
    """HW never decreases or passes the LEO; HW <= every maximal-ISR follower's LEO; no HW move under
    min ISR; the leader stays in the ISR; at most one AlterPartition outstanding."""
    p = Partition("t", 0, 1, ReplicationConfig(min_insync_replicas=min_isr))
    p.make_leader(PartitionRegistration(1, 1, (1, 2, 3), (1, 2, 3), 1), T0)
    now = T0
    follower_leo = dict.fromkeys(FOLLOWERS, 0)
    pending: AlterPartitionRequest | None = None
    partition_epoch = 1
    for kind, a, b in ops:
        old_hw = p.log.high_watermark
        was_under_min = p.is_under_min_isr
        if kind == "append":
            try:
                p.append_records_to_leader(int(a), 10, 0, int(b), now)  # type: ignore[call-overload]
            except NotEnoughReplicasError:
                assert b == -1 and was_under_min
        elif kind == "fetch":
            f = int(a)  # type: ignore[call-overload]
            info = p.fetch_records(f, follower_leo[f], 10**9, now, current_leader_epoch=1)
            if b:  # the response arrives and the follower appends it
                follower_leo[f] = info.log_end_offset
            if info.alter_partition is not None:
                assert pending is None, "a second AlterPartition while one is outstanding"
                pending = info.alter_partition
        elif kind == "sleep":
            now += int(a)  # type: ignore[call-overload]
        elif kind == "shrink":
            req = p.maybe_shrink_isr(now)
            if req is not None:
                assert pending is None, "a second AlterPartition while one is outstanding"
                assert 1 in req.leader_and_isr.isr
                pending = req
        elif kind == "answer" and pending is not None:
            if a == "ok":
                partition_epoch += 1
                sent = pending.leader_and_isr
                response: LeaderAndIsr | Errors = LeaderAndIsr(1, 1, sent.isr, partition_epoch)
            else:
                response = Errors[str(a)]
            outcome = p.handle_alter_partition_response(pending, response, now)
            pending = outcome.retry
            if pending is None and p.is_inflight:
                # Stays pending (e.g. INVALID_UPDATE_VERSION) until new metadata: emulate it.
                partition_epoch += 1
                p.make_leader(PartitionRegistration(1, 1, tuple(sorted(p.isr)), (1, 2, 3), partition_epoch), now)
        hw, leo = p.log.high_watermark, p.log.log_end_offset
        assert old_hw <= hw <= leo
        if was_under_min and p.is_under_min_isr:
            assert hw == old_hw, "HW advanced while under min ISR"
        for rid in p.maximal_isr - {1}:
            r = p.get_replica(rid)
            assert r is not None and hw <= max(r.log_end_offset, 0)
        assert 1 in p.isr and 1 in p.maximal_isr
        assert 1 not in p.get_out_of_sync_replicas(now)
        assert p.is_inflight == (pending is not None)
