"""The ISR, HW-bound and fetch-side Spark invariants on tiny hand-built runs: one violating, one clean.

Each case puts run `bad` and run `ok` into the one audit of all hand-built cases (`tests.spark.audit_cases`)
and expects, worked out by hand, the violations of `bad` only, with the numbers `replication_core.checker`
reports (§ of the reference in each invariant's docstring). The same rows also go through the reference
checker, which must report exactly those rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pyspark.sql import DataFrame

from tests.spark.audit_cases import (
    KEY_COLUMNS,
    Case,
    Rows,
    found,
    key_schema,
    reference,
    register,
    same_rows,
    timed,
)

AUDIT_CASES: list[Case] = []
case = register(AUDIT_CASES)


def _case(invariant: str, bad: Rows, ok: Rows, expected: list[tuple]) -> Case:
    """Runs bad + ok; the reference checker must find `expected` too (see the tests below)."""
    return Case("", invariant, {"bad": timed(bad), "ok": timed(ok)}, expected)


def leader(broker: int = 1, epoch: int = 1, isr: list[int] | None = None, **kw: Any) -> dict[str, Any]:
    """A become_leader leadership_change of replicas [1, 2, 3]."""
    fields = dict(event_type="leadership_change", broker_id=broker, leader_epoch=epoch, action="become_leader",
                  leader_id=broker, isr=isr if isr is not None else [1, 2, 3], replicas=[1, 2, 3], leo=0, hw=0)
    return {**fields, **kw}


def follower(broker: int = 2, epoch: int = 1, leader_id: int = 1) -> dict[str, Any]:
    """A become_follower leadership_change."""
    return dict(leader(broker, epoch), action="become_follower", leader_id=leader_id)


def append(base: int, last: int, broker: int = 1, epoch: int = 1, role: str = "leader") -> dict[str, Any]:
    """An append of [base, last]."""
    return dict(event_type="append", broker_id=broker, leader_epoch=epoch, role=role, base_offset=base,
                last_offset=last, batch_leader_epoch=epoch, batch_checksum=7, leo=last + 1)


def hw(old: int, new: int, broker: int = 1, epoch: int = 1) -> dict[str, Any]:
    """A leader hw_change."""
    return dict(event_type="hw_change", broker_id=broker, leader_epoch=epoch, role="leader", old_hw=old, hw=new)


def fetch_state(follower_id: int, offset: int, caught_up: int, broker: int = 1, epoch: int = 1) -> dict[str, Any]:
    """The leader's follower_fetch_state: its view of a follower's LEO and lastCaughtUpTimeMs."""
    return dict(event_type="follower_fetch_state", broker_id=broker, leader_epoch=epoch, follower_id=follower_id,
                fetch_offset=offset, last_caught_up_time_ms=caught_up, leo=offset)


def isr_change(action: str, old: list[int], new: list[int], state: str = "proposed", **kw: Any) -> dict[str, Any]:
    """An isr_change of leader 1."""
    return dict(event_type="isr_change", broker_id=1, leader_epoch=1, action=action, old_isr=old, isr=new,
                isr_state=state, **kw)


def fetch(offset: int, epoch: int = 1, broker: int = 2, leader_id: int = 1, **kw: Any) -> dict[str, Any]:
    """A follower's fetch."""
    return dict(event_type="fetch", broker_id=broker, leader_epoch=epoch, leader_id=leader_id, fetch_offset=offset,
                **kw)


def response(offset: int, broker: int = 2, leader_id: int = 1, error: str = "NONE", **kw: Any) -> dict[str, Any]:
    """A fetch_response to the follower."""
    return dict(event_type="fetch_response", broker_id=broker, leader_epoch=1, leader_id=leader_id,
                fetch_offset=offset, error=error, **kw)


def config(broker: int, **values: str) -> dict[str, Any]:
    """A broker_config (run-level event)."""
    return dict(event_type="broker_config", broker_id=broker, topic=None, partition=None, config=values)


def throttle(role: str, follower_id: int, rate: float, bound: float, broker: int = 1) -> dict[str, Any]:
    """A quota_throttle of `follower_id` by `broker` on side `role`."""
    return dict(event_type="quota_throttle", broker_id=broker, leader_epoch=1, role=role, follower_id=follower_id,
                measured_rate=rate, quota_bound=bound, bytes=100)


@case
def delayed_fetch_bound_flags_a_response_later_than_the_socket_timeout() -> Case:
    cfg = config(2, **{"replica.socket.timeout.ms": "1000", "replica.fetch.wait.max.ms": "100"})
    bad = [cfg, follower(), dict(fetch(0), ts_ms=2000), dict(response(0), ts_ms=3001)]
    ok = [cfg, follower(), dict(fetch(0), ts_ms=2000), dict(response(0), ts_ms=3000)]
    return _case("delayed_fetch_bound", bad, ok,
           [("bad", "delayed_fetch_bound", "error", 2, 3, None, 1000, 1001, [2, 3])])


@case
def delayed_fetch_bound_times_the_response_arrival_not_its_processing() -> Case:
    # Both answers were processed at 3500, after the fetcher blocked on a ListOffsets for an earlier partition
    # of the same response; the one that arrived at 2900 is within the 1000 ms bound, the one at 3001 is not.
    cfg = config(2, **{"replica.socket.timeout.ms": "1000", "replica.fetch.wait.max.ms": "100"})
    bad = [cfg, follower(), dict(fetch(0), ts_ms=2000), dict(response(0, response_received_ms=3001), ts_ms=3500)]
    ok = [cfg, follower(), dict(fetch(0), ts_ms=2000), dict(response(0, response_received_ms=2900), ts_ms=3500)]
    return _case("delayed_fetch_bound", bad, ok,
           [("bad", "delayed_fetch_bound", "error", 2, 3, None, 1000, 1001, [2, 3])])


@case
def delayed_fetch_bound_ignores_errors_and_responses_to_another_fetch() -> Case:
    # Default bound 30 s: a late NONE answer to the fetch in flight is flagged, a late error or an answer
    # for another offset is not, nor one after a fetcher_change dropped the fetch in flight.
    dropped = dict(event_type="fetcher_change", broker_id=2, action="removed", topic=None, partition=None,
                   leader_id=1, partitions=[{"topic": "t", "partition": 0, "fetch_offset": 0}])
    bad = [follower(), dict(fetch(0), ts_ms=0), dict(response(0), ts_ms=40000)]
    ok = [follower(), dict(fetch(0), ts_ms=0), dict(response(0, error="NOT_LEADER_OR_FOLLOWER"), ts_ms=40000),
          dict(fetch(0), ts_ms=40001), dict(response(5), ts_ms=80000),
          dict(fetch(0), ts_ms=80001), dropped, dict(response(0), ts_ms=120000)]
    return _case("delayed_fetch_bound", bad, ok,
           [("bad", "delayed_fetch_bound", "error", 2, 2, None, 30000, 40000, [1, 2])])


def fault(broker: int, action: str, duration_ms: int) -> dict[str, Any]:
    """A broker_fault the simulator's fault injector records (run-level event)."""
    return dict(event_type="broker_fault", broker_id=broker, topic=None, partition=None, action=action,
                duration_ms=duration_ms)


@case
def delayed_fetch_bound_allows_for_the_pauses_and_stalls_that_held_the_answer() -> Case:
    # Bound 1000 ms. Inside the flight [2000, arrival]: the follower's 300 ms disk stall and the leader's 200 ms
    # GC pause count (1500 ms); the leader's disk stall (its answers do not wait for the disk), broker 3's pause
    # and the follower's pause that ended before the fetch do not. Arrival at 3500 is within, at 3600 over.
    def run(arrival: int) -> Rows:
        return [config(2, **{"replica.socket.timeout.ms": "1000"}), follower(),
                dict(fault(2, "gc_pause", 500), ts_ms=1400), dict(fetch(0), ts_ms=2000),
                dict(fault(2, "disk_stall", 300), ts_ms=2100), dict(fault(1, "disk_stall", 500), ts_ms=2200),
                dict(fault(3, "gc_pause", 10000), ts_ms=2300), dict(fault(1, "gc_pause", 200), ts_ms=2500),
                dict(response(0), ts_ms=arrival)]
    message = "fetch answered after 1600 ms, more than the 1500 ms bound (500 ms of it GC pauses and disk stalls)"
    return replace(_case("delayed_fetch_bound", run(3600), run(3500),
                         [("bad", "delayed_fetch_bound", "error", 2, 8, None, 1500, 1600, [3, 8], message)]),
                   columns=(*KEY_COLUMNS, "message"))


@case
def delayed_fetch_bound_counts_overlapping_holds_once_and_ends_a_pause_at_a_crash() -> Case:
    # Bound 1000 ms. Leader 1's 5 s GC pause from 1500 ends at its crash at 1700 (a restart follows at 1800), so it
    # holds nothing of the flight [2000, arrival]. Inside it the follower's disk stall (2100-2400) and GC pause
    # (2200-2500) overlap, and the leader's GC pause (2300-2500) lies within them: held 400 ms, not 800. Arrival
    # at 3400 is within 1400 ms, at 3500 over.
    def run(arrival: int) -> Rows:
        life = dict(event_type="broker_lifecycle", broker_id=1, topic=None, partition=None)
        return [config(2, **{"replica.socket.timeout.ms": "1000"}), follower(),
                dict(fault(1, "gc_pause", 5000), ts_ms=1500), dict(life, action="crash", ts_ms=1700),
                dict(life, action="restart", ts_ms=1800), dict(fetch(0), ts_ms=2000),
                dict(fault(2, "disk_stall", 300), ts_ms=2100), dict(fault(2, "gc_pause", 300), ts_ms=2200),
                dict(fault(1, "gc_pause", 200), ts_ms=2300), dict(response(0), ts_ms=arrival)]
    message = "fetch answered after 1500 ms, more than the 1400 ms bound (400 ms of it GC pauses and disk stalls)"
    return replace(_case("delayed_fetch_bound", run(3500), run(3400),
                         [("bad", "delayed_fetch_bound", "error", 2, 9, None, 1400, 1500, [5, 9], message)]),
                   columns=(*KEY_COLUMNS, "message"))


@case
def fetch_epoch_fenced_flags_an_answer_from_a_broker_that_never_led_the_epoch() -> Case:
    # Broker 1 leads epoch 1 throughout; a fetch in epoch 2 answered NONE by it was not fenced.
    bad = [leader(), follower(epoch=2), fetch(0, epoch=2), response(0)]
    ok = [leader(), follower(), fetch(0, epoch=1), response(0)]
    return _case("fetch_epoch_fenced", bad, ok,
           [("bad", "fetch_epoch_fenced", "error", 2, 3, None, 2, 1, [2, 3])])


@case
def fetch_epoch_fenced_accepts_a_leader_that_led_the_epoch_meanwhile() -> Case:
    # Broker 1 led epoch 1 when the fetch left and lost it before the answer: legal. Answered after a crash
    # ended its tenure before the fetch: fenced (actual -1, not leading).
    crash = dict(event_type="broker_lifecycle", broker_id=1, action="crash", topic=None, partition=None)
    bad = [leader(), follower(), crash, fetch(0), response(0)]
    ok = [leader(), follower(), fetch(0), leader(epoch=2), response(0)]
    return _case("fetch_epoch_fenced", bad, ok,
           [("bad", "fetch_epoch_fenced", "error", 2, 4, None, 1, -1, [3, 4])])


@case
def fetch_epoch_fenced_is_not_judged_before_kip_320() -> Case:
    old = config(2, **{"replog.truncation.mode": "leader_epoch_v0"})
    bad = [leader(), follower(epoch=2), fetch(0, epoch=2), response(0)]
    ok = [old, leader(), follower(epoch=2), fetch(0, epoch=2), response(0)]
    return _case("fetch_epoch_fenced", bad, ok,
           [("bad", "fetch_epoch_fenced", "error", 2, 3, None, 2, 1, [2, 3])])


@case
def quota_throttle_legal_flags_a_rate_within_the_bound_and_an_in_sync_replica() -> Case:
    bad = [leader(isr=[1, 2]), throttle("leader", 2, 50.0, 100.0)]
    ok = [leader(isr=[1, 2]), throttle("leader", 3, 150.0, 100.0)]
    return _case("quota_throttle_legal", bad, ok,
           [("bad", "quota_throttle_legal", "error", 2, 1, None, 100, 50, [1]),
            ("bad", "quota_throttle_legal", "error", 2, 1, None, None, None, [1])])


@case
def quota_throttle_legal_flags_an_in_sync_follower_and_an_unlisted_partition() -> Case:
    # Follower 2's last non-empty answer: HW 10, fetched 5 + 5 records -> lag 0; the later empty answer at
    # fetch offset 8 does not change a known lag. Its follower-side list names partition 1 only.
    cfg = config(2, **{"topic.t.follower.replication.throttled.replicas": "1:2, 1:3"})
    answered = [fetch(5), response(5, leader_hw=10, bytes=500, record_count=5),
                fetch(8), response(8, leader_hw=10, bytes=0, record_count=0)]
    bad = [cfg, follower(), *answered, throttle("follower", 2, 150.0, 100.0, broker=2)]
    ok = [config(2, **{"topic.t.follower.replication.throttled.replicas": "*"}), follower(), *answered[:2],
          follower(epoch=2), answered[2], dict(answered[3], leader_hw=12),
          throttle("follower", 2, 150.0, 100.0, broker=2)]
    return _case("quota_throttle_legal", bad, ok,
           [("bad", "quota_throttle_legal", "error", 2, 6, None, None, 0, [6]),
            ("bad", "quota_throttle_legal", "error", 2, 6, None, None, None, [0, 6])])


@case
def quota_throttle_legal_knows_no_lag_after_an_out_of_range_answer_until_records_come() -> Case:
    # Follower 2 was in sync (lag 0 from a non-empty answer). An OFFSET_OUT_OF_RANGE answer sends it to
    # fetchOffsetAndTruncate, which sets the lag from the leader's end offset (ListOffsets, no event): unknown
    # to the replay, and the empty answer after it does not replace it (Kafka updates a set lag only from
    # records), so the throttle is not judged (ok). bad: the non-empty answer after it sets lag 0 again.
    cfg = config(2, **{"topic.t.follower.replication.throttled.replicas": "*"})
    start = [cfg, follower(), fetch(5), response(5, leader_hw=10, bytes=500, record_count=5),
             fetch(10), response(10, error="OFFSET_OUT_OF_RANGE"), fetch(20),
             response(20, leader_hw=20, bytes=0, record_count=0)]
    ok = [*start, throttle("follower", 2, 150.0, 100.0, broker=2)]
    bad = [*start, fetch(20), response(20, leader_hw=22, bytes=200, record_count=2),
           throttle("follower", 2, 150.0, 100.0, broker=2)]
    return _case("quota_throttle_legal", bad, ok,
           [("bad", "quota_throttle_legal", "error", 2, 10, None, None, 0, [10])])


@case
def quota_throttle_legal_survives_values_at_the_ends_of_long() -> Case:
    # Values ingest accepts but no broker writes: a bound below Long.MIN (not a long: expected unknown) and a
    # fetch offset whose next offset passes Long.MAX (above any HW: lag 0, so the follower is in sync). Spark's
    # ANSI arithmetic failed the audit on both. (The reference checker's Python ints differ here by design.)
    low = [leader(isr=[1, 2]), throttle("leader", 2, -1e19, -1e19)]
    edge = 2**63 - 3
    high = [config(2, **{"topic.t.follower.replication.throttled.replicas": "*"}), follower(), fetch(edge),
            response(edge, leader_hw=10, bytes=500, record_count=5), throttle("follower", 2, 150.0, 100.0, broker=2)]
    return Case("", "quota_throttle_legal", {"low": timed(low), "high": timed(high)}, [
        ("low", "quota_throttle_legal", "error", 2, 1, None, None, None, [1]),
        ("low", "quota_throttle_legal", "error", 2, 1, None, None, None, [1]),
        ("high", "quota_throttle_legal", "error", 2, 4, None, None, 0, [4]),
    ])


@case
def hw_bound_maximal_isr_flags_an_hw_above_a_pending_member_as_the_leader_saw_it() -> Case:
    # Leader LEO 10, follower 2 at 10, replica 3 (being added) at 2: the maximal ISR bounds the HW at 2.
    start = [leader(isr=[1, 2]), append(0, 9), fetch_state(2, 10, 1000), fetch_state(3, 2, 0)]
    expand = isr_change("expand", [1, 2], [1, 2, 3])
    bad = [*start, expand, hw(0, 5)]
    ok = [*start, hw(0, 5)]
    return _case("hw_bound_maximal_isr", bad, ok,
           [("bad", "hw_bound_maximal_isr", "error", 1, 5, None, 2, 5, [3, 5])])


@case
def hw_bound_maximal_isr_uses_the_view_reset_by_a_new_epoch() -> Case:
    # A new epoch keeps follower 2's LEO (10) but forgets the event; replica 3, never seen, bounds at -1.
    base = [leader(isr=[1, 2]), append(0, 9), fetch_state(2, 10, 1000)]
    bad = [*base, leader(epoch=2, isr=[1, 2, 3], leo=10), hw(0, 9, epoch=2)]
    ok = [*base, leader(epoch=2, isr=[1, 2], leo=10), hw(0, 9, epoch=2)]
    return _case("hw_bound_maximal_isr", bad, ok,
           [("bad", "hw_bound_maximal_isr", "error", 1, 4, None, -1, 9, [4])])


@case
def hw_bound_maximal_isr_names_the_lowest_bound_and_the_leader_on_a_tie() -> Case:
    # Leader LEO 10. "low": followers 2 and 3 seen at 4 and 3, HW 6: both break it, replica 3 binds (3), proved
    # by its fetch state (event 3). "tie": both followers at 10, HW 11: the leader's LEO (10) binds, as the
    # checker keeps it unless a follower is strictly lower, and no follower event proves it.
    start = [leader(), append(0, 9)]
    low = [*start, fetch_state(2, 4, 0), fetch_state(3, 3, 0), hw(0, 6)]
    tie = [*start, fetch_state(2, 10, 0), fetch_state(3, 10, 0), hw(0, 11)]
    ok = [*start, fetch_state(2, 10, 0), fetch_state(3, 10, 0), hw(0, 10)]
    return Case("", "hw_bound_maximal_isr", {"low": timed(low), "tie": timed(tie), "ok": timed(ok)}, [
        ("low", "hw_bound_maximal_isr", "error", 1, 4, None, 3, 6, [3, 4]),
        ("tie", "hw_bound_maximal_isr", "error", 1, 4, None, 10, 11, [4]),
    ])


@case
def isr_expand_legal_flags_a_lagging_a_double_and_an_ineligible_committed_addition() -> Case:
    # Ineligible = the controller commits broker 3 although its controlled shutdown (event 7) came before the
    # proposal (9). A crash before the proposal (ok, 4) is not judged: the controller holds a crashed broker
    # eligible until it fences it, which no event shows. Nor is a controlled shutdown after the proposal (ok,
    # 12): the leader proposed from metadata that had not heard of it.
    life = dict(event_type="broker_lifecycle", broker_id=3, action="controlled_shutdown", topic=None, partition=None)
    answer = dict(state="committed", reason="alter_partition")
    start = [leader(isr=[1, 2]), append(0, 9), fetch_state(2, 10, 1000), hw(0, 5)]
    bad = [*start, fetch_state(3, 4, 0), isr_change("expand", [1, 2], [1, 2, 3]),
           isr_change("expand", [1, 2], [1, 2, 3, 4]), life, fetch_state(3, 6, 0),
           isr_change("expand", [1, 2], [1, 2, 3]), isr_change("expand", [1, 2], [1, 2, 3], **answer)]
    ok = [*start, dict(life, action="crash"), fetch_state(3, 6, 0), isr_change("expand", [1, 2], [1, 2, 3]),
          isr_change("expand", [1, 2], [1, 2, 3], **answer), dict(life, action="restart"),
          isr_change("shrink", [1, 2, 3], [1, 2]), isr_change("shrink", [1, 2, 3], [1, 2], **answer),
          fetch_state(3, 6, 0), isr_change("expand", [1, 2], [1, 2, 3]), life,
          isr_change("expand", [1, 2], [1, 2, 3], **answer)]
    return _case("isr_expand_legal", bad, ok,
           [("bad", "isr_expand_legal", "error", 3, 5, None, 5, 4, [4, 5]),
            ("bad", "isr_expand_legal", "error", 1, 6, None, None, 2, [6]),
            ("bad", "isr_expand_legal", "error", 3, 10, None, None, None, [7, 9, 10])])


@case
def isr_expand_legal_takes_the_replicas_a_leader_is_assigned_in_its_epoch() -> Case:
    # Replica 4, caught up, is added. In `bad` no event assigns it (the leader's registration says [1, 2, 3]); in
    # `ok` the leader applied a reassignment adding it in its own epoch (KRaft keeps the leader epoch when replicas
    # are added), a committed update that states the new assignment.
    start = [leader(), append(0, 9)]
    moved = isr_change("update", [1, 2, 3], [1, 2, 3], state="committed", reason="leader_and_isr",
                       replicas=[1, 2, 3, 4], adding_replicas=[4])
    bad = [*start, fetch_state(4, 10, 0), isr_change("expand", [1, 2, 3], [1, 2, 3, 4])]
    ok = [*start, moved, fetch_state(4, 10, 0), isr_change("expand", [1, 2, 3], [1, 2, 3, 4])]
    return _case("isr_expand_legal", bad, ok, [("bad", "isr_expand_legal", "error", 4, 3, None, 0, 10, [2, 3])])


@case
def isr_shrink_legal_flags_removing_a_caught_up_follower_and_the_leader() -> Case:
    cfg = config(1, **{"replica.lag.time.max.ms": "1000"})
    start = [cfg, dict(leader(), ts_ms=1000), append(0, 9), dict(fetch_state(2, 10, 1500), ts_ms=1500),
             fetch_state(3, 4, 1000)]
    bad = [*start, dict(isr_change("shrink", [1, 2, 3], [1, 3]), ts_ms=2000),
           dict(isr_change("shrink", [1, 2, 3], [2, 3]), ts_ms=2000)]
    ok = [*start, dict(isr_change("shrink", [1, 2, 3], [1, 2]), ts_ms=2500)]
    return _case("isr_shrink_legal", bad, ok,
           [("bad", "isr_shrink_legal", "error", 2, 5, None, 1000, 500, [3, 5]),
            ("bad", "isr_shrink_legal", "error", 1, 6, None, None, None, [6])])


CHECKER_DIFFERS = {"quota_throttle_legal_survives_values_at_the_ends_of_long"}
"""Cases where the reference checker's Python ints differ from Spark's longs by design."""



@pytest.mark.parametrize("case", AUDIT_CASES, ids=lambda c: c.name)
def test_spark_finds_the_violations_worked_out_by_hand(case: Case, audited: DataFrame, expect) -> None:
    expect(found(audited, case), case.expected, key_schema(case.columns))


@pytest.mark.parametrize("case", [c for c in AUDIT_CASES if c.name not in CHECKER_DIFFERS], ids=lambda c: c.name)
def test_the_reference_checker_finds_the_same(case: Case) -> None:
    assert same_rows(reference(case), case.expected), reference(case)
