"""Checker errors that replog reproduces from Kafka's own code paths, recognised so that campaigns report only new ones.

A and B were found by campaigns (session 21, again by `tests.sim.campaign --deep`), C and D by `--overlapping`, E
by `--power` (and in another form by `--reassigning --power`); each
was traced event by event and judged faithful to Kafka; the engine keeps Kafka's behaviour and the checker keeps
reporting them, because the state they flag does exist in Kafka. `tests/sim/test_known_findings.py` pins one run
of each.

A. `isr_expansion_race` (isr_holds_committed). The leader proposes adding follower F (PendingExpandIsr at
   partition epoch P). The metadata update of the *previous* change, also at partition epoch P, arrives after the
   AlterPartition response that already taught the leader P: `Partition.makeLeader` accepts an equal partition
   epoch and `updateAssignmentAndIsr` resets the state to the committed ISR without F, abandoning the proposal
   (reference §2.6). `maybeIncrementLeaderHW` then advances the HW over the smaller maximal ISR, past F's LEO.
   The controller commits the proposal at P + 1, and the leader applies it: F is in the ISR below the HW. If
   the other ISR members fail before F catches up, the controller elects F cleanly and acknowledged writes are
   lost (`test_the_isr_expansion_race_loses_acknowledged_writes_when_the_other_isr_members_fail`). A proposal
   whose request was lost is resent by the AlterPartition manager and may be committed only after the HW rose,
   and the leader may fail before the metadata reaches it: then one leader crash is enough, F being first in
   the assignment (`--correlated` seed 561204, until session 48 moved its run). Or the leader does learn it, and
   a controlled shutdown of the leader moves leadership to F, the only other ISR member, before F catches up
   (`--reassigning` seed 627432, then `--power --before-kip903` seed 836215 until session 49's KRaft reassignment
   epochs moved its run; no seed since, and a hand-built case keeps it). Or the commit itself elects F, with no
   failure at all: when the ISR it commits holds the target of a reassignment that removes the leader, the
   controller completes the reassignment in that same change (KRaft's `completeReassignmentIfNeeded`), answers the
   leader NEW_LEADER_ELECTED and elects the first target replica in the new ISR, F, even if another one holds every
   record (`--reassigning` seed 982174: u-0 moving from [1, 3] to [2, 4], 2 elected with LEO 38 below the HW 45).
   Those losses (`acked_write_lost`, and the followers' truncation of the committed records, `truncation_safety`,
   which F then commits again, `inconsistent_offsets`, `committed_prefix_agreement`) are recognised too
   (`isr_race_elected`): they lie between F's LEO at its election from the ISR and the HW committed before it.
   The race can also run on the old leader after F's election: the commit that completes a reassignment elects F
   and answers the leader NEW_LEADER_ELECTED, which leaves its proposal pending; an older metadata update at the
   same partition epoch then resets its ISR without F, and it raises its HW above F's LEO before it learns it was
   removed (`isr_race_after_election`, `--throttled --before-metadata-deltas` seed 1070007: the older update was a
   resend after a lost delivery, which KRaft's metadata deltas merge with the election's). That rise is itself an
   `isr_holds_committed` when a member of the older ISR has truncated under F since (`--overlapping --before-kip903
   --before-metadata-deltas` seed 836029).
B. `epoch_boundary_erased` (committed_prefix_agreement). Retention on the new leader moved its log start offset
   past the start of its first epoch; `truncateFromStart` moved that epoch's start up to the log start offset, so
   `endOffsetFor(older epoch)` answers the log start offset (KAFKA-7415's rule for an epoch below the cache).
   A returning follower with records of the older epoch truncates to that offset (or, when its LEO is that
   offset, is told of no divergence at all) and keeps its own, divergent records below it. `processPartitionData`
   updates the follower's HW before `maybeIncrementLogStartOffset` raises its log start offset over them
   (reference §3), so for one step they sit below both HWs.
C. `stale_hw_checkpoint` (committed_prefix_agreement; found by `--overlapping`). A replica truncates below the HW
   its last high-watermark checkpoint recorded (`LogManager.truncateTo` checkpoints recovery points, not HWs;
   `ReplicaManager.checkpointHighWatermarks` runs every `replica.high.watermark.checkpoint.interval.ms`), writes
   new records, and its process dies before the next checkpoint. Its log recovery sets the HW to min(checkpoint,
   LEO) (`UnifiedLog` initialising from the checkpoint): above the HW it had, over records nobody committed, which
   then sit below its HW and the new leader's until it truncates them as a follower.
D. `hw_truncation_after_readd` (truncation_safety; found by `--overlapping`). Leader-epoch truncation without
   truncate-on-fetch: `AbstractFetcherThread.maybeTruncate` splits its truncating partitions into those with and
   without a latest epoch, sends OffsetsForLeaderEpoch for the first, and only after the answer calls
   `truncateToHighWatermark` for the second, reading each partition's fetch state *then*. A partition whose log was
   empty at the split, filled through another fetcher while the round was in flight, and was added back to this
   fetcher (its initial fetch offset the HW, `ReplicaManager.makeFollowers`), is truncated to that HW: records
   committed above it, which it holds, are removed, while it may be in the ISR. When it is then elected from the
   ISR, the others truncate to its shorter log and a later leader commits other records there
   (`hw_truncation_elected`, `--throttled` seed 1070113).
E. `divergent_prefix_elected` (truncation_safety; found by `--power`, seed 901773). B's rule again, with a
   fetch response that never arrives. Leader L's log start offset S has passed the older epoch's end, so it
   answers a returning follower F's DivergingEpoch with (that epoch, S). F truncates to S and keeps its own
   records below S. F's next fetch, at S, is one leader L answers without divergence: `Partition.fetchRecords`
   updates F's fetch state and `maybeExpandIsr` adds F to the ISR. The response to that fetch is lost
   (`network.loss`), or L crashes or hands leadership over while the fetch is in flight or waits in its
   purgatory, so F never runs `processPartitionData`: it never raises its own log start offset to S, which would
   have deleted those records. F is elected from the ISR with them. A follower that holds the committed records
   of the later epochs is then told to truncate to the older epoch's end: it removes records committed below the
   HW (`truncation_safety`). When no follower with those records is left (`--reassigning --power` seed 531853: L
   and the other ISR member crashed together; `--power --before-kip903` seed 943902: the follower told to
   truncate them held the only copy), F raises its HW over its kept records and its followers copy them: offsets
   the later epochs committed are committed again with other records (`inconsistent_offsets`,
   `committed_prefix_agreement`). The leader-epoch mode does the same through OffsetsForLeaderEpoch, whose
   answer for an epoch below L's cache is S too (`--reassigning --power` seed 534728): F truncates to S, L's log
   start offset then. When F is the final leader, the later epochs' acknowledged writes at the offsets it kept
   are lost (`acked_write_lost`; `--reassigning` seed 830245 until session 49, F elected by a reassignment in the
   leader-epoch mode, with process crashes only; a hand-built case keeps it). When F's LEO was S, B's answer told
   it of no divergence at all, so it truncated nothing: it kept every record below S (`--elr --overlapping` seed
   894993, every answer to F lost on a one-way partition). Seeds 901773, 531853 and 534728 were found before the
   controller published a partition left without a leader (e6fcc33) and now run differently. F may be told B's
   answer twice, by two leaders, before it processes a response: counted caught up at the first leader's log start
   offset S1 (E's step), then truncated to the next leader's lower S2 while in the ISR; elected, it commits again
   the offsets from S2 up to S1 too, which it neither kept nor copied (`--throttled` seed 1164628, found by
   session 83's campaign). The tests pin 833649
   and 943902. Those two, and 1070007, 836029, 1070113 and 894993 above, show their shapes in runs recorded from
   earlier engines (`tests/data/sim-runs/`): today's engine draws other interleavings from those seeds.
F. `epoch_start_reloaded` (committed_prefix_agreement; found by session 90's `--power` campaign, seed 0, once a
   restart loads its log start offset from `log-start-offset-checkpoint`). A replica L's log start offset was raised
   (by its leader's, on a follower) past the start of its first epoch, and `truncateFromStart` moved that epoch's
   start up to it (S). L's process died before the next checkpoint (every minute), so its restart loaded the larger
   of the checkpoint and its first segment's base, S' < S (`LogLoader.load`): the records of [S', S) are readable
   again, but its epoch cache still starts at S. Elected, L answers a returning follower F's older epoch with S
   (B's rule); F truncates to S and keeps its own records of [S', S), which differ from L's and now lie above both
   log starts. When F's HW covers them, the two hold different committed records. When L's power failure also cut
   its log to S (the recovery point the raise moved up), its epoch cache loses every entry (`truncateFromEnd(S)`)
   and L, a follower again, truncates to its HW (`truncateToHighWatermark`, no latest epoch), removing committed
   records of the reloaded stretch (`truncation_safety`; `--wide --deep --power` seed 120). A follower whose own
   restart reloaded the stretch keeps it when it truncates to the start of its cache's first epoch: it appends its
   new leader's older-epoch batch after its kept newer-epoch records (`epoch_cache_monotonic`,
   `follower_log_matching`; `--power` seed 386 after an unclean election until session 91, 1176489 since). F,
   caught up to L's LEO, rejoins the ISR holding its own records of the stretch below the HW
   (`isr_holds_committed`), and elected later it commits them a second time (`inconsistent_offsets`;
   `--reassigning --power` seed 1174614). When the reloaded
   replica is F's leader, F appends the leader's records after its kept ones (`follower_log_matching`; seed 1177796
   on the engine before session 91's fetcher change).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from replication_core.checker.violation import Violation
from replication_core.config import TruncationMode

Event = dict[str, Any]

ISR_EXPANSION_RACE = "isr_expansion_race"
EPOCH_BOUNDARY_ERASED = "epoch_boundary_erased"
STALE_HW_CHECKPOINT = "stale_hw_checkpoint"
HW_TRUNCATION_AFTER_READD = "hw_truncation_after_readd"
DIVERGENT_PREFIX_ELECTED = "divergent_prefix_elected"
EPOCH_START_RELOADED = "epoch_start_reloaded"


def _same_replica(e: Event, broker: int, topic: str, partition: int) -> bool:
    return e.get("broker_id") == broker and e.get("topic") == topic and e.get("partition") == partition


def isr_expansion_race(v: Violation, events: Sequence[Event]) -> bool:
    """Finding A: `v` is detected by a metadata commit adding `v.replica`, whose expansion was proposed, then
    abandoned by a same-partition-epoch metadata update, after which the leader's HW rose."""
    if v.invariant != "isr_holds_committed" or v.event_id < 0:
        return False
    commit = events[v.event_id]
    if not (commit["event_type"] == "isr_change" and commit.get("reason") == "leader_and_isr"
            and v.replica in (commit.get("isr") or ()) and v.replica not in (commit.get("old_isr") or ())):
        return False
    return _abandoned_then_rose(events, commit["broker_id"], commit["topic"], commit["partition"], v.replica,
                                commit["partition_epoch"] - 1, v.event_id)


def _abandoned_then_rose(events: Sequence[Event], leader: int, topic: str, partition: int, replica: int,
                         epoch: int, before: int, past: int = -1) -> bool:
    """Whether, before event `before`, `leader` proposed adding `replica` at partition epoch `epoch`, a metadata
    update at `epoch` then reset its ISR without `replica` (abandoning the proposal), and after that its HW rose
    (above `past`), with no leadership change of `leader` since."""
    hw_rose = reset_then_rose = rejected = False
    # Backwards from `before`: an HW rise, before it the reset at epoch P, before that the proposal at P. A
    # proposal the AlterPartition manager rejected at once (the first one was still in flight) is not the one
    # the controller committed, so it is passed over. Other rejections leave the proposal pending, as
    # `Partition.handleAlterPartitionError` does: a retry, or INVALID_UPDATE_VERSION ("awaiting_metadata"), which
    # a resent request gets when the controller already committed the first one and its answer was lost.
    for e in reversed(events[:before]):
        if not _same_replica(e, leader, topic, partition):
            continue
        kind = e["event_type"]
        if kind == "leadership_change":
            return False
        if kind == "hw_change":
            hw_rose = hw_rose or (e["hw"] is not None and e["hw"] > past)
        elif kind == "isr_change" and e.get("partition_epoch") == epoch:
            adds = e.get("action") == "expand" and replica in (e.get("isr") or ())
            if (e.get("reason") == "leader_and_isr" and e.get("isr_state") == "committed"
                    and replica not in (e.get("isr") or ())):
                reset_then_rose = reset_then_rose or hw_rose
            elif adds and e.get("isr_state") == "rejected" and e.get("reason") == "reset_to_committed":
                rejected = True
            elif adds and e.get("isr_state") == "proposed":
                if not rejected:
                    return reset_then_rose
                rejected = False
    return False


LOSS_INVARIANTS = ("acked_write_lost", "truncation_safety", "inconsistent_offsets", "committed_prefix_agreement")
# The controller's elections that pick the new leader from the ISR: after a failure, and when a controlled shutdown
# moves leadership away (`Controller.controlled_shutdown`); an unclean one does not.
ELECTIONS_FROM_ISR = ("clean", "controlled_shutdown")


def _isr_elections(v: Violation, events: Sequence[Event], invariants: tuple[str, ...] = LOSS_INVARIANTS
                   ) -> Iterator[tuple[int, Event, int | None, int, int | None]]:
    """For a violation `v` of `invariants` (the loss ones by default), with an offset and a partition, each
    become_leader of its partition, up to its detecting event (the run's end for an end-of-run check), whose epoch the
    controller elected from the ISR: (its index, the event, the previous leader, the HW committed before it, where the
    previous leader's tenure ended, None while it still led). Nothing for any other violation."""
    if v.invariant not in invariants or v.offset is None or v.topic is None or v.partition is None:
        return
    end = len(events) if v.event_id < 0 else v.event_id
    # `leader_end`: where the last leader's tenure ended (it became a follower, back from a crash, say, before the
    # election): a race of its lies before that (`--correlated` seed 784244).
    committed, leader, leader_end = 0, None, None
    # The election of each leader epoch: a later one (an offline partition's) may come before the elected
    # leader's metadata does.
    from_isr: dict[int | None, bool] = {}
    for i in range(end):
        e = events[i]
        if e.get("topic") != v.topic or e.get("partition") != v.partition:
            continue
        kind = e["event_type"]
        if kind == "hw_change" and e["hw"] is not None:
            committed = max(committed, e["hw"])
        elif kind == "leader_election":
            from_isr[e.get("leader_epoch")] = e.get("action") in ELECTIONS_FROM_ISR
        elif kind == "leadership_change" and e.get("action") == "become_leader":
            if from_isr.get(e.get("leader_epoch"), False):
                yield i, e, leader, committed, leader_end
            leader, leader_end = e["broker_id"], None
        elif kind == "leadership_change" and e["broker_id"] == leader and leader_end is None:
            leader_end = i


def isr_race_elected(v: Violation, events: Sequence[Event]) -> bool:
    """Finding A's loss: an election from the ISR (clean, or a controlled shutdown's) made F leader with LEO L
    below H, the HW committed before it, and L <= `v.offset` < H (records committed, then lost or rewritten, from
    F's LEO on), where F was in the controller's ISR through A's race: its last leader proposed adding it, a
    same-partition-epoch metadata update abandoned the proposal, and that leader's HW then rose past L
    (`--correlated` seed 561204 until session 48; `--reassigning` seed 627432, then 836215 of `--power
    --before-kip903` until session 49, through a controlled shutdown; `--correlated` seed 784244 with the old leader
    a follower again before F's election; `--reassigning` seed 982174, elected by the reassignment its own commit
    completed: a clean election, reason `reassignment`)."""
    for i, e, leader, committed, leader_end in _isr_elections(v, events):
        elected, leo = e["broker_id"], e.get("leo")
        if (leader is not None and elected != leader and leo is not None and leo <= v.offset < committed
                and _raced_into_isr(events, leader, e["topic"], e["partition"], elected,
                                    i if leader_end is None else leader_end, leo)):
            return True
    return False


def isr_race_after_election(v: Violation, events: Sequence[Event]) -> bool:
    """Finding A's loss with the race run on the deposed leader after F's election: an election from the ISR made F
    leader with LEO L; its previous leader O, still in its older epoch (not yet told), had proposed adding F and
    then applied a same-partition-epoch update without F (the race), and its HW rose to H > L; `v.offset` is in
    [L, H). `--throttled --before-metadata-deltas` seed 1070007: O = 1 proposed adding 5 at partition epoch 29; the
    controller's commit held the reassignment's target [5, 4] and completed it, electing 5 with LEO 372 and answering 1
    NEW_LEADER_ELECTED (which leaves the proposal pending); a resent, older metadata update at epoch 29 (ISR [1, 4])
    372..392.

    The race's HW rise itself may be the detecting event: an `isr_holds_committed` at O's own rise, its ISR (the
    older update's) holding a member that has since truncated under F (`--overlapping --before-kip903
    --before-metadata-deltas` seed 836029: O = 4's rise to 349 over [1, 4, 5], 1 having truncated to 339 under 3)."""
    rise = events[v.event_id] if v.invariant == "isr_holds_committed" and v.event_id >= 0 else None
    if rise is not None and not (rise["event_type"] == "hw_change" and rise.get("role") == "leader"):
        return False
    for i, e, leader, _, _ in _isr_elections(v, events, (*LOSS_INVARIANTS, "isr_holds_committed")):
        elected, leo, epoch = e["broker_id"], e.get("leo"), e.get("leader_epoch")
        if rise is not None and leader != rise["broker_id"]:
            continue
        end = len(events) if v.event_id < 0 else v.event_id + (rise is not None)
        if (leader is not None and leader != elected and leo is not None and epoch is not None and leo <= v.offset
                and _old_leader_raced_past(events, leader, e["topic"], e["partition"], elected, i, end, epoch,
                                           v.offset)):
            return True
    return False


def _old_leader_raced_past(events: Sequence[Event], old: int, topic: str, partition: int, elected: int, at: int,
                           end: int, epoch: int, offset: int) -> bool:
    """Whether `old`, after `elected`'s election at event `at` into `epoch` and before its own next leadership
    change (or `end`), ran A's race over `elected`: it applied a committed same-partition-epoch update without
    `elected` after the election, having proposed adding `elected` at that epoch, and then, while its ISR still
    lacked `elected`, raised its HW as leader of an older epoch above `offset`."""
    tenure_end = next((k for k in range(at + 1, end) if events[k]["event_type"] == "leadership_change"
                       and _same_replica(events[k], old, topic, partition)), end)
    for r in range(at + 1, tenure_end):
        e = events[r]
        if not (_same_replica(e, old, topic, partition) and e["event_type"] == "isr_change"
                and e.get("reason") == "leader_and_isr" and e.get("isr_state") == "committed"
                and elected not in (e.get("isr") or ())
                and _proposed_adding(events, old, topic, partition, elected, e.get("partition_epoch"), r)):
            continue
        for x in events[r + 1:tenure_end]:
            if not _same_replica(x, old, topic, partition):
                continue
            back = x["event_type"] == "isr_change" and x.get("isr_state") == "committed"
            if back and elected in (x.get("isr") or ()):
                break  # back in the ISR: a later rise is not the race's
            if (x["event_type"] == "hw_change" and x.get("role") == "leader" and x["hw"] is not None
                    and x["hw"] > offset and x.get("leader_epoch") is not None and x["leader_epoch"] < epoch):
                return True
    return False


def _proposed_adding(events: Sequence[Event], leader: int, topic: str, partition: int, replica: int,
                     epoch: int | None, before: int) -> bool:
    """Whether `leader`, before event `before` and since its last leadership change, proposed adding `replica` at
    partition epoch `epoch` in a proposal not rejected at once (`_abandoned_then_rose`'s rule)."""
    rejected = False
    for e in reversed(events[:before]):
        if not _same_replica(e, leader, topic, partition):
            continue
        if e["event_type"] == "leadership_change":
            return False
        if e["event_type"] != "isr_change" or e.get("partition_epoch") != epoch:
            continue
        if e.get("action") == "expand" and replica in (e.get("isr") or ()):
            if e.get("isr_state") == "rejected" and e.get("reason") == "reset_to_committed":
                rejected = True
            elif e.get("isr_state") == "proposed":
                if not rejected:
                    return True
                rejected = False
    return False


def _raced_into_isr(events: Sequence[Event], leader: int, topic: str, partition: int, replica: int, before: int,
                    leo: int) -> bool:
    """Whether `leader` abandoned a proposal adding `replica` by A's race before event `before`, its HW then
    rising past `leo`."""
    resets = {e["partition_epoch"] for e in events[:before] if _same_replica(e, leader, topic, partition)
              and e["event_type"] == "isr_change" and e.get("reason") == "leader_and_isr"
              and replica not in (e.get("isr") or ())}
    return any(_abandoned_then_rose(events, leader, topic, partition, replica, epoch, before, past=leo)
               for epoch in sorted(resets))


def epoch_boundary_erased(v: Violation, events: Sequence[Event]) -> bool:
    """Finding B: `v` is detected by a follower's HW update while it processes a fetch response that starts at or
    below the leader's log start offset L, and the follower's very next event raises its own log start offset to
    L, above the divergent offset: every record it kept from before the response is then below L."""
    if v.invariant != "committed_prefix_agreement" or v.event_id < 0 or v.offset is None:
        return False
    hw = events[v.event_id]
    if not (hw["event_type"] == "hw_change" and hw.get("role") == "follower" and hw["broker_id"] == v.replica):
        return False
    broker, topic, partition = hw["broker_id"], hw["topic"], hw["partition"]
    after = next((e for e in events[v.event_id + 1:] if _same_replica(e, broker, topic, partition)), None)
    if after is None or after["event_type"] != "log_start_offset_change" or after["log_start_offset"] <= v.offset:
        return False
    response = next((e for e in reversed(events[:v.event_id])
                     if _same_replica(e, broker, topic, partition) and e["event_type"] == "fetch_response"), None)
    return (response is not None and response.get("leader_log_start_offset") == after["log_start_offset"]
            and response["fetch_offset"] <= after["log_start_offset"])


def stale_hw_checkpoint(v: Violation, events: Sequence[Event]) -> bool:
    """Finding C: the HW of one of the two replicas was raised over the divergent offset by its crash recovery,
    from a checkpoint older than its HW then. The checker names the replica whose HW change found the
    disagreement (`v.event_id`) and gives the other's HW event as `v`'s third evidence id (`b.hw_event`), or the
    leadership_change of a restart that restates the HW the recovery set: either may be the recovering one."""
    if v.invariant != "committed_prefix_agreement" or v.offset is None or len(v.evidence) < 3:
        return False
    return any(_raised_by_recovery(events, i, v.offset) for i in (v.evidence[2], v.event_id))


def _raised_by_recovery(events: Sequence[Event], hw_event: int | None, offset: int) -> bool:
    """Whether event `hw_event` is (or restates) a follower's HW raised over `offset` by its crash recovery."""
    if hw_event is None or not 0 <= hw_event < len(events):
        return False
    hw = events[hw_event]
    if hw["event_type"] == "leadership_change":
        # The restart's become_follower restates the HW the recovery set (overlapping seed 507011).
        hw_event = next((i for i in range(hw_event - 1, -1, -1) if events[i]["event_type"] == "hw_change"
                         and _same_replica(events[i], hw["broker_id"], hw["topic"], hw["partition"])), -1)
        if hw_event < 0 or events[hw_event]["hw"] != hw.get("hw"):
            return False
        hw = events[hw_event]
    if not (hw["event_type"] == "hw_change" and hw.get("role") == "follower" and hw["hw"] > hw["old_hw"]
            and hw["old_hw"] <= offset < hw["hw"]):
        return False
    crash = next((e for e in reversed(events[:hw_event]) if e["event_type"] == "broker_lifecycle"
                  and e["broker_id"] == hw["broker_id"]), None)
    return crash is not None and crash["action"] == "crash" and crash["ts_ms"] == hw["ts_ms"]


def hw_truncation_after_readd(v: Violation, events: Sequence[Event]) -> bool:
    """Finding D: `v` is a high-watermark truncation, by a broker in a leader-epoch truncation mode, of a log that
    held records (so a latest epoch), and the partition was added to a fetcher of that broker after its last
    append: only a list of epoch-less partitions made before the add sends such a log to `truncateToHighWatermark`."""
    if v.invariant != "truncation_safety" or v.event_id < 0:
        return False
    trunc = events[v.event_id]
    if trunc["event_type"] != "truncation" or trunc.get("reason") != "high_watermark":
        return False
    broker, topic, partition = trunc["broker_id"], trunc["topic"], trunc["partition"]
    mode = next((e["config"].get("replog.truncation.mode") for e in reversed(events[:v.event_id])
                 if e["event_type"] == "broker_config" and e["broker_id"] == broker), None)
    if mode not in (TruncationMode.LEADER_EPOCH, TruncationMode.LEADER_EPOCH_V0):
        return False

    def adds(e: Event) -> bool:
        return (e["event_type"] == "fetcher_change" and e["broker_id"] == broker and e.get("action") == "added"
                and any((p["topic"], p["partition"]) == (topic, partition) for p in e.get("partitions") or ()))

    readded = False
    for e in reversed(events[:v.event_id]):
        if adds(e):
            readded = True
        elif _same_replica(e, broker, topic, partition) and e["event_type"] == "append":
            return readded  # the log held epoch-stamped records when the add reset its fetch offset to the HW
    return False


def hw_truncation_elected(v: Violation, events: Sequence[Event]) -> bool:
    """Finding D's loss: an election from the ISR made R leader with LEO L, where R's last truncation before it was
    D's (`hw_truncation_after_readd`) and removed `v.offset`, and L <= `v.offset` < H, the HW committed before the
    election. The other replicas then truncate to R's shorter log (OffsetsForLeaderEpoch answers R's epoch end),
    and a later leader commits other records there (`--throttled` seed 1070113, leader-epoch mode: broker 3 lost
    offset 5 to D, was elected cleanly, brokers 2 and 1 truncated to 5 and broker 2, leader of the next epoch,
    committed a new record at 5). Like `isr_race_elected`, it holds for every later violation at those offsets."""
    for i, e, _, committed, _ in _isr_elections(v, events):
        leo = e.get("leo")
        if (leo is not None and leo <= v.offset < committed
                and _removed_by_finding_d(events, e["broker_id"], e["topic"], e["partition"], i, v.offset)):
            return True
    return False


def _removed_by_finding_d(events: Sequence[Event], broker: int, topic: str, partition: int, before: int,
                          offset: int) -> bool:
    """Whether `broker`'s last truncation of the partition before event `before` is finding D's and removed
    `offset`."""
    last = next((i for i in range(before - 1, -1, -1) if events[i]["event_type"] == "truncation"
                 and _same_replica(events[i], broker, topic, partition)), None)
    if last is None:
        return False
    t = events[last]
    if not t["truncate_offset"] <= offset < t["old_leo"]:
        return False
    # D's truncation removed a committed record there: the partition's HW had passed the offset before it.
    committed = max((e["hw"] for e in events[:last] if e["event_type"] == "hw_change" and e["hw"] is not None
                     and e.get("topic") == topic and e.get("partition") == partition), default=0)
    if offset >= committed:
        return False
    as_violation = Violation("truncation_safety", "error", str(t.get("run_id") or ""), topic, partition, broker,
                             int(t.get("ts_ms") or 0), last, t["truncate_offset"], None, None, (), "")
    return hw_truncation_after_readd(as_violation, events)


def divergent_prefix_elected(v: Violation, events: Sequence[Event]) -> bool:
    """Finding E: leader L of `v`'s partition was elected holding records kept below its old leader's log start
    offset S (`_kept_prefix_end`), `v.offset` < S, and `v` is
    - a DivergingEpoch truncation of a follower, told by L (committed records of the later epochs removed), or
    - an `inconsistent_offsets` or `committed_prefix_agreement` error detected on L or a follower of L while L
      leads (L committed its kept records when no replica with the later epochs' records was left to follow it), or
    - an `acked_write_lost` on L, the final leader: the later epochs' acknowledged records at those offsets are not
      on it (`--reassigning` seed 830245 until session 49, L elected by a reassignment)."""
    if v.offset is None or v.topic is None or v.partition is None:
        return False
    topic, partition = v.topic, v.partition
    if v.invariant == "acked_write_lost":
        # The checker judges acknowledged writes against the final leader, at the end of the run (event -1).
        elected = _last_become_leader(events, topic, partition, len(events) - 1)
        if elected is None or events[elected]["broker_id"] != v.replica:
            return False
        leader = events[elected]["broker_id"]
    elif v.event_id < 0:
        return False
    elif v.invariant == "truncation_safety":
        trunc = events[v.event_id]
        if trunc["event_type"] != "truncation":
            return False
        if trunc.get("reason") == "diverging_epoch":
            told = next((e for e in reversed(events[:v.event_id]) if e["event_type"] == "fetch_response"
                         and _same_replica(e, trunc["broker_id"], topic, partition)), None)
            if told is None or told.get("diverging_epoch") is None:
                return False
            leader = told["leader_id"]
        elif trunc.get("reason") == "leader_epoch":  # told by an OffsetsForLeaderEpoch answer of its leader
            followed = _leader_followed(events, trunc["broker_id"], topic, partition, v.event_id)
            if followed is None:
                return False
            leader = followed
        else:
            return False
        elected = next((i for i in range(v.event_id - 1, -1, -1) if events[i]["event_type"] == "leadership_change"
                        and _same_replica(events[i], leader, topic, partition)), None)
        if elected is None or events[elected].get("action") != "become_leader":
            return False
    elif v.invariant in ("inconsistent_offsets", "committed_prefix_agreement"):
        elected = _last_become_leader(events, topic, partition, v.event_id)
        if elected is None:
            return False
        leader = events[elected]["broker_id"]
        if v.replica != leader and _leader_followed(events, v.replica, topic, partition, v.event_id) != leader:
            return False
    else:
        return False
    start = _kept_prefix_end(events, leader, topic, partition, elected)
    if start is None:
        start = _untruncated_prefix_end(events, leader, topic, partition, elected)
    return start is not None and v.offset < start


def _last_become_leader(events: Sequence[Event], topic: str, partition: int, at: int) -> int | None:
    """The index of the partition's last become_leader event at or before event `at`, or None."""
    return next((i for i in range(at, -1, -1) if events[i]["event_type"] == "leadership_change"
                 and events[i].get("action") == "become_leader" and events[i]["topic"] == topic
                 and events[i]["partition"] == partition), None)


def _leader_followed(events: Sequence[Event], broker: int, topic: str, partition: int, before: int) -> int | None:
    """The leader `broker` followed at event `before`: its last leadership_change's, if a become_follower."""
    role = next((e for e in reversed(events[:before]) if e["event_type"] == "leadership_change"
                 and _same_replica(e, broker, topic, partition)), None)
    return role["leader_id"] if role is not None and role.get("action") == "become_follower" else None


def _log_start_of(events: Sequence[Event], broker: int, topic: str, partition: int, before: int) -> int:
    """`broker`'s log start offset of the partition at event `before` (its last log_start_offset_change, else 0)."""
    change = next((e for e in reversed(events[:before]) if e["event_type"] == "log_start_offset_change"
                   and _same_replica(e, broker, topic, partition)), None)
    return 0 if change is None else change["log_start_offset"]


def _kept_prefix_end(events: Sequence[Event], leader: int, topic: str, partition: int, elected: int) -> int | None:
    """S when, before its election at event `elected`, `leader`'s last truncation followed a DivergingEpoch
    answer at its then leader's log start offset S (an epoch below that leader's cache), or, in the leader-epoch
    mode, went to S, its then leader's log start offset (the OffsetsForLeaderEpoch answer leaves no event), and
    it then processed no fetch response and never raised its log start offset to S: its records below S are
    kept from before S. When such a truncation had followed another one of the same kind, at a higher S, with no
    response processed between (B's answer from one leader, then from the next, whose log start was lower:
    `--throttled` seed 1164628), S is the highest of the chain: the first answer is where the replica was counted
    caught up, and the offsets from the later S up to it are ones it neither kept nor copied."""
    mine = [i for i in range(elected) if _same_replica(events[i], leader, topic, partition)]
    best: int | None = None
    end = len(mine)
    while True:
        found = _last_kept_prefix_truncation(events, leader, topic, partition, mine, end)
        if found is None:
            return best
        start, end = found
        best = start if best is None else max(best, start)


def _last_kept_prefix_truncation(events: Sequence[Event], leader: int, topic: str, partition: int,
                                 mine: list[int], end: int) -> tuple[int, int] | None:
    """`_kept_prefix_end`'s one step over `mine[:end]` (the replica's events, latest first): (S, where to look for an
    earlier one), or None."""
    for k in range(end - 1, -1, -1):
        e = events[mine[k]]
        kind = e["event_type"]
        if kind == "truncation" and e.get("reason") == "leader_epoch":
            # OffsetsForLeaderEpoch (the leader-epoch mode) answered with the leader's log start offset.
            old_leader = _leader_followed(events, leader, topic, partition, mine[k])
            start = None if old_leader is None else _log_start_of(events, old_leader, topic, partition, mine[k])
            return (e["truncate_offset"], k) if start == e["truncate_offset"] else None
        if kind == "truncation":
            at = next((i for i in range(k - 1, -1, -1) if events[mine[i]]["event_type"] == "fetch_response"), None)
            answer = None if at is None else events[mine[at]]
            start = None if answer is None else answer.get("diverging_end_offset")
            if e.get("reason") == "diverging_epoch" and start is not None and (
                    answer is not None and answer.get("leader_log_start_offset") == start):
                assert at is not None
                return start, at
            return None
        if (kind == "fetch_response" and e.get("error") == "NONE") or kind == "log_start_offset_change":
            return None  # a processed response raises the log start offset, deleting the kept records
    return None


def _untruncated_prefix_end(events: Sequence[Event], leader: int, topic: str, partition: int,
                            elected: int) -> int | None:
    """S when `leader`, before its election at event `elected`, was last added to the ISR by a leader whose log
    start offset was S, with its own LEO S: B's answer for its older epoch was S, no divergence at all, so it
    truncated nothing; and since it followed that leader it processed no fetch response, truncated nothing and
    never raised its log start offset to S (`--elr --overlapping` seed 894993: every response was lost on a
    one-way partition). Its records below S are kept from before S."""
    add = next((i for i in range(elected - 1, -1, -1) if events[i]["event_type"] == "isr_change"
                and events[i].get("isr_state") == "committed" and events[i]["topic"] == topic
                and events[i]["partition"] == partition and leader in (events[i].get("isr") or ())
                and leader not in (events[i].get("old_isr") or ())), None)
    if add is None:
        return None
    old_leader = events[add]["broker_id"]
    start = _log_start_of(events, old_leader, topic, partition, add)
    role = next((i for i in range(add - 1, -1, -1) if events[i]["event_type"] == "leadership_change"
                 and _same_replica(events[i], leader, topic, partition)), None)
    if role is None:
        return None
    follows = events[role]
    if (follows.get("action") != "become_follower" or follows.get("leader_id") != old_leader
            or follows.get("leo") != start):
        return None
    for e in events[role + 1:elected]:
        if not _same_replica(e, leader, topic, partition):
            continue
        kind = e["event_type"]
        if (kind in ("truncation", "append") or (kind == "fetch_response" and e.get("error") == "NONE")
                or (kind == "log_start_offset_change" and e["log_start_offset"] >= start)):
            return None
    return start


def epoch_start_reloaded(v: Violation, events: Sequence[Event]) -> bool:
    """Finding F: before `v` was found, a restart of one of the partition's replicas (for a follower's own log, of
    `v.replica`) loaded a log start offset below the one it had (`log_start_offset_change`, reason `log_load`), and
    the divergent or removed offset lies in what that made readable again, [loaded start, start before): for
    `epoch_cache_monotonic`, the record before the append (the kept records' epoch is above the leader's)."""
    if v.invariant not in _RELOADED or v.offset is None or v.topic is None:
        return False
    offset = v.offset - 1 if v.invariant == "epoch_cache_monotonic" else v.offset
    own = v.invariant not in _BETWEEN_REPLICAS
    before = events if v.event_id < 0 else events[:v.event_id]
    return any(e["event_type"] == "log_start_offset_change" and e.get("reason") == "log_load"
               and e["topic"] == v.topic and e["partition"] == v.partition
               and (not own or e["broker_id"] == v.replica)
               and e["log_start_offset"] <= offset < e["old_log_start_offset"] for e in before)


_BETWEEN_REPLICAS = ("committed_prefix_agreement", "isr_holds_committed", "inconsistent_offsets",
                     "follower_log_matching")
"""F's invariants that compare two replicas' records: the reloaded replica may be either (for a follower's append
after its kept records, the follower or its leader, whose answer to the follower's older epoch is the start of the
stretch)."""
_RELOADED = (*_BETWEEN_REPLICAS, "truncation_safety", "epoch_cache_monotonic")
"""The invariants finding F breaks: the two replicas' records differ (committed, held by an ISR member below the HW,
committed twice, or where a follower appends next to its kept ones), a follower removes committed ones, or a
follower's log goes back in epoch."""


def known_finding(v: Violation, events: Sequence[Event]) -> str | None:
    """The name of the known finding `v` is an instance of (`ISR_EXPANSION_RACE`, `EPOCH_BOUNDARY_ERASED`,
    `STALE_HW_CHECKPOINT`, `HW_TRUNCATION_AFTER_READD`, `DIVERGENT_PREFIX_ELECTED`,
    `EPOCH_START_RELOADED`), or None."""
    if isr_expansion_race(v, events) or isr_race_elected(v, events) or isr_race_after_election(v, events):
        return ISR_EXPANSION_RACE
    if epoch_boundary_erased(v, events):
        return EPOCH_BOUNDARY_ERASED
    if stale_hw_checkpoint(v, events):
        return STALE_HW_CHECKPOINT
    if hw_truncation_after_readd(v, events) or hw_truncation_elected(v, events):
        return HW_TRUNCATION_AFTER_READD
    if divergent_prefix_elected(v, events):
        return DIVERGENT_PREFIX_ELECTED
    if epoch_start_reloaded(v, events):
        return EPOCH_START_RELOADED
    return None
