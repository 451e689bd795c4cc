"""Data-driven fetcher scenarios (etcd-raft style): `tests/core/scenarios/fetcher/*.txt`.

A file is a sequence of blocks: one command line, `----`, the expected output, a blank line. `#` lines
are comments. Commands (one follower broker 2 fetching from one leader broker 1):

  fetcher protocol=P [batches=N] [backoff=MS]   reset the world; P is a truncation protocol
  leader TP epoch=E hw=H log=SPEC [lso=N]       install the leader's partition (real Log + epoch cache)
  follower TP epoch=E hw=H log=SPEC [offset=N]  install the follower's log and add it to the fetcher
                                                (offset defaults to ReplicaManager.initialFetchOffset)
  leader-epoch TP E                             the leader moves to epoch E (cached at its LEO)
  readd TP epoch=E                              the follower is re-added at epoch E (new LeaderAndIsr)
  append TP epoch=E count=N                     the leader appends N single-record batches
  leader-down                                   every later request fails (NETWORK_EXCEPTION)
  work [n=N] [advance=MS]                       N doWork rounds; prints every request/answer and truncation
  logs TP                                       both logs and where they differ
  state TP                                      the follower's fetch state

SPEC is `0-10@1,11-15@2`: single-record batches for each offset, stamped with the epoch after `@`.
Set `REPLOG_REWRITE=1` to rewrite the expected output from the actual one (then review the diff).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replication_core.config import ReplicationConfig
from replication_core.fetcher import initial_fetch_offset
from replication_core.leader_endpoint import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    call_leader,
)
from replication_core.log import Log, RecordBatch
from replication_core.partition_fetch_state import BrokerEndPoint, InitialFetchState, TopicPartition
from replication_core.truncation import truncation_protocol
from tests.core.mock_leader import FollowerHarness, MockLeaderEndPoint, make_harness, mk_batch, mk_log

SCENARIOS = Path(__file__).parent / "scenarios" / "fetcher"


def parse_tp(text: str) -> TopicPartition:
    """`topic-3` -> TopicPartition("topic", 3)."""
    topic, _, partition = text.rpartition("-")
    return TopicPartition(topic, int(partition))


def parse_spec(spec: str) -> list[RecordBatch]:
    """`0-10@1,11-15@2` -> single-record batches."""
    batches: list[RecordBatch] = []
    for part in filter(None, spec.split(",")):
        span, _, epoch = part.partition("@")
        lo, _, hi = span.partition("-")
        for offset in range(int(lo), int(hi or lo) + 1):
            batches.append(mk_batch(offset, int(epoch)))
    return batches


def render_batches(batches: tuple[RecordBatch, ...]) -> str:
    """Merge runs of consecutive same-epoch batches back into the SPEC form."""
    runs: list[list[int]] = []
    for b in batches:
        if runs and runs[-1][2] == b.leader_epoch and runs[-1][1] + 1 == b.base_offset:
            runs[-1][1] = b.last_offset
        else:
            runs.append([b.base_offset, b.last_offset, b.leader_epoch])
    return ",".join(f"{lo}@{e}" if lo == hi else f"{lo}-{hi}@{e}" for lo, hi, e in runs) or "empty"


def render_log(log: Log) -> str:
    """Batches, offsets and epoch cache of a log on one line."""
    return (f"{render_batches(log.batches)} lso={log.log_start_offset} leo={log.log_end_offset} "
            f"hw={log.high_watermark} epochs={[tuple(e) for e in log.epoch_cache.entries]}")


def diff_logs(a: Log, b: Log) -> str:
    """Offsets where the two logs hold different batches (by offset and epoch)."""
    left = {x.base_offset: (x.leader_epoch, x.checksum) for x in a.batches}
    right = {x.base_offset: (x.leader_epoch, x.checksum) for x in b.batches}
    bad = sorted(o for o in left.keys() & right.keys() if left[o] != right[o])
    if not bad:
        if left == right:
            return "identical"
        missing = sorted(left.keys() - right.keys())
        return f"follower is a prefix of the leader, missing {missing[0]}-{missing[-1]}" if missing else \
            "leader is a prefix of the follower"
    return f"diverged at {bad[0]}-{bad[-1]}" if bad[-1] - bad[0] + 1 == len(bad) else f"diverged at {bad}"


class World:
    """The interpreter's state: a follower harness and the leader it fetches from."""

    def __init__(self) -> None:
        self.h: FollowerHarness | None = None

    @property
    def harness(self) -> FollowerHarness:
        """The current harness (a `fetcher` command must come first)."""
        assert self.h is not None, "start with a `fetcher` command"
        return self.h

    def run(self, line: str) -> list[str]:
        """Execute one command line; returns its output lines."""
        words = line.split()
        cmd, args = words[0], words[1:]
        pos = [a for a in args if "=" not in a]
        kv = dict(a.split("=", 1) for a in args if "=" in a)
        return getattr(self, "cmd_" + cmd.replace("-", "_"))(pos, kv)

    def cmd_fetcher(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`fetcher protocol=P [batches=N] [backoff=MS]`: a fresh follower and leader."""
        protocol = truncation_protocol(kv["protocol"])
        cfg = ReplicationConfig(replica_fetch_backoff_ms=int(kv.get("backoff", "1000")))
        leader = MockLeaderEndPoint(batches_per_fetch=int(kv.get("batches", "1000")))
        self.h = make_harness(protocol, cfg, leader)
        return [f"protocol={protocol}"]

    def cmd_leader(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`leader TP epoch=E hw=H log=SPEC [lso=N]`: install the leader's partition."""
        tp = parse_tp(pos[0])
        lso = int(kv["lso"]) if "lso" in kv else None
        state = self.harness.leader.set_leader(tp, parse_spec(kv.get("log", "")), int(kv["epoch"]), int(kv["hw"]),
                                               lso)
        return [f"leader {tp}: {render_log(state.log)}"]

    def cmd_follower(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`follower TP epoch=E hw=H log=SPEC [offset=N]`: install and add the follower's partition."""
        h = self.harness
        tp = parse_tp(pos[0])
        log = mk_log(parse_spec(kv.get("log", "")), int(kv["hw"]), tp=tp)
        offset = int(kv["offset"]) if "offset" in kv else initial_fetch_offset(log, h.fetcher.protocol)
        h.add(tp, log, offset, int(kv["epoch"]))
        return [f"follower {tp}: {render_log(log)}", f"state: {h.fetcher.fetch_state(tp)}"]

    def cmd_readd(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`readd TP epoch=E`: the follower is re-added to the fetcher at epoch E (a LeaderAndIsr with a new epoch)."""
        h = self.harness
        tp = parse_tp(pos[0])
        log = h.logs[tp]
        h.fetcher.add_partitions({tp: InitialFetchState(BrokerEndPoint(1), int(kv["epoch"]),
                                                        initial_fetch_offset(log, h.fetcher.protocol))}, h.now_ms)
        return [f"state: {h.fetcher.fetch_state(tp)}"]

    def cmd_leader_epoch(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`leader-epoch TP E`: the leader moves to epoch E (`makeLeader` caches it at the LEO)."""
        tp = parse_tp(pos[0])
        state = self.harness.leader.partitions[tp]
        state.become_leader(int(pos[1]))
        return [f"leader {tp}: {render_log(state.log)}"]

    def cmd_append(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`append TP epoch=E count=N`: the leader appends N single-record batches."""
        tp = parse_tp(pos[0])
        log = self.harness.leader.partitions[tp].log
        for _ in range(int(kv["count"])):
            log.append_as_leader(1, 10, 0, int(kv["epoch"]))
        return [f"leader {tp}: {render_log(log)}"]

    def cmd_work(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`work [n=N] [advance=MS]`: N doWork rounds, printing each exchange and truncation."""
        h = self.harness
        out: list[str] = []
        rounds = int(kv.get("n", "1"))
        for k in range(rounds):
            h.now_ms += int(kv.get("advance", "0"))
            if rounds > 1:
                out.append(f"round {k + 1} (t={h.now_ms})")
            mark = len(h.events)
            work = h.fetcher.work(h.now_ms)
            try:
                request = next(work)
                while True:
                    # Events print in order: those before this request, then the exchange itself.
                    out.extend(describe_events(h.events[mark:]))
                    mark = len(h.events)
                    response = call_leader(h.leader, request)
                    out.extend(describe(request, response))
                    request = work.send((response, h.now_ms))
            except StopIteration as stop:
                out.extend(describe_events(h.events[mark:]))
                if stop.value.idle_backoff_ms is not None:
                    out.append(f"  no fetch to send: wait {stop.value.idle_backoff_ms} ms")
        return out

    def cmd_leader_down(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`leader-down`: every later request to the leader fails with NETWORK_EXCEPTION."""
        leader = self.harness.leader
        leader.request_error = leader.epoch_request_error = "NETWORK_EXCEPTION"
        return ["leader unreachable"]

    def cmd_logs(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`logs TP`: both logs and whether they agree."""
        h = self.harness
        tp = parse_tp(pos[0])
        leader, follower = h.leader.partitions[tp].log, h.logs[tp]
        return [f"leader:   {render_log(leader)}", f"follower: {render_log(follower)}",
                diff_logs(leader, follower)]

    def cmd_state(self, pos: list[str], kv: dict[str, str]) -> list[str]:
        """`state TP`: the follower's fetch state (and whether it is failed)."""
        tp = parse_tp(pos[0])
        failed = self.harness.fetcher.failed_partitions.contains(tp)
        return [f"{self.harness.fetcher.fetch_state(tp)}" + (" (failed)" if failed else "")]


def describe(request: object, response: object) -> list[str]:
    """One line per partition of a request and its answer."""
    lines: list[str] = []
    if isinstance(request, FetchRequest) and isinstance(response, FetchResponse):
        if response.error != "NONE":
            return [f"Fetch -> {response.error}"]
        for tp, d in request.partitions.items():
            r = response.partitions[tp]
            got = f" records={render_batches(r.batches)}" if r.batches else ""
            div = (f" diverging=(epoch={r.diverging_epoch.leader_epoch}, endOffset={r.diverging_epoch.end_offset})"
                   if r.diverging_epoch is not None else "")
            hw = f" hw={r.high_watermark}" if r.error == "NONE" else ""
            lines.append(f"Fetch {tp} offset={d.fetch_offset} lastFetchedEpoch={d.last_fetched_epoch} "
                         f"-> {r.error}{got}{hw}{div}")
    elif isinstance(request, OffsetsForLeaderEpochRequest) and isinstance(response, OffsetsForLeaderEpochResponse):
        for tp, d in request.partitions.items():
            r = response.partitions.get(tp)
            answer = f"{r.error} leaderEpoch={r.leader_epoch} endOffset={r.end_offset}" if r else response.error
            lines.append(f"OffsetsForLeaderEpoch v{request.version} {tp} leaderEpoch={d.leader_epoch} -> {answer}")
    elif isinstance(request, ListOffsetsRequest) and isinstance(response, ListOffsetsResponse):
        lines.append(f"ListOffsets {request.tp} {request.spec} -> {response.error} offset={response.offset}")
    return lines


def describe_events(events: list[dict[str, object]]) -> list[str]:
    """Truncations and fetcher removals, as the log and fetcher emitted them."""
    lines = []
    for e in events:
        if e["event_type"] == "truncation":
            lines.append(f"  truncate {e['topic']}-{e['partition']} reason={e['reason']} "
                         f"leo {e['old_leo']} -> {e['truncate_offset']} (hw was {e['hw']})")
        elif e["event_type"] == "fetcher_change" and e["action"] == "removed":
            lines.append(f"  partition failed: {e['partitions']}")
    return lines


def parse_file(text: str) -> list[tuple[int, str, list[str]]]:
    """(line number, command, expected lines) per block."""
    blocks: list[tuple[int, str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if not line or line.startswith("#"):
            i += 1
            continue
        assert i + 1 < len(lines) and lines[i + 1].strip() == "----", f"line {i + 2}: expected ----"
        j = i + 2
        expected: list[str] = []
        while j < len(lines) and lines[j].strip():
            expected.append(lines[j].rstrip())
            j += 1
        blocks.append((i + 1, line, expected))
        i = j
    return blocks


def render_file(text: str, actual: dict[int, list[str]]) -> str:
    """The file with every block's expected output replaced by the actual one (REPLOG_REWRITE)."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        if (i + 1) in actual:
            out.append("----")
            out.extend(actual[i + 1])
            i += 2
            while i < len(lines) and lines[i].strip():
                i += 1
            continue
        i += 1
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.txt")), ids=lambda p: p.stem)
def test_fetcher_scenario(path: Path) -> None:
    """Run one scenario file and compare every block with its expected output."""
    text = path.read_text()
    world = World()
    actual: dict[int, list[str]] = {}
    mismatches: list[str] = []
    for lineno, command, expected in parse_file(text):
        got = world.run(command)
        actual[lineno] = got
        if got != expected:
            mismatches.append(f"{path.name}:{lineno}: {command}\n  expected: {expected}\n  actual:   {got}")
    if os.environ.get("REPLOG_REWRITE") == "1":
        path.write_text(render_file(text, actual))
        return
    assert not mismatches, "\n".join(mismatches)
