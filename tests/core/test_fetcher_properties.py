"""Property: epoch-based truncation finds exactly the divergence point (reference §3.5, §11 invariant 9).

Histories are generated to satisfy the log-matching property of a real cluster: a common prefix, then
a leader suffix and a follower suffix written in *distinct* epochs (one leader per epoch), all below
or at the leader's current epoch. With OffsetsForLeaderEpoch (KIP-279) or DivergingEpoch truncation the
follower must end identical to the leader and must never truncate below the common prefix.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replication_core.fetcher import initial_fetch_offset
from replication_core.log import RecordBatch
from replication_core.partition_fetch_state import TopicPartition
from replication_core.truncation import TruncationProtocol
from tests.core.mock_leader import log_signature, make_harness, mk_batch, mk_log

TP = TopicPartition("topic", 0)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[RecordBatch], list[RecordBatch], list[RecordBatch], int]:
    """(common prefix, leader suffix, follower suffix, leader epoch) obeying log matching."""
    prefix: list[RecordBatch] = []
    epoch = draw(st.integers(0, 2))
    for _ in range(draw(st.integers(0, 3))):
        epoch += draw(st.integers(0, 2))
        for _ in range(draw(st.integers(1, 3))):
            prefix.append(mk_batch(len(prefix), epoch, tag="common"))
    last = prefix[-1].leader_epoch if prefix else -1
    epochs = sorted(draw(st.sets(st.integers(last + 1, last + 8), max_size=5)))
    owners = [draw(st.booleans()) for _ in epochs]  # True: written by the current leader
    suffixes: dict[bool, list[RecordBatch]] = {True: [], False: []}
    for e, is_leader in zip(epochs, owners, strict=True):
        side = suffixes[is_leader]
        for _ in range(draw(st.integers(1, 3))):
            offset = len(prefix) + len(side)
            side.append(mk_batch(offset, e, tag="leader" if is_leader else "follower"))
    top = max([last, *epochs]) if epochs or prefix else 0
    follower_owns_top = bool(epochs) and not owners[-1]
    leader_epoch = max(top, 0) + (1 if follower_owns_top else draw(st.integers(0, 1)))
    return prefix, suffixes[True], suffixes[False], leader_epoch


@settings(max_examples=150, deadline=None)
@given(history=histories(),
       protocol=st.sampled_from([TruncationProtocol.LEADER_EPOCH, TruncationProtocol.DIVERGING_EPOCH]))
def test_epoch_truncation_converges_without_truncating_the_common_prefix(
        history: tuple[list[RecordBatch], list[RecordBatch], list[RecordBatch], int],
        protocol: TruncationProtocol) -> None:
    """Followers end identical to the leader; no truncation goes below the common prefix."""
    prefix, leader_suffix, follower_suffix, leader_epoch = history
    h = make_harness(protocol)
    leader = h.leader.set_leader(TP, prefix + leader_suffix, leader_epoch, len(prefix + leader_suffix))
    follower = mk_log(prefix + follower_suffix, hw=len(prefix))
    h.add(TP, follower, initial_fetch_offset(follower, protocol), leader_epoch)
    h.converge(TP, max_rounds=40)
    assert log_signature(follower) == log_signature(leader.log)
    assert all(offset >= len(prefix) for offset in follower.truncate_calls)
    if follower_suffix:
        # The divergent suffix was removed exactly at the end of the common prefix.
        assert min(follower.truncate_calls) == len(prefix)


def test_v0_breaks_the_property_on_the_minimal_kip279_history() -> None:
    """The smallest history hypothesis finds for `leader_epoch_v0`: prefix [0@0], leader [1@1], follower [1@2],
    leader epoch 3. v0 answers offset 2 for epoch 2 (start of epoch 3) without the epoch, so the follower keeps
    1@2; with the epoch in the answer ((1, 2)) it truncates to the end of its epoch 0, offset 1."""
    outcomes = {}
    for protocol in (TruncationProtocol.LEADER_EPOCH_V0, TruncationProtocol.LEADER_EPOCH):
        h = make_harness(protocol)
        leader = h.leader.set_leader(TP, [mk_batch(0, 0), mk_batch(1, 1)], 3, 2)
        follower = mk_log([mk_batch(0, 0), mk_batch(1, 2)], hw=1)
        h.add(TP, follower, initial_fetch_offset(follower, protocol), 3)
        for _ in range(3):
            h.do_work()
        outcomes[protocol] = log_signature(follower) == log_signature(leader.log)
    assert outcomes == {TruncationProtocol.LEADER_EPOCH_V0: False, TruncationProtocol.LEADER_EPOCH: True}
