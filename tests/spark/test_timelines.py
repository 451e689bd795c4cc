"""Timelines transforms against small hand-built event sets; every expected row is worked out by hand."""

from __future__ import annotations

from chispa import assert_df_equality

from jobs.transforms.timelines import isr_changes, partition_state, replica_offsets
from schemas.analytics import ISR_CHANGES_SCHEMA, PARTITION_STATE_SCHEMA, REPLICA_OFFSETS_SCHEMA

L, F_ = "leader", "follower"


def test_replica_offsets_intervals_per_replica(events, expect) -> None:
    ev = events([
        # broker 1 leads: LEO/HW from the leadership change, then an append and HW move at the same ms
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=1, replicas=[1, 2], leo=0, hw=0),                    # 0
        dict(event_type="append", ts_ms=20, broker_id=1, leader_epoch=1, role=L, base_offset=0, last_offset=4,
             leo=5),                                                                            # 1
        dict(event_type="hw_change", ts_ms=20, broker_id=1, leader_epoch=1, role=L, old_hw=0, hw=5),  # 2
        dict(event_type="log_start_offset_change", ts_ms=30, broker_id=1, leader_epoch=1, role=L,
             old_log_start_offset=0, log_start_offset=2),                                       # 3
        # broker 2 follows: truncates 3 -> 2 (its hw event follows at the same ms), then catches up
        dict(event_type="leadership_change", ts_ms=10, broker_id=2, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=1, replicas=[1, 2], leo=3, hw=3),                    # 4
        dict(event_type="truncation", ts_ms=15, broker_id=2, leader_epoch=1, role=F_, old_leo=3,
             truncate_offset=2, reason="leader_epoch", hw=3),                                   # 5
        dict(event_type="hw_change", ts_ms=15, broker_id=2, leader_epoch=1, role=F_, old_hw=3, hw=2),  # 6
        dict(event_type="append", ts_ms=25, broker_id=2, leader_epoch=1, role=F_, base_offset=2, last_offset=4,
             leo=5),                                                                            # 7
        dict(event_type="hw_change", ts_ms=40, broker_id=2, leader_epoch=1, role=F_, old_hw=2, hw=5),  # 8
        # broker 3: no leadership event seen; its HW before the first hw_change comes from old_hw
        dict(event_type="append", ts_ms=50, broker_id=3, leader_epoch=1, role=F_, base_offset=7, last_offset=8,
             leo=9),                                                                            # 9
        dict(event_type="hw_change", ts_ms=60, broker_id=3, leader_epoch=1, role=F_, old_hw=4, hw=9),  # 10
        # not a replica-offset event
        dict(event_type="fetch", ts_ms=61, broker_id=3, leader_epoch=1, leader_id=1, fetcher_id=0, fetch_offset=9),
    ])
    expect(replica_offsets(ev), [
        # run, topic, p, replica, from, to, role, epoch, lso, hw, leo, event_id
        ("r", "t", 0, 1, 10, 20, L, 1, 0, 0, 0, 0),      # LSO 0: old_log_start_offset of the first LSO change
        ("r", "t", 0, 1, 20, 30, L, 1, 0, 5, 5, 2),      # append + HW at ms 20 -> one interval, event 2
        ("r", "t", 0, 1, 30, None, L, 1, 2, 5, 5, 3),
        ("r", "t", 0, 2, 10, 15, F_, 1, None, 3, 3, 4),  # follower LSO never reported
        ("r", "t", 0, 2, 15, 25, F_, 1, None, 2, 2, 6),  # truncation's hw=3 is the HW before; hw_change sets 2
        ("r", "t", 0, 2, 25, 40, F_, 1, None, 2, 5, 7),
        ("r", "t", 0, 2, 40, None, F_, 1, None, 5, 5, 8),
        ("r", "t", 0, 3, 50, 60, F_, 1, None, 4, 9, 9),
        ("r", "t", 0, 3, 60, None, F_, 1, None, 9, 9, 10),
    ], REPLICA_OFFSETS_SCHEMA)


def test_replica_offsets_a_crashed_broker_leads_nothing_until_it_is_told_again(events, expect) -> None:
    ev = events([
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=1, replicas=[1, 2], leo=5, hw=5),                    # 0
        dict(event_type="leadership_change", ts_ms=10, broker_id=2, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=1, replicas=[1, 2], leo=5, hw=5),                    # 1
        dict(event_type="broker_lifecycle", ts_ms=100, broker_id=1, topic=None, partition=None,
             action="crash"),                                                                   # 2
        dict(event_type="broker_lifecycle", ts_ms=150, broker_id=1, topic=None, partition=None,
             action="restart"),                                                                 # 3
        dict(event_type="leadership_change", ts_ms=200, broker_id=1, leader_epoch=2, action="become_follower",
             leader_id=2, partition_epoch=2, replicas=[1, 2], leo=5, hw=5),                    # 4
        # a replica broker 1 hosts only after the crash is not marked by it
        dict(event_type="leadership_change", ts_ms=300, broker_id=1, partition=1, leader_epoch=2,
             action="become_follower", leader_id=2, partition_epoch=2, replicas=[1, 2], leo=0, hw=0),  # 5
    ])
    expect(replica_offsets(ev), [
        ("r", "t", 0, 1, 10, 100, L, 1, None, 5, 5, 0),
        ("r", "t", 0, 1, 100, 200, "offline", 1, None, 5, 5, 2),   # the log stays on disk; the role does not
        ("r", "t", 0, 1, 200, None, F_, 2, None, 5, 5, 4),
        ("r", "t", 0, 2, 10, None, F_, 1, None, 5, 5, 1),
        ("r", "t", 1, 1, 300, None, F_, 2, None, 0, 0, 5),
    ], REPLICA_OFFSETS_SCHEMA)


def test_replica_offsets_the_log_a_power_failure_leaves_is_offline_not_a_follower(events, expect) -> None:
    # The simulator's disk reports what a power failure lost as a truncation and an hw_change stamped
    # role=follower, right after the crash (replication_core/sim/disk.py); until the broker is told a role
    # again its replica is offline, with the log and HW it recovered.
    ev = events([
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=1, replicas=[1, 2], leo=5, hw=5),                    # 0
        dict(event_type="append", ts_ms=50, broker_id=1, leader_epoch=1, role="leader", base_offset=5,
             last_offset=9, leo=10),                                                            # 1
        dict(event_type="broker_lifecycle", ts_ms=100, broker_id=1, topic=None, partition=None,
             action="crash"),                                                                   # 2
        dict(event_type="truncation", ts_ms=100, broker_id=1, leader_epoch=1, role="follower", old_leo=10,
             truncate_offset=7, reason="out_of_range", hw=5),                                  # 3
        dict(event_type="hw_change", ts_ms=100, broker_id=1, leader_epoch=1, role="follower", old_hw=5,
             hw=4),                                                                             # 4
        dict(event_type="leadership_change", ts_ms=300, broker_id=1, leader_epoch=2, action="become_follower",
             leader_id=2, partition_epoch=2, replicas=[1, 2], leo=7, hw=4),                    # 5
    ])
    expect(replica_offsets(ev), [
        ("r", "t", 0, 1, 10, 50, L, 1, None, 5, 5, 0),
        ("r", "t", 0, 1, 50, 100, L, 1, None, 5, 10, 1),
        ("r", "t", 0, 1, 100, 300, "offline", 1, None, 4, 7, 4),
        ("r", "t", 0, 1, 300, None, F_, 2, None, 4, 7, 5),
    ], REPLICA_OFFSETS_SCHEMA)


def test_replica_offsets_a_log_loaded_at_a_restart_sets_its_offsets(events, expect) -> None:
    # Read from broker logs (`log_load`, 'Completed load of log ...'): broker 1's restart after a power failure
    # finds its log ending at 7 (offsets 7-9 were not flushed) and starting at 2 (its last log-start-offset
    # checkpoint, below the 4 retention had reached): both go down, and the HW, which the log line does not
    # print, is never above the LEO. The 0.10 form prints no log start: a LEO below it lowers it.
    ev = events([
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=1, replicas=[1, 2], leo=5, hw=5),                    # 0
        dict(event_type="append", ts_ms=50, broker_id=1, leader_epoch=1, role=L, base_offset=5, last_offset=9,
             leo=10),                                                                           # 1
        dict(event_type="hw_change", ts_ms=60, broker_id=1, leader_epoch=1, role=L, old_hw=5, hw=10),  # 2
        dict(event_type="log_start_offset_change", ts_ms=70, broker_id=1, leader_epoch=1, role=L,
             old_log_start_offset=0, log_start_offset=4, reason="segment_deletion"),            # 3
        dict(event_type="broker_lifecycle", ts_ms=100, broker_id=1, topic=None, partition=None,
             action="crash"),                                                                   # 4
        dict(event_type="log_load", ts_ms=150, broker_id=1, leader_epoch=1, log_start_offset=2, leo=7),  # 5
        dict(event_type="leadership_change", ts_ms=300, broker_id=1, leader_epoch=2, action="become_follower",
             leader_id=2, partition_epoch=2, replicas=[1, 2], leo=7, hw=6),                    # 6
        dict(event_type="leadership_change", ts_ms=10, broker_id=2, partition=1, leader_epoch=1,
             action="become_follower", leader_id=1, partition_epoch=1, replicas=[1, 2], leo=8, hw=8),  # 7
        dict(event_type="log_start_offset_change", ts_ms=20, broker_id=2, partition=1, leader_epoch=1, role=F_,
             old_log_start_offset=0, log_start_offset=4),                                       # 8
        dict(event_type="log_load", ts_ms=150, broker_id=2, partition=1, leader_epoch=1, leo=3),  # 9
        # From a log without leadership lines: a truncation line (no role, no HW printed), then a load. The HW
        # stays unknown (not the LEO), and the offsets show although no line stated the role.
        dict(event_type="truncation", ts_ms=10, broker_id=3, partition=2, leader_epoch=4, old_leo=None,
             truncate_offset=95, reason=None),                                                  # 10
        dict(event_type="log_load", ts_ms=20, broker_id=3, partition=2, leader_epoch=4, log_start_offset=10,
             leo=90),                                                                           # 11
        # The HW each partition then starts with ('Log loaded for partition ... with initial high watermark'): no
        # role and no old HW printed; it sets the HW (broker 1's checkpoint 5, below the 7 of the clamp).
        dict(event_type="hw_change", ts_ms=200, broker_id=1, leader_epoch=1, role=None, old_hw=None, hw=5),  # 12
        dict(event_type="hw_change", ts_ms=30, broker_id=3, partition=2, leader_epoch=4, role=None, old_hw=None,
             hw=80),                                                                            # 13
    ])
    expect(replica_offsets(ev), [
        ("r", "t", 0, 1, 10, 50, L, 1, 0, 5, 5, 0),
        ("r", "t", 0, 1, 50, 60, L, 1, 0, 5, 10, 1),
        ("r", "t", 0, 1, 60, 70, L, 1, 0, 10, 10, 2),
        ("r", "t", 0, 1, 70, 100, L, 1, 4, 10, 10, 3),
        ("r", "t", 0, 1, 100, 150, "offline", 1, 4, 10, 10, 4),
        ("r", "t", 0, 1, 150, 200, "offline", 1, 2, 7, 7, 5),    # HW 10 -> 7: not above the LEO
        ("r", "t", 0, 1, 200, 300, "offline", 1, 2, 5, 7, 12),
        ("r", "t", 0, 1, 300, None, F_, 2, 2, 6, 7, 6),
        ("r", "t", 1, 2, 10, 20, F_, 1, 0, 8, 8, 7),
        ("r", "t", 1, 2, 20, 150, F_, 1, 4, 8, 8, 8),
        ("r", "t", 1, 2, 150, None, F_, 1, 3, 3, 3, 9),
        ("r", "t", 2, 3, 10, 20, None, 4, None, None, 95, 10),
        ("r", "t", 2, 3, 20, 30, None, 4, 10, None, 90, 11),
        ("r", "t", 2, 3, 30, None, None, 4, 10, 80, 90, 13),
    ], REPLICA_OFFSETS_SCHEMA)


def test_replica_offsets_a_replica_added_back_starts_its_new_log_at_its_leo(events, expect) -> None:
    # A review's shape (nemesis-small seed 8503, t-5 replica 1): retention moved the follower's log start to 53;
    # a reassignment removed the replica (its log deleted, no event of its own) and another added it back
    # with a new, empty log. The new log starts at 0 (Kafka keeps log start <= HW <= LEO), not at the old
    # log's 53; its first log_start_offset_change then reports 0 as the value before it.
    ev = events([
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=1, action="become_follower",
             leader_id=2, partition_epoch=1, replicas=[1, 2], leo=60, hw=60),                  # 0
        dict(event_type="log_start_offset_change", ts_ms=20, broker_id=1, leader_epoch=1, role=F_,
             old_log_start_offset=0, log_start_offset=53),                                      # 1
        dict(event_type="leadership_change", ts_ms=100, broker_id=1, leader_epoch=3, action="become_follower",
             leader_id=2, partition_epoch=5, replicas=[2, 1], leo=0, hw=0),                    # 2
        dict(event_type="append", ts_ms=110, broker_id=1, leader_epoch=3, role=F_, base_offset=0,
             last_offset=69, leo=70),                                                           # 3
        dict(event_type="log_start_offset_change", ts_ms=120, broker_id=1, leader_epoch=3, role=F_,
             old_log_start_offset=0, log_start_offset=62),                                      # 4
        # a leadership change that reports a log ending above the LSO lowers nothing
        dict(event_type="leadership_change", ts_ms=130, broker_id=1, leader_epoch=4, action="become_leader",
             leader_id=1, partition_epoch=6, replicas=[2, 1], leo=70, hw=70),                  # 5
    ])
    expect(replica_offsets(ev), [
        ("r", "t", 0, 1, 10, 20, F_, 1, 0, 60, 60, 0),
        ("r", "t", 0, 1, 20, 100, F_, 1, 53, 60, 60, 1),
        ("r", "t", 0, 1, 100, 110, F_, 3, 0, 0, 0, 2),        # was 53: the deleted log's
        ("r", "t", 0, 1, 110, 120, F_, 3, 0, 0, 70, 3),
        ("r", "t", 0, 1, 120, 130, F_, 3, 62, 0, 70, 4),
        ("r", "t", 0, 1, 130, None, L, 4, 62, 70, 70, 5),
    ], REPLICA_OFFSETS_SCHEMA)


def test_replica_offsets_a_replica_the_assignment_drops_is_removed_until_added_back(events, expect) -> None:
    # A review's shape (nemesis-small seed 101, t-0): a reassignment moved the partition off broker 1, its leader.
    # The controller's election of broker 2 assigns [2, 3]; broker 1 deletes its log when it learns that (no event
    # of its own), so it is no longer "leader, epoch 1" to the end of the data. A stale registration stating the
    # old assignment (an older partition epoch) changes nothing; the broker's crash and restart while removed
    # leave it removed; a later reassignment adds it back with a new log.
    ev = events([
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=1, isr=[1, 2], replicas=[1, 2], leo=5, hw=5),         # 0
        dict(event_type="leadership_change", ts_ms=10, broker_id=2, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=1, replicas=[1, 2], leo=5, hw=5),                    # 1
        dict(event_type="leader_election", ts_ms=100, broker_id=3000, leader_epoch=2, action="clean", leader_id=2,
             partition_epoch=3, isr=[2, 3], replicas=[2, 3]),                                  # 2
        dict(event_type="isr_change", ts_ms=105, broker_id=1, leader_epoch=1, action="shrink", isr_state="committed",
             old_isr=[1, 2], isr=[1], replicas=[1, 2], partition_epoch=2),                     # 3: stale
        dict(event_type="broker_lifecycle", ts_ms=150, broker_id=1, topic=None, partition=None, action="crash"),  # 4
        dict(event_type="broker_lifecycle", ts_ms=160, broker_id=1, topic=None, partition=None,
             action="restart"),                                                                 # 5
        dict(event_type="leadership_change", ts_ms=200, broker_id=1, leader_epoch=3, action="become_follower",
             leader_id=2, partition_epoch=4, replicas=[2, 3, 1], leo=0, hw=0),                 # 6
    ])
    expect(replica_offsets(ev), [
        ("r", "t", 0, 1, 10, 100, L, 1, None, 5, 5, 0),
        ("r", "t", 0, 1, 100, 200, "removed", 1, None, None, None, 2),    # was leader, epoch 1, to the end
        ("r", "t", 0, 1, 200, None, F_, 3, None, 0, 0, 6),
        ("r", "t", 0, 2, 10, None, F_, 1, None, 5, 5, 1),
    ], REPLICA_OFFSETS_SCHEMA)


def test_replica_offsets_event_that_changes_nothing_opens_no_interval(events, expect) -> None:
    ev = events([
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=3, action="become_leader",
             leader_id=1, partition_epoch=1, replicas=[1], leo=4, hw=4),
        # a hw_change to the value in force (e.g. replayed from a checkpoint): same state
        dict(event_type="hw_change", ts_ms=12, broker_id=1, leader_epoch=3, role=L, old_hw=4, hw=4),
        dict(event_type="leadership_change", ts_ms=20, broker_id=1, leader_epoch=4, action="become_follower",
             leader_id=2, partition_epoch=2, replicas=[1, 2], leo=4, hw=4),
    ])
    expect(replica_offsets(ev), [
        ("r", "t", 0, 1, 10, 20, L, 3, None, 4, 4, 0),
        ("r", "t", 0, 1, 20, None, F_, 4, None, 4, 4, 2),
    ], REPLICA_OFFSETS_SCHEMA)


def test_partition_state_intervals_and_flags(events, expect) -> None:
    ev = events([
        dict(event_type="broker_config", ts_ms=0, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "2", "replica.lag.time.max.ms": "30000"}),          # 0
        dict(event_type="leader_election", ts_ms=0, broker_id=0, leader_epoch=1, action="clean", leader_id=1,
             partition_epoch=1, isr=[1, 2, 3], replicas=[1, 2, 3]),                             # 1
        # the leader's registration repeats the election's state (ISR unsorted): no new interval
        dict(event_type="leadership_change", ts_ms=5, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=1, isr=[3, 2, 1], replicas=[1, 2, 3], leo=0, hw=0),  # 2
        # a follower's view carries no ISR: not a source
        dict(event_type="leadership_change", ts_ms=6, broker_id=2, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=1, isr=[], replicas=[1, 2, 3], leo=0, hw=0),         # 3
        # a shrink takes effect when committed, not when proposed
        dict(event_type="isr_change", ts_ms=100, broker_id=1, leader_epoch=1, action="shrink",
             isr_state="proposed", old_isr=[1, 2, 3], isr=[1, 2], reason="follower_lagging"),   # 4
        dict(event_type="isr_change", ts_ms=110, broker_id=1, leader_epoch=1, action="shrink",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2], partition_epoch=2,
             reason="alter_partition"),                                                         # 5
        dict(event_type="isr_change", ts_ms=150, broker_id=1, leader_epoch=1, action="shrink",
             isr_state="committed", old_isr=[1, 2], isr=[1], partition_epoch=3, reason="alter_partition"),  # 6
        # offline election: no leader, which the forward fill must carry (not skip)
        dict(event_type="leader_election", ts_ms=200, broker_id=0, leader_epoch=2, action="offline",
             partition_epoch=4, isr=[1], replicas=[1, 2, 3]),                                   # 7
    ])
    # min.insync.replicas = 2 from broker 1's config; effective = min(2, RF 3) = 2.
    expect(partition_state(ev), [
        # from, to, leader, epoch, pepoch, isr, elr, replicas, isr_size, rf, min, urp, under_min, at_min, offline
        ("r", "t", 0, 0, 110, 1, 1, 1, [1, 2, 3], None, [1, 2, 3], 3, 3, 2, False, False, False, False,
         "leader_election:clean", 1),
        ("r", "t", 0, 110, 150, 1, 1, 2, [1, 2], None, [1, 2, 3], 2, 3, 2, True, False, True, False,
         "isr_change:shrink", 5),
        ("r", "t", 0, 150, 200, 1, 1, 3, [1], None, [1, 2, 3], 1, 3, 2, True, True, False, False,
         "isr_change:shrink", 6),
        ("r", "t", 0, 200, None, None, 2, 4, [1], None, [1, 2, 3], 1, 3, 2, False, False, False, True,
         "leader_election:offline", 7),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_min_isr_defaults_without_config(events, expect) -> None:
    ev = events([
        dict(event_type="leadership_change", ts_ms=5, broker_id=2, leader_epoch=7, action="become_leader",
             leader_id=2, partition_epoch=9, isr=[2], replicas=[2, 1], leo=0, hw=0),
    ])
    # No broker_config: min ISR 1 (the job default) -> ISR {2} is at min ISR, under-replicated (RF 2).
    expect(partition_state(ev), [
        ("r", "t", 0, 5, None, 2, 7, 9, [2], None, [2, 1], 1, 2, 1, True, False, True, False,
         "leadership_change:become_leader", 0),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_min_isr_is_the_topics_override(events, expect) -> None:
    # As Kafka (and the engine) do: a topic's min.insync.replicas overrides the broker's. Topic "a.b" (a dot
    # in its name) has override 1 on broker 1's config; topic "t" none (broker value 2); "u" only on broker 2.
    ev = events([
        dict(event_type="broker_config", ts_ms=0, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "2", "topic.a.b.min.insync.replicas": "1"}),          # 0
        dict(event_type="broker_config", ts_ms=0, broker_id=2, topic=None, partition=None,
             config={"min.insync.replicas": "2", "topic.u.min.insync.replicas": "3"}),            # 1
        *[dict(event_type="leader_election", ts_ms=0, broker_id=0, topic=topic, leader_epoch=1, action="clean",
               leader_id=1, partition_epoch=1, isr=[1, 2], replicas=[1, 2, 3]) for topic in ("a.b", "t", "u")],
    ])
    expect(partition_state(ev), [
        ("r", "a.b", 0, 0, None, 1, 1, 1, [1, 2], None, [1, 2, 3], 2, 3, 1, True, False, False, False,
         "leader_election:clean", 2),
        ("r", "t", 0, 0, None, 1, 1, 1, [1, 2], None, [1, 2, 3], 2, 3, 2, True, False, True, False,
         "leader_election:clean", 3),
        # the leader (broker 1) names no override for "u": broker 2's, the run's, applies
        ("r", "u", 0, 0, None, 1, 1, 1, [1, 2], None, [1, 2, 3], 2, 3, 3, True, True, False, False,
         "leader_election:clean", 4),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_min_isr_is_the_one_in_force_then(events, expect) -> None:
    # Broker 1 restarts at 500 with other settings: min.insync.replicas 2 -> 3, topic v's override 1 -> 2. Each
    # interval uses the leader's config in force when it opened, not its last of the run.
    ev = events([
        dict(event_type="broker_config", ts_ms=0, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "2", "topic.v.min.insync.replicas": "1"}),            # 0
        *[dict(event_type="leader_election", ts_ms=0, broker_id=0, topic=topic, leader_epoch=1, action="clean",
               leader_id=1, partition_epoch=1, isr=[1, 2], replicas=[1, 2, 3]) for topic in ("t", "v")],  # 1, 2
        dict(event_type="broker_config", ts_ms=500, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "3", "topic.v.min.insync.replicas": "2"}),            # 3
        *[dict(event_type="leader_election", ts_ms=600, broker_id=0, topic=topic, leader_epoch=2, action="clean",
               leader_id=1, partition_epoch=2, isr=[1, 2], replicas=[1, 2, 3]) for topic in ("t", "v")],  # 4, 5
    ])
    expect(partition_state(ev), [
        ("r", "t", 0, 0, 600, 1, 1, 1, [1, 2], None, [1, 2, 3], 2, 3, 2, True, False, True, False,
         "leader_election:clean", 1),
        ("r", "t", 0, 600, None, 1, 2, 2, [1, 2], None, [1, 2, 3], 2, 3, 3, True, True, False, False,
         "leader_election:clean", 4),
        ("r", "v", 0, 0, 600, 1, 1, 1, [1, 2], None, [1, 2, 3], 2, 3, 1, True, False, False, False,
         "leader_election:clean", 2),
        ("r", "v", 0, 600, None, 1, 2, 2, [1, 2], None, [1, 2, 3], 2, 3, 2, True, False, True, False,
         "leader_election:clean", 5),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_an_unreadable_min_isr_is_not_a_setting(events, expect) -> None:
    # A config value that is not a number (a hand-edited or foreign log) names no setting: the default applies.
    ev = events([
        dict(event_type="broker_config", ts_ms=0, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "two", "topic.t.min.insync.replicas": "2x"}),
        dict(event_type="leader_election", ts_ms=0, broker_id=0, leader_epoch=1, action="clean", leader_id=1,
             partition_epoch=1, isr=[1], replicas=[1, 2, 3]),
    ])
    expect(partition_state(ev), [
        ("r", "t", 0, 0, None, 1, 1, 1, [1], None, [1, 2, 3], 1, 3, 1, True, False, True, False,
         "leader_election:clean", 1),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_a_reassignment_is_not_under_replicated_for_the_replicas_it_adds(events, expect) -> None:
    # Moving replica 3 to 4 (KIP-455): while 4 is being added, the assignment is [1, 2, 4, 3] and Kafka's
    # replication factor leaves 4 out, so an ISR of 3 is fully replicated; min ISR is capped at all 4.
    ev = events([
        dict(event_type="broker_config", ts_ms=0, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "4"}),                                                        # 0
        dict(event_type="leader_election", ts_ms=0, broker_id=0, leader_epoch=1, action="clean", leader_id=1,
             partition_epoch=1, isr=[1, 2, 3], replicas=[1, 2, 3]),                                     # 1
        dict(event_type="leadership_change", ts_ms=100, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=2, isr=[1, 2, 3], replicas=[1, 2, 4, 3], adding_replicas=[4],
             removing_replicas=[3], leo=0, hw=0),                                                        # 2
        dict(event_type="isr_change", ts_ms=200, broker_id=1, leader_epoch=1, action="expand",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2, 3, 4], partition_epoch=3,
             reason="alter_partition"),                                                                  # 3
        dict(event_type="leadership_change", ts_ms=300, broker_id=1, leader_epoch=2, action="become_leader",
             leader_id=1, partition_epoch=4, isr=[1, 2, 4], replicas=[1, 2, 4], leo=0, hw=0),            # 4
    ])
    expect(partition_state(ev), [
        ("r", "t", 0, 0, 100, 1, 1, 1, [1, 2, 3], None, [1, 2, 3], 3, 3, 3, False, False, True, False,
         "leader_election:clean", 1),
        ("r", "t", 0, 100, 200, 1, 1, 2, [1, 2, 3], None, [1, 2, 4, 3], 3, 3, 4, False, True, False, False,
         "leadership_change:become_leader", 2),
        ("r", "t", 0, 200, 300, 1, 1, 3, [1, 2, 3, 4], None, [1, 2, 4, 3], 4, 3, 4, False, False, True, False,
         "isr_change:expand", 3),
        ("r", "t", 0, 300, None, 1, 2, 4, [1, 2, 4], None, [1, 2, 4], 3, 3, 3, False, False, True, False,
         "leadership_change:become_leader", 4),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_takes_the_assignment_a_sitting_leader_applies_in_its_epoch(events, expect) -> None:
    # The same move under KRaft's epochs: widening the assignment keeps leader epoch 1, so the leader's registration
    # is a committed update (leader_and_isr) that states it; the completion removes 3 and bumps the epoch; a later
    # reorder of the same replicas keeps epoch 2 again. An update that does not state the replicas (an AlterPartition
    # answer) leaves the assignment as it was.
    ev = events([
        dict(event_type="broker_config", ts_ms=0, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "4"}),                                                        # 0
        dict(event_type="leader_election", ts_ms=0, broker_id=0, leader_epoch=1, action="clean", leader_id=1,
             partition_epoch=1, isr=[1, 2, 3], replicas=[1, 2, 3]),                                     # 1
        dict(event_type="isr_change", ts_ms=100, broker_id=1, leader_epoch=1, action="update",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2, 3], partition_epoch=2, reason="leader_and_isr",
             replicas=[1, 2, 4, 3], adding_replicas=[4], removing_replicas=[3]),                         # 2
        dict(event_type="isr_change", ts_ms=200, broker_id=1, leader_epoch=1, action="expand",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2, 3, 4], partition_epoch=3,
             reason="alter_partition"),                                                                  # 3
        dict(event_type="leadership_change", ts_ms=300, broker_id=1, leader_epoch=2, action="become_leader",
             leader_id=1, partition_epoch=4, isr=[1, 2, 4], replicas=[1, 2, 4], leo=0, hw=0),            # 4
        dict(event_type="isr_change", ts_ms=400, broker_id=1, leader_epoch=2, action="update",
             isr_state="committed", old_isr=[1, 2, 4], isr=[1, 2, 4], partition_epoch=5, reason="leader_and_isr",
             replicas=[4, 1, 2]),                                                                        # 5
    ])
    expect(partition_state(ev), [
        ("r", "t", 0, 0, 100, 1, 1, 1, [1, 2, 3], None, [1, 2, 3], 3, 3, 3, False, False, True, False,
         "leader_election:clean", 1),
        ("r", "t", 0, 100, 200, 1, 1, 2, [1, 2, 3], None, [1, 2, 4, 3], 3, 3, 4, False, True, False, False,
         "isr_change:update", 2),
        ("r", "t", 0, 200, 300, 1, 1, 3, [1, 2, 3, 4], None, [1, 2, 4, 3], 4, 3, 4, False, False, True, False,
         "isr_change:expand", 3),
        ("r", "t", 0, 300, 400, 1, 2, 4, [1, 2, 4], None, [1, 2, 4], 3, 3, 3, False, False, True, False,
         "leadership_change:become_leader", 4),
        ("r", "t", 0, 400, None, 1, 2, 5, [1, 2, 4], None, [4, 1, 2], 3, 3, 3, False, False, True, False,
         "isr_change:update", 5),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_takes_the_assignment_a_new_follower_learns_first(events, expect) -> None:
    # Without ELR the controller's record of a reassignment step is no event: replica 4, being added at partition
    # epoch 3, registers as a follower before the leader learns it. Its registration states the assignment, nothing
    # else (the partition epoch in force stays the one whose ISR is known): the leader's later commit of the shrink
    # before it (epoch 2) still sets the ISR, the leader's own registration of epoch 3 states the epoch, and a late
    # follower registration of epoch 1 changes nothing; nor does one repeating the assignment known.
    ev = events([
        dict(event_type="leader_election", ts_ms=0, broker_id=0, leader_epoch=1, action="clean", leader_id=1,
             partition_epoch=1, isr=[1, 2, 3], replicas=[1, 2, 3]),                                     # 0
        dict(event_type="leadership_change", ts_ms=100, broker_id=4, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=3, isr=[], replicas=[1, 2, 4, 3], adding_replicas=[4],
             removing_replicas=[3], leo=0, hw=0),                                                        # 1
        dict(event_type="isr_change", ts_ms=120, broker_id=1, leader_epoch=1, action="shrink",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2], partition_epoch=2,
             reason="alter_partition"),                                                                  # 2
        dict(event_type="isr_change", ts_ms=150, broker_id=1, leader_epoch=1, action="update",
             isr_state="committed", old_isr=[1, 2], isr=[1, 2], partition_epoch=3, reason="leader_and_isr",
             replicas=[1, 2, 4, 3], adding_replicas=[4], removing_replicas=[3]),                         # 3
        dict(event_type="leadership_change", ts_ms=160, broker_id=2, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=1, isr=[], replicas=[1, 2, 3], leo=0, hw=0),                   # 4: stale
        # the other new follower's registration, at the ms of the shrink: no news, so not the interval's cause
        dict(event_type="leadership_change", ts_ms=120, broker_id=3, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=3, isr=[], replicas=[1, 2, 4, 3], adding_replicas=[4],
             removing_replicas=[3], leo=0, hw=0),                                                        # 5
        # a restarted follower learning a later epoch (4) of the same assignment: its ISR unknown, so no news
        dict(event_type="leadership_change", ts_ms=150, broker_id=2, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=4, isr=[], replicas=[1, 2, 4, 3], adding_replicas=[4],
             removing_replicas=[3], leo=0, hw=0),                                                        # 6
    ])
    expect(partition_state(ev), [
        ("r", "t", 0, 0, 100, 1, 1, 1, [1, 2, 3], None, [1, 2, 3], 3, 3, 1, False, False, False, False,
         "leader_election:clean", 0),
        ("r", "t", 0, 100, 120, 1, 1, 1, [1, 2, 3], None, [1, 2, 4, 3], 3, 3, 1, False, False, False, False,
         "leadership_change:become_follower", 1),
        ("r", "t", 0, 120, 150, 1, 1, 2, [1, 2], None, [1, 2, 4, 3], 2, 3, 1, True, False, False, False,
         "isr_change:shrink", 2),
        ("r", "t", 0, 150, None, 1, 1, 3, [1, 2], None, [1, 2, 4, 3], 2, 3, 1, True, False, False, False,
         "isr_change:update", 3),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_follows_the_eligible_leader_replicas(events, expect) -> None:
    # A cluster with ELR (KIP-966), min ISR 2: the controller's partition changes state the ISR and the ELR between
    # elections; the leader's own commit of a change the controller already stated opens no interval, and its late
    # commit of an older partition epoch changes nothing.
    ev = events([
        dict(event_type="broker_config", ts_ms=0, broker_id=1, topic=None, partition=None,
             config={"min.insync.replicas": "2"}),                                                         # 0
        dict(event_type="leader_election", ts_ms=0, broker_id=0, leader_epoch=0, action="clean", leader_id=1,
             partition_epoch=0, isr=[1, 2, 3], elr=[], replicas=[1, 2, 3], reason="topic_creation"),     # 1
        dict(event_type="partition_change", ts_ms=100, broker_id=0, leader_epoch=0, leader_id=1,
             partition_epoch=1, isr=[1, 2], elr=[], replicas=[1, 2, 3], reason="alter_partition"),       # 2
        dict(event_type="partition_change", ts_ms=200, broker_id=0, leader_epoch=0, leader_id=1,
             partition_epoch=2, isr=[1], elr=[2], replicas=[1, 2, 3], reason="alter_partition"),         # 3
        dict(event_type="isr_change", ts_ms=205, broker_id=1, leader_epoch=0, action="shrink",
             isr_state="committed", old_isr=[1, 2], isr=[1], partition_epoch=2,
             reason="alter_partition"),                                                                    # 4
        dict(event_type="isr_change", ts_ms=210, broker_id=1, leader_epoch=0, action="shrink",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2], partition_epoch=1,
             reason="alter_partition"),                                                                    # 5: stale
        # the leader fenced: broker 2 from the ELR, the old leader eligible in its place
        dict(event_type="leader_election", ts_ms=300, broker_id=0, leader_epoch=1, action="elr", leader_id=2,
             partition_epoch=3, isr=[2], elr=[1], replicas=[1, 2, 3], reason="session_timeout"),         # 6
        dict(event_type="partition_change", ts_ms=400, broker_id=0, leader_epoch=1, leader_id=2,
             partition_epoch=4, isr=[2, 3], elr=[], replicas=[1, 2, 3], reason="alter_partition"),       # 7
    ])
    expect(partition_state(ev), [
        # from, to, leader, epoch, pepoch, isr, elr, replicas, isr_size, rf, min, urp, under_min, at_min, offline
        ("r", "t", 0, 0, 100, 1, 0, 0, [1, 2, 3], [], [1, 2, 3], 3, 3, 2, False, False, False, False,
         "leader_election:clean", 1),
        ("r", "t", 0, 100, 200, 1, 0, 1, [1, 2], [], [1, 2, 3], 2, 3, 2, True, False, True, False,
         "partition_change", 2),
        ("r", "t", 0, 200, 300, 1, 0, 2, [1], [2], [1, 2, 3], 1, 3, 2, True, True, False, False,
         "partition_change", 3),
        ("r", "t", 0, 300, 400, 2, 1, 3, [2], [1], [1, 2, 3], 1, 3, 2, True, True, False, False,
         "leader_election:elr", 6),
        ("r", "t", 0, 400, None, 2, 1, 4, [2, 3], [], [1, 2, 3], 2, 3, 2, True, False, True, False,
         "partition_change", 7),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_an_isr_change_no_controller_line_shows_leaves_the_elr_unknown(events) -> None:
    # From logs: the controller's line of an election from the ELR states it ([3]); broker 2's later commit of ISR
    # [2, 3] is the only trace of the next change, and Kafka moves the ELR with the ISR (3 rejoined, and min ISR is
    # met): the ELR is unknown from then on, not still [3]. The leader's registration repeating the election's ISR
    # changes nothing.
    ev = events([
        dict(event_type="leader_election", ts_ms=10, broker_id=3000, leader_epoch=5, action="elr", leader_id=2,
             partition_epoch=9, isr=[2], elr=[3]),
        dict(event_type="leadership_change", ts_ms=11, broker_id=2, leader_epoch=5, action="become_leader",
             leader_id=2, partition_epoch=9, isr=[2], replicas=[1, 2, 3], leo=0, hw=0),
        dict(event_type="isr_change", ts_ms=20, broker_id=2, leader_epoch=5, action="expand", isr_state="committed",
             old_isr=[2], isr=[2, 3], partition_epoch=10),
    ])
    expected = ev.sparkSession.createDataFrame([(10, [2], [3]), (11, [2], [3]), (20, [2, 3], None)],
                                               "valid_from_ms long, isr array<int>, elr array<int>")
    assert_df_equality(partition_state(ev).select("valid_from_ms", "isr", "elr"), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_partition_state_ignores_a_stale_state(events, expect) -> None:
    # A deposed leader's late commit (partition epoch 2 after the election of epoch 3) and a late registration
    # of an older leader epoch change nothing: Kafka fences them by their epochs.
    ev = events([
        dict(event_type="leader_election", ts_ms=0, broker_id=0, leader_epoch=1, action="clean", leader_id=1,
             partition_epoch=1, isr=[1, 2, 3], replicas=[1, 2, 3]),                             # 0
        dict(event_type="leader_election", ts_ms=100, broker_id=0, leader_epoch=2, action="clean", leader_id=2,
             partition_epoch=3, isr=[2, 3], replicas=[1, 2, 3]),                                # 1
        dict(event_type="isr_change", ts_ms=110, broker_id=1, leader_epoch=1, action="expand",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2, 3], partition_epoch=2,
             reason="alter_partition"),                                                         # 2: stale
        dict(event_type="leadership_change", ts_ms=120, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=1, isr=[1], replicas=[1, 2, 3], leo=0, hw=0),         # 3: stale
        dict(event_type="isr_change", ts_ms=200, broker_id=2, leader_epoch=2, action="shrink",
             isr_state="committed", old_isr=[2, 3], isr=[2], partition_epoch=4, reason="alter_partition"),  # 4
    ])
    expect(partition_state(ev), [
        ("r", "t", 0, 0, 100, 1, 1, 1, [1, 2, 3], None, [1, 2, 3], 3, 3, 1, False, False, False, False,
         "leader_election:clean", 0),
        ("r", "t", 0, 100, 200, 2, 2, 3, [2, 3], None, [1, 2, 3], 2, 3, 1, True, False, False, False,
         "leader_election:clean", 1),
        ("r", "t", 0, 200, None, 2, 2, 4, [2], None, [1, 2, 3], 1, 3, 1, True, False, True, False,
         "isr_change:shrink", 4),
    ], PARTITION_STATE_SCHEMA)


def test_partition_state_leader_not_known_yet_is_not_offline(events) -> None:
    # A broker log cut mid-run may state an ISR before any event names the leader: unknown, not offline.
    ev = events([
        dict(event_type="isr_change", ts_ms=10, broker_id=1, leader_epoch=1, action="shrink", isr_state="committed",
             old_isr=[1, 2, 3], isr=[1, 2], partition_epoch=5, reason="alter_partition"),
        dict(event_type="leader_election", ts_ms=20, broker_id=0, leader_epoch=2, action="clean", leader_id=1,
             partition_epoch=6, isr=[1, 2], replicas=[1, 2, 3]),
        dict(event_type="leader_election", ts_ms=30, broker_id=0, leader_epoch=3, action="offline",
             partition_epoch=7, isr=[1], replicas=[1, 2, 3]),
    ])
    expected = ev.sparkSession.createDataFrame([(10, None, None), (20, 1, False), (30, None, True)],
                                               "valid_from_ms long, leader_id int, offline boolean")
    assert_df_equality(partition_state(ev).select("valid_from_ms", "leader_id", "offline"), expected,
                       ignore_row_order=True, ignore_nullable=True)


def test_partition_state_an_isr_no_event_stated_is_unknown_not_empty(events) -> None:
    # A 2.0-2.4 leader line prints leader and epoch only: until an ISR line, the ISR and the flags that compare
    # it are unknown (they read as under min ISR for the whole run of such a log before). Min ISR 1 (default).
    ev = events([
        dict(event_type="leadership_change", ts_ms=10, broker_id=1, leader_epoch=3, action="become_leader",
             leader_id=1),
        dict(event_type="isr_change", ts_ms=20, broker_id=1, leader_epoch=3, action="shrink", isr_state="committed",
             old_isr=[1, 2], isr=[1], partition_epoch=5),
    ])
    expected = ev.sparkSession.createDataFrame(
        [(10, None, None, None, None), (20, 1, None, False, True)],
        "valid_from_ms long, isr_size int, under_replicated boolean, under_min_isr boolean, at_min_isr boolean")
    actual = partition_state(ev).select("valid_from_ms", "isr_size", "under_replicated", "under_min_isr", "at_min_isr")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_isr_changes_a_commit_learnt_from_metadata_closes_the_proposal(events, expect) -> None:
    # KRaft: the leader replays the controller's PartitionChangeRecord; when it arrives before (or instead of)
    # the AlterPartition answer, the engine reports it as an `update`, committed. To the proposed ISR, it is
    # that proposal's commit; to another ISR (a fenced broker removed meanwhile) it is a change of its own.
    ev = events([
        dict(event_type="isr_change", ts_ms=100, broker_id=1, leader_epoch=1, action="shrink", isr_state="proposed",
             old_isr=[1, 2, 3], isr=[1, 2], reason="follower_lagging", error="NONE"),                 # 0
        dict(event_type="isr_change", ts_ms=104, broker_id=1, leader_epoch=1, action="update",
             isr_state="committed", old_isr=[1, 2, 3], isr=[2, 1], partition_epoch=2, reason="leader_and_isr",
             error="NONE"),                                                                             # 1
        dict(event_type="isr_change", ts_ms=200, broker_id=1, leader_epoch=1, action="expand", isr_state="proposed",
             old_isr=[1, 2], isr=[1, 2, 3], reason="follower_caught_up", error="NONE"),               # 2
        dict(event_type="isr_change", ts_ms=205, broker_id=1, leader_epoch=1, action="update",
             isr_state="committed", old_isr=[1, 2], isr=[1], partition_epoch=3, reason="leader_and_isr",
             error="NONE"),                                                                             # 3
    ])
    expect(isr_changes(ev), [
        ("r", "t", 0, 1, 1, "shrink", "follower_lagging", [1, 2, 3], [1, 2], [3], [], None,
         100, 0, "committed", 104, 1, [1, 2], 2, 0, None, None, 4),
        # abandoned: the controller removed 2 instead; that update is its own change, and supersedes it
        ("r", "t", 0, 1, 1, "expand", "follower_caught_up", [1, 2], [1, 2, 3], [], [3], None,
         200, 2, "superseded", 205, 3, None, None, 0, None, None, 5),
        ("r", "t", 0, 1, 1, "update", "leader_and_isr", [1, 2], [1], [2], [], None,
         205, 3, "committed", 205, 3, [1], 3, 0, None, None, 0),
    ], ISR_CHANGES_SCHEMA)


def test_isr_changes_an_update_in_a_later_epoch_is_not_an_old_proposals_commit(events, expect) -> None:
    # Broker 1's epoch-1 proposal is never answered (it lost the leadership); leading again in epoch 3, an
    # update to the same ISR is the controller's change of that epoch, not the old proposal's commit.
    ev = events([
        dict(event_type="isr_change", ts_ms=100, broker_id=1, leader_epoch=1, action="shrink", isr_state="proposed",
             old_isr=[1, 2, 3], isr=[1, 2], reason="follower_lagging", error="NONE"),                 # 0
        dict(event_type="isr_change", ts_ms=9000, broker_id=1, leader_epoch=3, action="update",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2], partition_epoch=6, reason="leader_and_isr",
             error="NONE"),                                                                             # 1
    ])
    expect(isr_changes(ev), [
        # superseded by the next change the leader applied (its leadership changes are not in this stream)
        ("r", "t", 0, 1, 1, "shrink", "follower_lagging", [1, 2, 3], [1, 2], [3], [], None,
         100, 0, "superseded", 9000, 1, None, None, 0, None, None, 8900),
        ("r", "t", 0, 1, 3, "update", "leader_and_isr", [1, 2, 3], [1, 2], [3], [], None,
         9000, 1, "committed", 9000, 1, [1, 2], 6, 0, None, None, 0),
    ], ISR_CHANGES_SCHEMA)


def test_isr_changes_a_proposal_without_answer_is_superseded_where_the_leader_moves_on(events, expect) -> None:
    # A review's shape (seed 8204 t-0: proposal 8091, then become_leader 8092): Kafka discards a pending proposal
    # when the leader's state is replaced, and ignores a later answer. Only a proposal nothing followed is pending.
    ev = events([
        dict(event_type="isr_change", ts_ms=100, broker_id=1, leader_epoch=1, action="shrink", isr_state="proposed",
             old_isr=[1, 2, 3], isr=[1, 2], reason="follower_lagging", error="NONE"),                 # 0
        # neither another partition's leadership change nor another broker's crash moves broker 1's state
        dict(event_type="leadership_change", ts_ms=120, broker_id=1, partition=1, leader_epoch=4,
             action="become_follower", leader_id=2, partition_epoch=4, replicas=[1, 2], leo=0, hw=0),  # 1
        dict(event_type="broker_lifecycle", ts_ms=130, broker_id=3, topic=None, partition=None, action="crash"),  # 2
        dict(event_type="leadership_change", ts_ms=150, broker_id=1, leader_epoch=2, action="become_follower",
             leader_id=2, partition_epoch=3, replicas=[1, 2, 3], leo=9, hw=9),                # 3: supersedes 0
        dict(event_type="isr_change", ts_ms=300, broker_id=2, leader_epoch=2, action="shrink", isr_state="proposed",
             old_isr=[1, 2, 3], isr=[1, 2], reason="follower_lagging", error="NONE"),                 # 4
        dict(event_type="broker_lifecycle", ts_ms=350, broker_id=2, topic=None, partition=None, action="crash"),  # 5
        dict(event_type="isr_change", ts_ms=500, broker_id=2, leader_epoch=3, action="expand", isr_state="proposed",
             old_isr=[1, 2], isr=[1, 2, 3], reason="follower_caught_up", error="NONE"),               # 6
    ])
    expect(isr_changes(ev), [
        ("r", "t", 0, 1, 1, "shrink", "follower_lagging", [1, 2, 3], [1, 2], [3], [], None,
         100, 0, "superseded", 150, 3, None, None, 0, None, None, 50),
        ("r", "t", 0, 2, 2, "shrink", "follower_lagging", [1, 2, 3], [1, 2], [3], [], None,
         300, 4, "superseded", 350, 5, None, None, 0, None, None, 50),
        ("r", "t", 0, 2, 3, "expand", "follower_caught_up", [1, 2], [1, 2, 3], [], [3], None,
         500, 6, "pending", None, None, None, None, 0, None, None, None),
    ], ISR_CHANGES_SCHEMA)


def test_isr_changes_join_proposal_and_outcome(events, expect) -> None:
    oos1 = [{"replica_id": 3, "leo": 10, "last_caught_up_time_ms": 50}]
    oos2 = [{"replica_id": 3, "leo": 20, "last_caught_up_time_ms": 300}]
    ev = events([
        dict(event_type="isr_change", ts_ms=100, broker_id=1, leader_epoch=1, action="shrink", isr_state="proposed",
             old_isr=[1, 2, 3], isr=[1, 2], reason="follower_lagging", error="NONE", out_of_sync_replicas=oos1),
        dict(event_type="isr_change", ts_ms=110, broker_id=1, leader_epoch=1, action="shrink",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2], partition_epoch=2, reason="alter_partition",
             error="NONE"),
        dict(event_type="isr_change", ts_ms=200, broker_id=1, leader_epoch=1, action="expand", isr_state="proposed",
             old_isr=[1, 2], isr=[1, 2, 3], reason="follower_caught_up", error="NONE"),
        dict(event_type="isr_change", ts_ms=210, broker_id=1, leader_epoch=1, action="expand", isr_state="rejected",
             old_isr=[1, 2], isr=[1, 2, 3], reason="retry", error="OPERATION_NOT_ATTEMPTED"),
        dict(event_type="isr_change", ts_ms=230, broker_id=1, leader_epoch=1, action="expand",
             isr_state="committed", old_isr=[1, 2], isr=[3, 1, 2], partition_epoch=3, reason="alter_partition",
             error="NONE"),
        dict(event_type="isr_change", ts_ms=300, broker_id=1, leader_epoch=1, action="update",
             isr_state="committed", old_isr=[1, 2, 3], isr=[1, 3], partition_epoch=4, reason="leader_and_isr",
             error="NONE"),
        dict(event_type="isr_change", ts_ms=400, broker_id=1, leader_epoch=1, action="shrink", isr_state="proposed",
             old_isr=[1, 3], isr=[1], reason="follower_lagging", error="NONE", out_of_sync_replicas=oos2),
    ])
    expect(isr_changes(ev), [
        ("r", "t", 0, 1, 1, "shrink", "follower_lagging", [1, 2, 3], [1, 2], [3], [], [(3, 10, 50)],
         100, 0, "committed", 110, 1, [1, 2], 2, 0, None, None, 10),
        # one retry rejection, then committed 30 ms after the proposal
        ("r", "t", 0, 1, 1, "expand", "follower_caught_up", [1, 2], [1, 2, 3], [], [3], None,
         200, 2, "committed", 230, 4, [1, 2, 3], 3, 1, "OPERATION_NOT_ATTEMPTED", "retry", 30),
        # LeaderAndIsr replaced the ISR: its own change, proposal and commit are the same event
        ("r", "t", 0, 1, 1, "update", "leader_and_isr", [1, 2, 3], [1, 3], [2], [], None,
         300, 5, "committed", 300, 5, [1, 3], 4, 0, None, None, 0),
        # no answer yet at the end of the data
        ("r", "t", 0, 1, 1, "shrink", "follower_lagging", [1, 3], [1], [3], [], [(3, 20, 300)],
         400, 6, "pending", None, None, None, None, 0, None, None, None),
    ], ISR_CHANGES_SCHEMA)
