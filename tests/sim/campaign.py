"""A long seeded fault campaign outside the test suite: `python -m tests.sim.campaign --seeds 5000-6000`.

Each seed runs `test_fault_campaign.varied_scenario(seed)` (3-5 brokers, 1-4 partitions, one or two fetchers,
diverging-epoch or leader-epoch truncation, reassignments in every other run) and, with `--wide`, more drawn
from the seed: size-based retention, unclean leader election allowed, min.insync.replicas 1, 5+ brokers with 6
or 10 partitions, 10-30 virtual seconds; with `--deep` also the workload and protocol limits (replication
factor 2 or 4, multi-record batches, small fetch size limits, more message loss, acks=0, a second topic with
its own min ISR and unclean setting); with `--correlated` the nemesis of `--deep` also crashes two brokers'
processes at once; with `--overlapping` its faults also overlap (process crashes only), and with
`--reassigning` the nemesis also draws reassignments among them (with `--throttled`, each throttled at a drawn
replication quota); with `--power` (alone or with `--reassigning` / `--throttled`)
those crashes may also be power failures, which lose committed records when they overlap: a partition's checker errors
from the election of a replica that a power failure left below the partition's HW (or from an older epoch's HW
passing it afterwards) are explained (`power_lossy`), and so is an ISR member lacking records its power failure
took (`power_lost_member`),
and the simulator audit's losses and divergences are not judged. Every run is judged by
the reference checker and by the simulator tests' own audit (`tests.sim.audit`); a run is reported when either
finds an error (warnings, which an unclean election or a lost page cache explain, are not). Checker errors
that are instances of a known finding faithful to Kafka (`tests.sim.known_findings`: the ISR expansion race,
the erased epoch boundary) are listed as known and do not count as reported. Campaigns like this found the
bugs pinned in `test_restart_registration.py`, `test_reassign_back.py`, the final-leader case of the audit
tests and the arrival-time case of `delayed_fetch_bound` (`--seeds 21623-21623 --wide` before schema 1.2) and
`test_shutdown_before_registration.py` (`--seeds 70679-70679 --wide`).
Exit status: 0 when no run was reported, 1 otherwise.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from replication_core.checker.violation import Violation
from replication_core.sim.cli import max_network_delay_ms
from replication_core.sim.cluster import RunStats
from replication_core.sim.scenario import NemesisSpec, Scenario
from tests.sim.audit import audit
from tests.sim.helpers import check, run
from tests.sim.known_findings import known_finding
from tests.sim.test_fault_campaign import varied_scenario


def wide_scenario(seed: int) -> Scenario:
    """`varied_scenario(seed)` with retention, unclean elections, min ISR 1 and larger clusters drawn too."""
    draw = random.Random(seed * 131 + 3)
    sc = varied_scenario(seed)
    if draw.random() < 0.5:
        retention, interval = draw.choice([3000, 8000]), draw.choice([500, 2000])
        # The segment size has a generator of its own, so the draws after this one stay those of the seed.
        sc = sc.with_retention(retention, random.Random(seed * 61 + 5).choice([1000, 2000]), interval)
    cfg, topic = sc.broker_config, sc.topics[0]
    if draw.random() < 0.3:
        topic = replace(topic, config={**topic.config, "unclean.leader.election.enable": "true"})
    if draw.random() < 0.3:
        cfg = replace(cfg, min_insync_replicas=1)
    if draw.random() < 0.3:
        sc = replace(sc, cluster=replace(sc.cluster, brokers=max(sc.cluster.brokers, 5)))
        topic = replace(topic, partitions=draw.choice([6, 10]))
    return replace(sc, broker_config=cfg, topics=(topic,), duration_ms=draw.choice([10000, 20000, 30000]))


def deep_scenario(seed: int) -> Scenario:
    """`wide_scenario(seed)` with the workload and protocol limits drawn too: replication factor 2 or 4,
    multi-record batches, small `replica.fetch.max.bytes` / `replica.fetch.response.max.bytes` (partial
    fetches whose byte range ends inside a batch), more message loss, acks=0 producers, and a second topic with its
    own `min.insync.replicas` and unclean setting."""
    draw = random.Random(seed * 977 + 11)
    sc = wide_scenario(seed)
    cfg, topic = sc.broker_config, sc.topics[0]
    rf = draw.choice([2, 3, 3, 4])
    brokers = max(sc.cluster.brokers, rf)
    topic = replace(topic, replication_factor=rf)
    cfg = replace(cfg, replica_fetch_max_bytes=draw.choice([cfg.replica_fetch_max_bytes, 400, 1500]),
                  replica_fetch_response_max_bytes=draw.choice([cfg.replica_fetch_response_max_bytes, 1000, 4000]))
    second = replace(topic, name="u", partitions=draw.choice([1, 2]), replication_factor=draw.choice([2, 3]),
                     config={"min.insync.replicas": str(draw.choice([1, 2, 3])),
                             "unclean.leader.election.enable": draw.choice(["true", "false"])})
    producers = tuple(replace(p, records_per_batch=draw.choice([1, 3, 10]),
                              acks=draw.choice([p.acks, p.acks, 0])) for p in sc.producers)
    producers += (replace(producers[0], topic="u", acks=-1, records_per_batch=draw.choice([1, 5])),)
    network = replace(sc.network, loss=draw.choice([sc.network.loss, 0.0, 0.05]))
    return replace(sc, broker_config=cfg, topics=(topic, second), producers=producers, network=network,
                   cluster=replace(sc.cluster, brokers=brokers))


def _with_nemesis(sc: Scenario, change: Callable[[NemesisSpec], NemesisSpec]) -> Scenario:
    """`sc` with `change` applied to its nemesis; a scenario without one is returned as it is."""
    return sc if sc.nemesis is None else replace(sc, nemesis=change(sc.nemesis))


def correlated_scenario(seed: int) -> Scenario:
    """`deep_scenario(seed)` whose nemesis also crashes two brokers' processes at once (`correlated_crash`):
    with the page cache kept, replication still promises that no acknowledged write is lost without an
    unclean election, even when every replica of a partition is down for a while."""
    sc = deep_scenario(seed)
    return _with_nemesis(sc, lambda n: replace(n, faults=(*n.faults, "correlated_crash")))


def overlapping_scenario(seed: int) -> Scenario:
    """`correlated_scenario(seed)` whose nemesis overlaps its faults (`NemesisSpec.overlap`): each starts
    200-900 virtual ms after the previous one, undone or not, without waiting for a healthy cluster, so a
    partition meets a crash, a pause the last ISR member, a controlled shutdown a broker cut off from the
    controller. Process crashes only, so every acknowledged acks=all write must still survive unless the topic
    allows the loss."""
    sc = correlated_scenario(seed)
    return _with_nemesis(sc, lambda n: replace(n, overlap=True, crash_modes=("process",)))


def reassigning_scenario(seed: int) -> Scenario:
    """`overlapping_scenario(seed)` whose nemesis also draws reassignments (`reassign`): partitions move between
    brokers, back onto brokers they left and over reassignments still in progress, while crashes, pauses,
    partitions and controlled shutdowns overlap them. Process crashes only, as `overlapping_scenario`."""
    sc = overlapping_scenario(seed)
    return _with_nemesis(sc, lambda n: replace(n, faults=(*n.faults, "reassign")))


THROTTLE_RATES = (500, 3000, 30000)
"""Bytes per second: below the run's produce rate per partition (the moved replica cannot catch up while
throttled), near it, and well above it."""


def throttled_scenario(seed: int) -> Scenario:
    """`reassigning_scenario(seed)` whose drawn reassignments are throttled (`nemesis.throttle_rates`): the
    replication quotas of the leaders and the added followers hold the moved replicas back while the other
    faults go on."""
    return with_throttles(reassigning_scenario(seed))


def power_throttled_scenario(seed: int) -> Scenario:
    """`throttled_scenario(seed)` whose crashes may also be power losses (`--throttled --power`)."""
    return with_throttles(power_reassigning_scenario(seed))


def with_throttles(sc: Scenario) -> Scenario:
    """`sc` whose nemesis throttles each reassignment it draws at one of `THROTTLE_RATES`."""
    return _with_nemesis(sc, lambda n: replace(n, throttle_rates=THROTTLE_RATES))


def power_scenario(seed: int) -> Scenario:
    """`overlapping_scenario(seed)` whose crashes may also be power losses (unflushed data gone): overlapping
    ones can lose every copy of a write, which replication does not promise to survive (`problems_in` then
    explains the partition's errors from `power_lossy` on)."""
    return with_power_crashes(overlapping_scenario(seed))


def power_reassigning_scenario(seed: int) -> Scenario:
    """`reassigning_scenario(seed)` whose crashes may also be power losses (`--reassigning --power`)."""
    return with_power_crashes(reassigning_scenario(seed))


def with_power_crashes(sc: Scenario) -> Scenario:
    """`sc` whose nemesis crashes may also be power losses (unflushed data gone)."""
    return _with_nemesis(sc, lambda n: replace(n, crash_modes=("process", "power")))


def before_kip903(sc: Scenario) -> Scenario:
    """`sc` with `cluster.broker_epochs: false`: no broker epochs in fetches or AlterPartition (as Kafka
    3.3-3.4), and the controller checks only the ISR members a proposal adds for fencing, as replog's did
    before it modelled KIP-903. The seeds tests pinned before then reproduce their runs with it; with broker
    epochs the same seeds draw other interleavings."""
    return replace(sc, cluster=replace(sc.cluster, broker_epochs=False))


def before_metadata_deltas(sc: Scenario) -> Scenario:
    """`sc` with `cluster.metadata_deltas: false`: the controller delivers one metadata update at a time, the
    head again alone after a lost delivery, as replog's KRaft mode did before session 66 made each delivery one
    delta of everything queued. The seeds tests pinned before then reproduce their runs with it."""
    return replace(sc, cluster=replace(sc.cluster, metadata_deltas=False))


def before_kraft_lifecycle(sc: Scenario) -> Scenario:
    """`sc` with `cluster.kraft_lifecycle: false`: sessions checked every quarter session, and a restarted broker's
    registration fences its previous process and unfences it as it arrives, as replog did before session 92 modelled
    KRaft's registration handshake (a registration refused while the previous session is valid, the broker fenced
    until its first metadata publish, the session checked when it expires); and producers as before session 93
    (`before_client_metadata`). The seeds tests pinned before session 92 reproduce their runs with it."""
    return before_client_metadata(replace(sc, cluster=replace(sc.cluster, kraft_lifecycle=False)))


def before_client_metadata(sc: Scenario) -> Scenario:
    """`sc` with every producer's `fresh_metadata: true`: each attempt goes to the partition's current leader, as
    replog's producers did before session 93 modelled the client's metadata (leaders kept until an error says they
    are stale), the delivery timeout and batches held while no leader can take them. The seeds tests pinned before
    then reproduce their runs with it; it also puts the HW checkpoint on the grid of the process start
    (`before_hw_checkpoint_anchor`), as it was then."""
    return before_hw_checkpoint_anchor(
        replace(sc, producers=tuple(replace(p, fresh_metadata=True) for p in sc.producers)))


def before_hw_checkpoint_anchor(sc: Scenario) -> Scenario:
    """`sc` with `cluster.hw_checkpoint_at_first_metadata: false`: each broker process writes its first HW checkpoint
    one `replica.high.watermark.checkpoint.interval.ms` after its start, as replog did before session 94 started the
    task at the process's first metadata application (`ReplicaManager.startHighWatermarkCheckPointThread`). The seeds
    tests pinned before then reproduce their runs with it; it also sends each batch as its own request
    (`before_sender`), as replog did then."""
    return before_sender(replace(sc, cluster=replace(sc.cluster, hw_checkpoint_at_first_metadata=False)))


def before_sender(sc: Scenario) -> Scenario:
    """`sc` with every producer's `batch_per_request: true`: each batch its own request, sent when made or retried,
    with no in-flight limit, as replog's producers did before session 95 modelled the `Sender` (one request per
    broker, `linger.ms`, `max.in.flight.requests.per.connection`). The seeds tests pinned before then reproduce
    their runs with it."""
    return replace(sc, producers=tuple(replace(p, batch_per_request=True) for p in sc.producers))


def with_elr(sc: Scenario) -> Scenario:
    """`sc` with eligible leader replicas (KIP-966, `cluster.eligible_leader_replicas: true`), as a new Kafka 4.1
    cluster runs."""
    return sc.with_overrides(eligible_leader_replicas=True)


def _power_crashes(sc: Scenario) -> bool:
    """Whether the run's nemesis may lose unflushed data (`power_scenario`)."""
    return sc.nemesis is not None and "power" in sc.nemesis.crash_modes


def power_lossy(events: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the event id from which a power loss explains its errors. A replica whose log lost
    records in a crash recovery (a truncation while its broker is down, see `replication_core.sim.disk`) is
    elected in epoch E with LEO L, and an HW of an epoch before E passes L: the new leader lacks records
    committed before it. The id is the later of the two events: the election when the HW had passed L already
    (the followers truncate to it), or the HW change when a leader of an older epoch, not yet told of E (back
    from a pause, say), raises its HW past L afterwards, from the follower LEO it knew before the crash."""
    down: set[int] = set()
    committed: dict[tuple[str, int], int] = {}
    crash_lost: set[tuple[str, int, int]] = set()
    elected: dict[tuple[str, int], list[tuple[int, int]]] = {}  # (E, L) of crash-lost replicas elected
    out: dict[tuple[str, int], int] = {}
    for event_id, e in enumerate(events):  # event ids are emission positions (`tests.sim.helpers.check`)
        et, b = e["event_type"], e["broker_id"]
        if et == "broker_lifecycle":
            if e["action"] in ("crash", "shutdown"):
                down.add(b)
            elif e["action"] in ("start", "restart"):
                down.discard(b)
            continue
        tp = (e["topic"], e["partition"])
        if tp in out:
            continue
        if et == "hw_change" and e["hw"] is not None:
            committed[tp] = max(committed.get(tp, 0), e["hw"])
            if any(e["leader_epoch"] < epoch and e["hw"] > leo for epoch, leo in elected.get(tp, ())):
                out[tp] = event_id
        elif et == "truncation" and b in down:
            crash_lost.add((*tp, b))
        elif (et == "leadership_change" and e["action"] == "become_leader" and (*tp, b) in crash_lost
              and e["leo"] is not None):
            if e["leo"] < committed.get(tp, 0):
                out[tp] = event_id
            else:
                elected.setdefault(tp, []).append((e["leader_epoch"], e["leo"]))
    return out


def power_lost_member(v: Violation, events: list[dict[str, Any]]) -> bool:
    """Whether `v` is an ISR member lacking a record that a power failure took from it: the last truncation of
    `v.replica`'s log over `v.offset` before `v` was its crash recovery (its broker down), it has not written
    the offset again since, and no ISR change has added it since. Its leader counted the record from a fetch
    the follower sent before the crash (a leader paused meanwhile processes it after the restart, with the old
    broker epoch it still caches): the follower's fetch offset is an acknowledgement Kafka does not flush
    (power seed 597684)."""
    if v.invariant != "isr_holds_committed" or v.offset is None or v.replica is None or v.event_id < 0:
        return False
    # A member added to the ISR after the crash got there from fetch state of its previous process: what KIP-903's
    # broker epochs prevent (seed 850794 with `--before-kip903`), not a loss to excuse. `v`'s own event (an ISR
    # commit, say) counts.
    down = lost = added = False
    for e in events[:v.event_id + 1]:
        kind = e["event_type"]
        if kind == "broker_lifecycle":
            if e["broker_id"] == v.replica:
                down = e["action"] == "crash"
        elif (e.get("topic"), e.get("partition")) != (v.topic, v.partition):
            continue
        elif (kind == "isr_change" and e.get("isr_state") == "committed"
              and v.replica in (e.get("isr") or ()) and v.replica not in (e.get("old_isr") or ())):
            added = True
        elif e["broker_id"] != v.replica:
            continue
        elif kind == "truncation":
            added = False
            if e["truncate_offset"] <= v.offset:
                lost = down and v.offset < e["old_leo"]
        elif kind == "append" and e["base_offset"] <= v.offset <= e["last_offset"]:
            lost = False
    return lost and not added


def _loss_allowed(sc: Scenario, topic: str) -> bool:
    """Whether the topic's settings let an acknowledged acks=all write be lost (unclean elections, min ISR 1)."""
    cfg = sc.topic_config(topic)  # the broker config with the topic's overrides
    rf = next(t.replication_factor for t in sc.topics if t.name == topic)
    return cfg.unclean_leader_election_enable or cfg.effective_min_isr(rf) < 2


def problems(sc: Scenario) -> tuple[list[str], list[str]]:
    """What is wrong with one run: new problems (checker errors, then the simulator audit's findings), and the
    checker errors that are instances of a known, Kafka-faithful finding (`tests.sim.known_findings`)."""
    _, events, stats = run(sc)
    return problems_in(sc, events, stats)


def judged_runs(make: Callable[[int], Scenario], seeds: Iterable[int]
                ) -> Iterator[tuple[int, list[str], list[dict[str, Any]], RunStats]]:
    """Each seed's run of `make(seed)`, simulated once: (seed, its new problems, its events, its stats)."""
    for seed in seeds:
        sc = make(seed)
        _, events, stats = run(sc)
        yield seed, problems_in(sc, events, stats)[0], events, stats


def problems_in(sc: Scenario, events: list[dict[str, Any]], stats: RunStats) -> tuple[list[str], list[str]]:
    """`problems` of a run already simulated."""
    found, known = [], []
    known_losses: set[tuple[str | None, int | None, int | None]] = set()
    lossy = power_lossy(events) if _power_crashes(sc) else {}
    for v in check(events, stats, max_network_delay_ms(sc)).violations:
        if v.severity != "error":
            continue
        start = lossy.get((v.topic, v.partition))
        if start is not None and (v.event_id == -1 or v.event_id >= start):
            continue  # a committed record lost by a power failure, then led from (see `power_lossy`)
        if _power_crashes(sc) and power_lost_member(v, events):
            continue
        line = f"{v.invariant} {v.topic}-{v.partition} replica {v.replica} event {v.event_id}: {v.message}"
        finding = known_finding(v, events)
        if finding is None:
            found.append(line)
        else:
            known.append(f"{finding}: {line}")
            if v.invariant == "acked_write_lost":
                known_losses.add((v.topic, v.partition, v.offset))
    a = audit(events)
    found += [f"inconsistent: {x}" for x in a.inconsistencies[:3]]
    if _power_crashes(sc):
        # A power failure may lose or diverge any partition's records: the checker's errors outside
        # `power_lossy` are judged above, the simulator audit's losses and divergences are not.
        return found, known
    # An unclean election lets a replica that has not truncated yet hold what the new leader lost (seed 870432).
    unclean = {(e["topic"], e["partition"]) for e in a.unclean_elections()}
    found += [f"divergence: {x}" for x in a.divergences() if x[0][1:] not in unclean][:3]
    # The checker's acked_write_lost for the same batch already judged a loss finding A explains.
    found += [f"lost acknowledged write at {x['base_offset']} of {x['topic']}-{x['partition']}"
              for x in a.lost_acked_writes() if not _loss_allowed(sc, x["topic"])
              and (x["topic"], x["partition"], x["base_offset"]) not in known_losses][:3]
    return found, known


def seed_range(text: str) -> range:
    """`FIRST-LAST` (inclusive) or one seed, as a range; an argparse type."""
    lo, _, hi = text.partition("-")
    try:
        first, last = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected FIRST-LAST (e.g. 5000-6000), got {text!r}") from None
    if last < first:
        raise argparse.ArgumentTypeError(f"expected FIRST <= LAST, got {text!r}")
    return range(first, last + 1)


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    """`--seeds`, the shapes (`--wide` ... `--reassigning`), `--before-kip903`, `--before-metadata-deltas`,
    `--before-kraft-lifecycle` and `--before-client-metadata`, shared by
    the campaigns (this one and `tests.spark.lag_campaign`)."""
    parser.add_argument("--seeds", type=seed_range, required=True, help="FIRST-LAST, inclusive")
    parser.add_argument("--wide", action="store_true", help="also draw retention, unclean, min ISR 1, larger clusters")
    parser.add_argument("--deep", action="store_true",
                        help="--wide plus RF 2/4, multi-record batches, small fetch limits, acks=0, a second topic")
    parser.add_argument("--correlated", action="store_true",
                        help="--deep plus crashes of two brokers' processes at once")
    parser.add_argument("--overlapping", action="store_true",
                        help="--correlated with faults that overlap, process crashes only")
    parser.add_argument("--power", action="store_true",
                        help="--overlapping with power crashes too (unflushed data lost)")
    parser.add_argument("--reassigning", action="store_true",
                        help="--overlapping with reassignments drawn by the nemesis too (and --power: power crashes)")
    parser.add_argument("--throttled", action="store_true",
                        help="--reassigning with the drawn reassignments throttled (replication quotas)")
    parser.add_argument("--before-kip903", action="store_true",
                        help="without broker epochs, as seeds found before session 30 ran (`before_kip903`)")
    parser.add_argument("--before-metadata-deltas", action="store_true",
                        help="one metadata update per delivery, as seeds found before session 66 ran "
                             "(`before_metadata_deltas`)")
    parser.add_argument("--before-kraft-lifecycle", action="store_true",
                        help="a restart registers at once, sessions checked every quarter session, as seeds found "
                             "before session 92 ran (`before_kraft_lifecycle`)")
    parser.add_argument("--before-client-metadata", action="store_true",
                        help="producers send to the current leader at every attempt, as seeds found before session 93 "
                             "ran (`before_client_metadata`)")
    parser.add_argument("--before-hw-checkpoint", action="store_true",
                        help="the HW checkpoint on the grid of the process start, as seeds found before session 94 "
                             "ran (`before_hw_checkpoint_anchor`)")
    parser.add_argument("--before-sender", action="store_true",
                        help="each batch its own request, as seeds found before session 95 ran (`before_sender`)")
    parser.add_argument("--elr", action="store_true",
                        help="with eligible leader replicas (KIP-966, `with_elr`)")


def scenario_maker(args: argparse.Namespace) -> Callable[[int], Scenario]:
    """The seed -> scenario function `--wide` / `--deep` / `--correlated` / `--overlapping` / `--power` /
    `--reassigning` / `--throttled` chose, wrapped in `before_kip903` with `--before-kip903`, in `with_elr`
    with `--elr`, in `before_metadata_deltas` with `--before-metadata-deltas`, in `before_kraft_lifecycle` with
    `--before-kraft-lifecycle`, in `before_client_metadata` with `--before-client-metadata` and in
    `before_hw_checkpoint_anchor` with `--before-hw-checkpoint` and in `before_sender` with `--before-sender`."""
    if args.throttled:
        make = power_throttled_scenario if args.power else throttled_scenario
    elif args.reassigning and args.power:
        make = power_reassigning_scenario
    elif args.reassigning:
        make = reassigning_scenario
    elif args.power:
        make = power_scenario
    elif args.overlapping:
        make = overlapping_scenario
    elif args.correlated:
        make = correlated_scenario
    else:
        make = deep_scenario if args.deep else wide_scenario if args.wide else varied_scenario
    wraps = [wrap for wrap, on in ((before_kip903, args.before_kip903), (with_elr, args.elr),
                                   (before_metadata_deltas, args.before_metadata_deltas),
                                   (before_kraft_lifecycle, args.before_kraft_lifecycle),
                                   (before_client_metadata, args.before_client_metadata),
                                   (before_hw_checkpoint_anchor, args.before_hw_checkpoint),
                                   (before_sender, args.before_sender)) if on]
    if not wraps:
        return make

    def shaped(seed: int) -> Scenario:
        sc = make(seed)
        for wrap in wraps:
            sc = wrap(sc)
        return sc

    return shaped


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; print one line per reported run and a progress line every `--every` seeds."""
    parser = argparse.ArgumentParser(prog="python -m tests.sim.campaign", description=__doc__.split("\n")[0])
    add_shape_arguments(parser)
    parser.add_argument("--every", type=int, default=100, help="progress line every N seeds")
    args = parser.parse_args(argv)
    if args.elr and args.before_kip903:
        parser.error("--elr needs broker epochs (Kafka 4 has them): drop --before-kip903")
    make = scenario_maker(args)
    reported, known_runs, t0 = 0, 0, time.monotonic()
    for i, seed in enumerate(args.seeds, 1):
        found, known = problems(make(seed))
        if found:
            reported += 1
            print(f"seed {seed}: " + " | ".join(found[:4]), flush=True)
        if known:
            known_runs += 1
            print(f"seed {seed} (known): " + " | ".join(known[:4]), flush=True)
        if i % args.every == 0 or i == len(args.seeds):
            print(f"[{i}/{len(args.seeds)} runs, {reported} reported, {known_runs} with known findings, "
                  f"{time.monotonic() - t0:.0f} s]", flush=True)
    return 1 if reported else 0


if __name__ == "__main__":
    sys.exit(main())
