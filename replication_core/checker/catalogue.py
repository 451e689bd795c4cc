"""The invariant catalogue: what the reference checker (and the Spark audit) check, as data.

One `Invariant` per check, tied to the rule of `/work/shared/docs/kafka-replication.md` it enforces
(§11 numbering in `section`). This module imports nothing but the standard library so the Spark audit
(issue 5) can share it without pulling in pyarrow or the engine.

Fields the audit must honour:
* `severity` — `error` fails `replog check`; `warning` is reported but does not (unless `--strict`);
  `info` is a finding Kafka's contract allows (an acks=1 write lost in a failover): reported and
  counted, never a failure, whatever `--strict` / `--fail-on` say.
* `excusable` — a violation that an unclean leader election explains (an `unclean` `leader_election`
  event for the partition between the moment the record was committed / acknowledged and the detection),
  or a crash recovery that removed the committed record from the very replica involved (power failure
  losing the unflushed tail, KIP-966 "last replica standing"), is still reported, with severity
  `warning`: Kafka's contract allows that data loss (KIP-101 note, §8.1; §8.4), but it is never passed.
* `requires` — the event types without which the invariant cannot be checked at all; `sources` — the
  event sources (`engine`, `kafka-log`) whose runs carry them. Real broker logs have no per-fetch or
  per-append events, so the record-level invariants apply to engine runs only.
* `offsets` — what the `offset` / `expected` / `actual` fields of a `Violation` mean for this invariant.
* `cannot_check` — the part of the rule the events do not carry; the checker says so instead of passing.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES: tuple[str, ...] = (ERROR, WARNING, INFO)
"""Every severity, gravest first."""
ENGINE = "engine"
KAFKA_LOG = "kafka-log"


@dataclass(frozen=True)
class Invariant:
    """One invariant: name, severity, the Kafka rule it checks and how the checker checks it."""

    name: str
    severity: str
    section: str
    rule: str
    checks: str
    offsets: str
    requires: tuple[str, ...]
    sources: tuple[str, ...] = (ENGINE,)
    cannot_check: str = ""
    excusable: bool = False


CATALOGUE: tuple[Invariant, ...] = (
    Invariant(
        "hw_monotonic_leader", ERROR, "§11.1, §2.3",
        "A leader's high watermark never decreases while it leads one leader epoch "
        "(maybeIncrementHighWatermark only moves forward).",
        "Every hw_change of a replica inside one leadership tenure (from its become_leader in epoch E to its "
        "next leadership_change or crash) with envelope epoch E has hw >= old_hw.",
        "expected = old_hw, actual = hw",
        ("leadership_change", "hw_change"), (ENGINE, KAFKA_LOG),
    ),
    Invariant(
        "hw_within_log", ERROR, "§11.1, §2.7",
        "Any replica's HW lies in [log start offset, log end offset] (follower HW = min(leader HW, LEO)).",
        "After every hw_change, log_start_offset <= hw <= LEO of that replica's replayed log.",
        "offset = hw, expected = the violated bound (LEO or LSO), actual = hw",
        ("hw_change", "append", "truncation"),
    ),
    Invariant(
        "hw_bound_maximal_isr", ERROR, "§11.2, §2.3, §2.5",
        "Leader HW <= min LEO over the leader and the maximal ISR (committed ISR plus a pending expansion).",
        "At every leader HW advance: hw <= min(leader LEO, the leader's view of each maximal-ISR follower's "
        "LEO = fetch_offset of its last follower_fetch_state in this tenure; unknown after a new leader's "
        "reset = -1).",
        "expected = the bound, actual = hw",
        ("leadership_change", "hw_change", "follower_fetch_state", "isr_change"),
        cannot_check="The caught-up-but-not-in-ISR clause of the HW rule needs broker fencing state.",
    ),
    Invariant(
        "hw_frozen_under_min_isr", ERROR, "§11.2, §2.3 (3.7+)",
        "The leader HW does not advance while the committed ISR is below the effective min ISR "
        "(min(min.insync.replicas, replication factor)).",
        "At every leader HW advance the leader's committed ISR size >= effective min ISR of the leader's "
        "broker_config.",
        "expected = effective min ISR, actual = committed ISR size",
        ("leadership_change", "hw_change", "isr_change"), (ENGINE, KAFKA_LOG),
        cannot_check="A topic's min.insync.replicas is known only when broker_config carries it as "
                     "`topic.<name>.min.insync.replicas` (the simulator does); else the broker value is used.",
    ),
    Invariant(
        "committed_prefix_agreement", ERROR, "§11.3 (LogMatching)",
        "For any two replicas, records below min(HW_a, HW_b) are identical.",
        "Whenever a replica's HW rises, every newly covered offset o is compared with every other replica "
        "whose HW > o (record identity = base/last offset, batch epoch, checksum). A record changes below a "
        "replica's HW only after a truncation that lowers that HW, so checking at HW rises is complete.",
        "offset = first differing offset, expected = other replica's checksum, actual = this replica's",
        ("append", "hw_change", "truncation"), excusable=True,
    ),
    Invariant(
        "isr_holds_committed", ERROR, "§11.3 (StrongIsr / WeakIsr)",
        "Every record below a leader's HW is present, identical, on every member of the committed ISR.",
        "At every leader HW advance, each committed-ISR follower holds the leader's record at every newly "
        "committed offset; at a committed expansion the new member holds every record below the HW.",
        "offset = first missing/different offset, expected = leader checksum, actual = member checksum or -1",
        ("append", "hw_change", "isr_change", "leadership_change"),
        cannot_check="Members that crashed after the leader last heard from them are skipped (their loss "
                     "is reported by acked_write_lost / inconsistent_offsets if it matters).",
        excusable=True,
    ),
    Invariant(
        "acked_write_lost", ERROR, "§11.4 (Jepsen lost-write, NoCommittedRecordLostGlobally)",
        "Every acks=all write acknowledged with NONE is in the final leader's log at its acknowledged offsets.",
        "At the end of the run, for every such produce_ack, the final leader (the last become_leader of the "
        "highest leader epoch) holds a record with the acknowledged checksum at each offset in [base_offset, "
        "last_offset]; offsets the final leader deleted by retention (below its log start offset) are skipped. Found "
        "at the end, each is dated when the write last left the partition's leader in office after the "
        "acknowledgement (the broker of the latest become_leader of the highest leader epoch so far), and its "
        "evidence names that event: a leader without the acknowledged record taking office, or the record's removal "
        "from the leader in office (a truncation, an overwrite, a crash loss dated at the crash; not retention: a "
        "write on the leader stays on while the leader's log starts above its offset, as the end of the run skips "
        "those, though only the record itself brings back one that left); when it was never on the leader in office "
        "from the acknowledgement on (a replaced leader acknowledged it), at the acknowledgement, naming the "
        "become_leader that put the leader in office; at the run's end when no leader was in office at the "
        "acknowledgement. The evidence also names where the record left the log of the leader that acknowledged "
        "it, when it did (not by retention): a deposed leader's truncation as it rejoined as a follower, which "
        "the takeover alone does not show.",
        "replica = the final leader, which lacks it; offset = first lost offset, expected = acknowledged "
        "checksum, actual = final checksum or -1",
        ("produce_ack", "append", "leadership_change"), excusable=True,
    ),
    Invariant(
        "acks1_write_lost", INFO, "§11.4 (its acks=1 complement; §2.3 acks completion)",
        "An acks=1 write is acknowledged once the leader has appended it, before any follower has it, so "
        "Kafka does not promise that it survives a change of leader: losing it is allowed, but it is "
        "acknowledged data the producer believes written.",
        "As acked_write_lost, for every produce_ack with acks=1 and error NONE: at the end of the run the final "
        "leader holds the acknowledged checksum at each offset in [base_offset, last_offset] at or above its "
        "log start offset, dated as acked_write_lost dates its losses. Never excused and never a failure: severity "
        "info.",
        "replica = the final leader, which lacks it; offset = first lost offset, expected = acknowledged "
        "checksum, actual = final checksum or -1",
        ("produce_ack", "append", "leadership_change"),
    ),
    Invariant(
        "inconsistent_offsets", ERROR, "§11.5 (Jepsen inconsistent-offsets)",
        "One (partition, offset) never holds two different committed records over the run.",
        "A record is committed when a leader exposes it: its HW passes the offset (hw_change of a leader in "
        "tenure) or it becomes leader with a HW above it. A second, different committed record at the same "
        "offset is a violation.",
        "offset = the offset, expected = first committed checksum, actual = new committed checksum",
        ("append", "hw_change", "leadership_change"), excusable=True,
    ),
    Invariant(
        "truncation_safety", ERROR, "§11.6",
        "No follower truncation removes a committed record (below the partition's committed HW).",
        "For every truncation [truncate_offset, old_leo), and the records below the target of a batch holding "
        "it (which truncateTo drops whole): no removed record equals the committed record at its offset. "
        "Removing a different (divergent, never committed) record below the committed HW is the cure, not a "
        "violation. Excused (warning) after an unclean election (§11.6 second sentence).",
        "offset = first committed offset removed, expected = committed HW, actual = truncate_offset",
        ("truncation", "append", "hw_change"),
        cannot_check="A record that only leaders of epochs after the truncating follower's exposed is not "
                     "judged: a follower that has not heard of the later epoch acts on its own epoch's leader's "
                     "answer, as Kafka's does, and the later commit counted no replica still in an earlier epoch "
                     "(isr_holds_committed judges the ISR that did count).",
        excusable=True,
    ),
    Invariant(
        "leader_no_truncation", ERROR, "Appendix A, §2.6",
        "A leader never truncates its own log.",
        "No truncation event from a replica inside a leadership tenure.",
        "expected = old_leo, actual = truncate_offset",
        ("truncation", "leadership_change"), (ENGINE, KAFKA_LOG),
    ),
    Invariant(
        "isr_expand_legal", ERROR, "§11.7, §2.4",
        "An expansion adds one replica whose LEO >= leader HW and >= the leader-epoch start offset, that is "
        "assigned, not already in the ISR and ISR-eligible.",
        "Every proposed expand: exactly one replica added, assigned, not in the committed ISR, and the leader's "
        "view of its LEO >= max(leader HW, epoch start offset); every controller answer (committed, "
        "alter_partition) adding the pending expansion's replica: its broker was not in controlled shutdown "
        "before the proposal without a start since.",
        "expected = max(leader HW, epoch start offset), actual = the leader's view of the follower LEO",
        ("isr_change", "follower_fetch_state", "leadership_change"),
        cannot_check="Fencing and broker-epoch eligibility are controller state, not events: a crashed broker "
                     "stays eligible until the controller fences it, and a leader proposes from metadata that "
                     "may not yet know of a shutdown (the controller then answers INELIGIBLE_REPLICA), so "
                     "eligibility is judged at the controller's answer, from controlled-shutdown and start "
                     "lifecycle events only.",
    ),
    Invariant(
        "isr_shrink_legal", ERROR, "§11.7, §2.4",
        "A shrink removes only followers not caught up within replica.lag.time.max.ms; never the leader.",
        "Every proposed shrink keeps the leader, and for each removed follower: its LEO (leader's view) != "
        "leader LEO and now - lastCaughtUpTimeMs > replica.lag.time.max.ms of the leader's broker.",
        "expected = replica.lag.time.max.ms, actual = now - lastCaughtUpTimeMs",
        ("isr_change", "follower_fetch_state", "leadership_change"),
    ),
    Invariant(
        "isr_single_inflight", ERROR, "§11.7, §2.5",
        "At most one AlterPartition is pending per partition leader.",
        "No isr_change proposed while the same leader has one pending (pending ends at committed, at a "
        "rejection with reason reset_to_committed, or at a leadership change).",
        "expected = event_id of the pending proposal, actual = none",
        ("isr_change", "leadership_change"),
        # Not from real logs: a proposal can end without an INFO line (errors that leave it awaiting metadata and
        # stale answers are DEBUG in 3.x; a 2.x ZooKeeper write has no pending state at all), so a log would show
        # proposals "in flight" that were not. Seen on simulated runs written out as 2.4 logs.
        cannot_check="From broker logs: the end of a proposal is not always logged at INFO.",
    ),
    Invariant(
        "isr_nonempty", ERROR, "§11.7, §9.1 LeaderInIsr",
        "A partition with a leader has a non-empty ISR that contains the leader (with KIP-966's eligible leader "
        "replicas only a leaderless partition's ISR may be empty).",
        "Committed isr_change, become_leader and leader_election (with a leader) carry a non-empty ISR that "
        "contains the leader; an event without an ISR (a broker log line that does not print it) is not judged.",
        "actual = ISR size",
        ("isr_change", "leadership_change", "leader_election"), (ENGINE, KAFKA_LOG),
    ),
    Invariant(
        "leader_epoch_monotonic", ERROR, "§11.8",
        "Leader epochs strictly increase across elections; one leader per epoch; a replica's epoch never "
        "goes back.",
        "leader_election epochs strictly increase per partition; no two replicas become leader (or are "
        "elected) in the same epoch; each replica's leadership_change epochs are non-decreasing.",
        "expected = previous epoch (or leader), actual = this epoch (or leader)",
        ("leadership_change", "leader_election"), (ENGINE, KAFKA_LOG),
    ),
    Invariant(
        "epoch_cache_monotonic", ERROR, "§11.8, §2.7",
        "A replica's epoch cache is strictly increasing in epoch and start offset; a leader stamps its own "
        "epoch on the batches it appends.",
        "Batch epochs never decrease with offset in any replica's replayed log, and a leader append carries "
        "the leader's tenure epoch.",
        "offset = base_offset, expected = minimum (or leader) epoch, actual = batch epoch",
        ("append",),
    ),
    Invariant(
        "fetch_epoch_fenced", ERROR, "§11.8, §8.3 KIP-320",
        "A fetch is answered (error NONE) only when its CurrentLeaderEpoch equals the leader's epoch.",
        "For every fetch_response with error NONE, the leader it names led the partition in the fetch's "
        "epoch at some moment between the fetch and the response. Skipped for follower brokers whose "
        "replog.truncation.mode predates KIP-320 (high_watermark, leader_epoch_v0).",
        "expected = the fetch's epoch, actual = the leader's epoch at the response (-1 if not leader)",
        ("fetch", "fetch_response", "leadership_change"),
    ),
    Invariant(
        "truncation_point", ERROR, "§11.9, §3.5",
        "A follower truncates to getOffsetTruncationState applied to the leader's answer and its own epoch "
        "cache.",
        "diverging_epoch: the DivergingEpoch must be the leader's replayed epoch-cache answer for the fetch's "
        "LastFetchedEpoch (for an epoch older than that cache when the leader's log start rose after the fetch: "
        "the asked epoch, or a floor epoch below it that the rise collapsed, with an end at or below the cache's "
        "first start, which that rise moved up), and with "
        "the follower's replayed epoch cache it gives the expected offset; the "
        "truncation must match it (or be absent when it is >= LEO), before the follower's next fetch, response "
        "or append, or the end of the run unless the answer's response was still being processed then (a later "
        "answer of it was OFFSET_OUT_OF_RANGE and its fetcher had not fetched since: processFetchRequest "
        "truncates after that partition's ListOffsets). leader_epoch / "
        "leader_epoch_v0: the leader's answer is rebuilt from its replayed epoch cache at the truncation "
        "(v0: no epoch); when that round names an epoch the follower lacks and ends at its LEO (no truncation, "
        "no event, the cache trimmed there), the truncation answers the next round. high_watermark: the local "
        "HW. out_of_range: at most the leader's LEO. The truncation offset is the target itself, which "
        "LocalLog.truncateTo makes the LEO even inside a batch (the replay drops that batch whole).",
        "expected = expected truncation offset, actual = truncate_offset (or LEO if none happened); for a "
        "wrong leader answer (replica = the leader): expected = its end offset, actual = the answered one",
        ("truncation", "fetch_response", "append"),
        cannot_check="OffsetsForLeaderEpoch and ListOffsets answers are not events: leader_epoch answers are "
                     "rebuilt (skipped when the leader left the follower's epoch, or when the asked epoch is older "
                     "than the leader's cache, whose first start moves with retention), out_of_range targets are "
                     "bounded only, `full` truncations are not checked.",
    ),
    Invariant(
        "follower_log_matching", ERROR, "§11.9 second clause, §8.1, §8.2",
        "After truncation a follower's log matches its leader's: it only extends a common prefix.",
        "At every follower append of a batch at base b from its current leader (same epoch, still leading): "
        "the batch equals the leader's batch at b, and the follower's record at b-1 equals the leader's.",
        "offset = first mismatching offset, expected = leader checksum, actual = follower checksum",
        ("append", "leadership_change"),
        cannot_check="Not excused by unclean elections: KIP-279 keeps logs from diverging even then "
                     "(logsShouldNotDivergeOnUncleanLeaderElections).",
    ),
    Invariant(
        "quota_throttle_legal", ERROR, "§11.10, §4",
        "Only out-of-sync throttled replicas are throttled, and only while the measured rate exceeds the bound.",
        "Every quota_throttle has measured_rate > quota_bound; a leader-side one names a follower outside the "
        "leader's committed ISR; a follower-side one a partition whose lag (leader HW - next fetch offset "
        "from the last non-empty fetch_response) is unknown or > 0; when the broker_config carries the topic's "
        "`topic.<t>.<side>.replication.throttled.replicas` (`*` or `partition:broker` entries), the partition "
        "is in it.",
        "expected = quota_bound, actual = measured_rate",
        ("quota_throttle",),
        cannot_check="The leader's measured rate is only reported when it throttles, so a response that should "
                     "have been throttled but was not cannot be detected; throttle lists set dynamically "
                     "(reassignment) are not events.",
    ),
    Invariant(
        "delayed_fetch_bound", ERROR, "§11.11, §5",
        "A parked follower fetch completes no later than maxWaitMs (replica.fetch.wait.max.ms).",
        "Every fetch_response with error NONE arrives within replica.fetch.wait.max.ms + 2 x the maximum "
        "network delay (CheckOptions / run.json `max_network_delay_ms`) of its fetch; without a known "
        "network delay the bound is replica.socket.timeout.ms. Arrival is `response_received_ms` (schema 1.2; "
        "`ts_ms` before it): a ListOffsets for an earlier partition of the response delays processing, not "
        "arrival. The bound grows by the time GC pauses and disk stalls (`broker_fault`, schema 1.9) held the "
        "answer between the fetch and its arrival: the follower's pauses and stalls, the leader's pauses (its "
        "answers do not wait for its disk), the length of their union within the flight; a pause or stall ends "
        "early at its broker's crash, shutdown or (re)start.",
        "expected = the bound (ms), actual = elapsed ms",
        ("fetch", "fetch_response"),
        cannot_check="Purgatory parking and completion are not events: the 'completes immediately when an "
                     "early-completion condition becomes true' half cannot be checked; runs written before "
                     "schema 1.9 whose run.json lists GC pauses or disk stalls are skipped, as their stalls are "
                     "not events and delay an answer by any amount.",
    ),
    Invariant(
        "event_stream_consistent", WARNING, "events contract (schemas/README.md)",
        "The events describe one consistent history (the checker's replay agrees with what they report).",
        "append base_offset == replayed LEO (a follower's may lie above it, over a gap of its leader's log); "
        "truncation old_leo == replayed LEO; hw_change old_hw == replayed HW; a leadership_change LEO above the "
        "replay (missing appends) or below it without a crash; an acknowledged write absent from the acking "
        "leader.",
        "expected = replayed value, actual = reported value",
        ("append",),
    ),
)

BY_NAME: dict[str, Invariant] = {inv.name: inv for inv in CATALOGUE}
"""The catalogue keyed by invariant name."""


def catalogue_markdown() -> str:
    """The catalogue as a Markdown table (the generated section of `replication_core/checker/README.md`)."""

    def cell(text: str) -> str:
        """Escape a table cell."""
        return text.replace("|", "\\|").replace("\n", " ")

    rows = ["| invariant | severity | rule (reference) | checked | offsets | sources | cannot be checked |",
            "|---|---|---|---|---|---|---|"]
    for inv in CATALOGUE:
        severity = inv.severity + (" (warning when excused)" if inv.excusable else "")
        rows.append(f"| `{inv.name}` | {severity} | {cell(inv.rule)} ({cell(inv.section)}) | {cell(inv.checks)} | "
                    f"{cell(inv.offsets)} | {', '.join(inv.sources)} | {cell(inv.cannot_check) or '—'} |")
    return "\n".join(rows) + "\n"
