"""The incident report as a document: its content (plain dataclasses) and its Markdown and HTML renderings.

`jobs.incident_report` fills a `ReportDocument` from the gold and silver tables (bounded data only);
this module only formats it, so its output is testable without Spark. The HTML is self-contained
(inline CSS, no scripts, no external resources) apart from the PNG files next to it, and every piece
of text from the tables is escaped — a violation message is data, not markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from jobs.violation_chains import linked_groups
from replication_core.checker.catalogue import INFO

BAD_VERDICTS: frozenset[str] = frozenset({"late", "missing", "premature"})
"""Lag-incident verdicts where the leader did the wrong thing (see `jobs.transforms.lag`)."""

EVIDENCE_SHOWN = 10
"""Evidence event ids printed per violation; the rest are counted."""

VERDICT_MEANING: dict[str, str] = {
    "on_time": "the leader proposed the ISR shrink by the deadline (the shrink column says whether the controller "
               "committed it)",
    "late": "the leader proposed the ISR shrink after the deadline (1.5 x replica.lag.time.max.ms after the follower "
            "last caught up; later if it was back in the ISR only then, or an ISR change of the leader was in flight)",
    "missing": "the follower stayed behind past the deadline and was never removed from the ISR",
    "recovered": "the follower caught up again before the deadline",
    "leader_lost": "the leader or its epoch ended before the deadline",
    "ongoing": "still lagging at the end of the data, too early to judge",
    "not_in_isr": "the follower was out of the ISR throughout, or the controller removed it before the deadline",
    "premature": "the follower was removed from the ISR although it was not lagging",
}


@dataclass(frozen=True)
class InvariantCount:
    """One catalogue invariant in the audit summary."""

    invariant: str
    severity: str
    evaluated: bool
    errors: int
    warnings: int
    note: str | None = None
    infos: int = 0
    """Findings of severity info (acks1_write_lost: an acks=1 write lost, which Kafka allows)."""


@dataclass(frozen=True)
class Evidence:
    """One evidence event of a violation; `what` / `time_s` are None when it was not looked up."""

    event_id: int
    time_s: float | None = None
    what: str | None = None
    where: str | None = None
    """The log line it was read from (`server.log:812`), for events of real broker logs."""
    event_type: str | None = None
    """Its event type, where it was looked up."""

    def text(self) -> str:
        """`48 (append by broker 2 at 6.001 s)`, `... s, server.log:812)` for a log line, or just `48`."""
        if self.what is None:
            return str(self.event_id)
        return f"{self.event_id} ({self.what} at {_secs(self.time_s)} s{', ' + self.where if self.where else ''})"


@dataclass(frozen=True)
class ViolationRow:
    """One violation as the report lists it (time in seconds since its run's first event)."""

    run_id: str
    invariant: str
    severity: str
    topic: str | None
    partition: int | None
    replica: int | None
    time_s: float
    event_id: int
    """The detecting event; -1 for an end-of-run check (`acked_write_lost`: `time_s` is then when the write last
    left the leader in office), printed as a dash."""
    offset: int | None
    expected: int | None
    actual: int | None
    evidence: tuple[Evidence, ...]
    message: str
    count: int = 1
    """How many alike violations the row stands for (`jobs.violation_streaks`): the row is their earliest."""
    offsets: tuple[int, int] | None = None
    """The lowest and highest offset the streak's violations name, where it has more than one."""
    last_time_s: float | None = None
    """When the streak's last violation was found, where it has more than one."""

    @property
    def time_range(self) -> tuple[float, float]:
        """When the violations the row stands for were found, first and last."""
        return self.time_s, max(self.time_s, self.last_time_s if self.last_time_s is not None else self.time_s)


@dataclass(frozen=True)
class NumberedEvidence:
    """One numbered ring of a partition's picture: its number, time and label, and the events it stands for (events
    of one time and label share a ring)."""

    number: int
    time_s: float
    label: str
    event_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class IncidentRow:
    """One lag incident as the report lists it (times in seconds since its run's first event)."""

    run_id: str
    topic: str
    partition: int
    follower: int
    leader: int
    epoch: int | None
    start_s: float
    end_s: float | None
    peak_time_lag_ms: int | None
    peak_message_lag: int | None
    lag_max_ms: int
    shrink_s: float | None
    verdict: str
    failed_fetches: int = 0
    """The follower's fetch responses with an error for the partition from its last caught-up instant to the end."""
    fetch_errors: tuple[str, ...] = ()
    """Their error names."""
    shrink_outcome: str | None = None
    """What became of the shrink's AlterPartition: committed, rejected, superseded (no answer before the leader's state
    moved on) or pending (no answer in the data)."""
    deposed_s: float | None = None
    """When the controller's state first named a newer leader epoch than the incident's (None: not in the data)."""
    caught_up_s: float | None = None
    """The follower's last caught-up instant as the leader saw it (its time lag counts from there)."""
    deadline_s: float | None = None
    """When the shrink was due (None: no deadline, an ISR change of the leader still in flight at the end)."""

    @property
    def zombie(self) -> bool:
        """The leader had been deposed before the incident began: it judged the follower on a view the cluster had
        moved past (it learns of its deposition only when the controller's LeaderAndIsr reaches it)."""
        return self.deposed_s is not None and self.deposed_s <= self.start_s


@dataclass(frozen=True)
class FetchErrorRow:
    """A follower's fetch responses with one error from one leader for the partition: how many, first and last."""

    follower: int | None
    leader: int | None
    error: str
    responses: int
    first_s: float
    last_s: float


@dataclass(frozen=True)
class ProduceRow:
    """The produce answers the partition's leaders gave with one acks setting and one error: how many, and for
    acknowledged acks=all writes how long they waited from the leader's append to the acknowledgement."""

    acks: int | None
    """None: not known (an error read from a broker log that does not imply it)."""
    error: str
    answers: int
    wait_p50_ms: int | None = None
    wait_p99_ms: int | None = None
    wait_max_ms: int | None = None
    wait_max_s: float | None = None
    """When the longest-waiting write was acknowledged."""
    timed: int | None = None
    """How many of them the waits cover (those whose leader append is in the data); None: all."""
    first_s: float | None = None
    last_s: float | None = None
    """The first and last of these answers (None: not known)."""
    bursts: tuple[tuple[float | None, float | None, int], ...] = ()
    """For an error, its first bursts (first s, last s, answers): answers no more than report.burst_gap_ms apart."""
    burst_count: int = 0
    """How many bursts there were (more than `bursts` lists when capped)."""


@dataclass(frozen=True)
class FaultRow:
    """A fault the simulator held one of the partition's replicas in (`broker_fault`), from `start_s` to `end_s`;
    `open`: nothing ended it before the run's end. `peers` names a network partition's other side."""

    broker: int
    kind: str
    start_s: float
    end_s: float
    open: bool = False
    peers: str = ""
    direction: str | None = None


@dataclass(frozen=True)
class InvariantSpread:
    """How many violations of one invariant a partition has, and the lowest and highest offset they name."""

    invariant: str
    severity: str
    count: int
    first_offset: int | None = None
    last_offset: int | None = None

    @property
    def text(self) -> str:
        """`acked_write_lost (warning): 560 at offsets 212..771`."""
        where = ("" if self.first_offset is None else f" at offset {self.first_offset}"
                 if self.first_offset == self.last_offset else f" at offsets {self.first_offset}..{self.last_offset}")
        return f"{self.invariant} ({self.severity}): {self.count:,}{where}"


def _spread_line(spreads: Sequence[InvariantSpread]) -> str | None:
    return None if not spreads else "All of them, per invariant: " + "; ".join(x.text for x in spreads) + "."


@dataclass(frozen=True)
class OverviewSection:
    """One run's cluster overview (`jobs.overview_plot`): its PNG and the broker faults drawn on its lanes."""

    run_id: str
    png: str
    """The PNG's file name, relative to the report."""
    faults: tuple[FaultRow, ...] = ()
    fault_count: int = 0
    """How many faults the run had (`faults` stops at max_rows)."""


@dataclass(frozen=True)
class PartitionSection:
    """One flagged partition: its counts, the violations and incidents listed, and its picture."""

    run_id: str
    topic: str
    partition: int
    errors: int
    warnings: int
    incident_count: int
    violations: tuple[ViolationRow, ...] = ()
    incidents: tuple[IncidentRow, ...] = ()
    png: str | None = None
    """The PNG's file name, relative to the report (None: not plotted)."""
    rules: tuple[tuple[str, str, str], ...] = ()
    """(invariant, the rule, what offset / expected / actual mean) of the invariants violated here."""
    unclean_elections: int = 0
    fetch_errors: tuple[FetchErrorRow, ...] = ()
    fetch_error_groups: int = 0
    """How many (follower, leader, error) groups the partition has (`fetch_errors` stops at max_rows)."""
    faults: tuple[FaultRow, ...] = ()
    fault_count: int = 0
    """How many of the drawn faults were the replicas' (`faults` stops at max_rows)."""
    per_invariant: tuple[InvariantSpread, ...] = ()
    """Every violated invariant's count and offsets here, however many the table lists."""
    infos: int = 0
    """Findings of severity info here (acks=1 writes lost)."""
    produce: tuple[ProduceRow, ...] = ()
    """What the producers of the partition were answered (none for a run read from broker logs)."""
    settings: tuple[tuple[str, str], ...] = ()
    """(Kafka config name, value as the run's broker_config events gave it, with its scope) of the settings that
    judge the partition: what the lag threshold, min ISR and unclean elections were."""
    produce_silences: tuple[tuple[float | None, float | None, bool], ...] = ()
    """The longest stretches without any produce answer (from s, to s, whether it lasted to the run's end), longest
    first (report.silence_ms)."""
    produce_silence_count: int = 0
    """How many such stretches there were (`produce_silences` lists the first few)."""
    naming: tuple[tuple[int, int], ...] = ()
    """(event id, how many of the partition's violations name it, listed or not) for its chains' events."""
    evidence_key: tuple[NumberedEvidence, ...] = ()
    """The numbered evidence rings of its picture (`jobs.plots.evidence_key`), listed under it."""
    asked: bool = False
    """`replog report --partition` named it (drawn whether flagged or not)."""
    flagged: bool = True
    """A violation (info too), a lag incident or an unclean election flags it (`flagged_partitions`); a partition
    drawn only because `--partition` named it may not be."""

    @property
    def asked_line(self) -> str | None:
        """What the section says of a partition drawn because the command named it."""
        if not self.asked:
            return None
        return "Drawn as asked (`--partition`)" + ("." if self.flagged else
                                                   ": nothing flagged it (no violation, lag incident or unclean "
                                                   "election).")

    @property
    def violation_count(self) -> int:
        """Every violation of the partition, whatever its severity (the table lists the first max_rows)."""
        return self.errors + self.warnings + self.infos

    @property
    def listed_count(self) -> int:
        """How many violations the table's rows stand for (a row may stand for a streak of alike ones)."""
        return sum(v.count for v in self.violations)

    @property
    def counts(self) -> str:
        """`1 error(s), 0 warning(s)[, 3 info], 2 lag incident(s)[, 1 unclean election(s)].`: info and unclean
        elections only where there are some (errors, warnings and incidents are what every reader looks for)."""
        info = f", {self.infos} info" if self.infos else ""
        unclean = f", {self.unclean_elections} unclean election(s)" if self.unclean_elections else ""
        return (f"{self.errors} error(s), {self.warnings} warning(s){info}, {self.incident_count} lag incident(s)"
                f"{unclean}.")

    @property
    def chains(self) -> tuple[tuple[ViolationRow, ...], ...]:
        """The listed violations that share a detecting or evidence event with another, as chains
        (`jobs.violation_chains`): each in time order (an end-of-run check at the loss it found), the chains by
        their first."""
        groups = linked_groups([_event_ids(v) for v in self.violations])
        return tuple(sorted((tuple(sorted((self.violations[i] for i in g), key=_found_order)) for g in groups),
                            key=lambda chain: _found_order(chain[0])))

    @property
    def title(self) -> str:
        """`topic-partition (run …)`."""
        return f"{self.topic}-{self.partition} (run {self.run_id})"

    @property
    def anchor(self) -> str:
        """An HTML id for the section."""
        return "p-" + "".join(c if c.isalnum() else "-" for c in f"{self.run_id}-{self.topic}-{self.partition}")


@dataclass(frozen=True)
class ReportDocument:
    """Everything the report says; see `markdown` and `html_page`."""

    generated_at: str
    lake: str
    audit_id: str
    audit_started_at: str
    bronze_version: int | None
    runs: tuple[str, ...]
    invariants: tuple[InvariantCount, ...]
    not_evaluated: tuple[str, ...]
    run_level: tuple[ViolationRow, ...] = ()
    run_level_total: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    incidents: tuple[IncidentRow, ...] = ()
    incidents_total: int = 0
    flagged_total: int = 0
    sections: tuple[PartitionSection, ...] = ()
    max_partitions: int = 20
    max_rows: int = 50
    bucket_note: str = ""
    fetch_errors: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per error name: the fetch responses with it over the reported runs, and the partitions they concern."""
    produce_errors: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per error name: the produce answers with it over the reported runs (from broker logs, the refusals Kafka
    logs), and the partitions they concern."""
    silence_ms: int = 2000
    """report.silence_ms: the shortest stretch without any produce answer a section lists."""
    loss_causes: dict[str, int] = field(default_factory=dict)
    """Per cause an excused acked_write_lost names (`final_log.LOSS_CAUSES`): how many over the reported runs."""
    overviews: tuple[OverviewSection, ...] = ()
    run_starts: dict[str, str] = field(default_factory=dict)
    """Per run: its first event's time (UTC), from which the report's times in seconds count."""
    """The runs whose cluster overview is drawn."""
    overviews_capped: int = 0
    """Runs left without an overview by the `max_partitions` cap (runs with nothing to draw are not counted)."""

    @property
    def errors(self) -> int:
        """Violations of severity error over the reported runs."""
        return sum(c.errors for c in self.invariants)

    @property
    def warnings(self) -> int:
        """Violations of severity warning over the reported runs."""
        return sum(c.warnings for c in self.invariants)

    @property
    def infos(self) -> int:
        """Findings of severity info over the reported runs: acks=1 writes lost (counted, never a failure)."""
        return sum(c.infos for c in self.invariants)

    @property
    def flagged_sections(self) -> int:
        """Sections of flagged partitions (the others are there because `--partition` named them)."""
        return sum(1 for s in self.sections if s.flagged)

    @property
    def ranked(self) -> int:
        """Flagged partitions drawn by rank, worst first, up to the `max_partitions` cap."""
        return min(self.flagged_total, self.max_partitions)

    @property
    def asked_flagged(self) -> int:
        """Flagged partitions beyond the cap, drawn because `--partition` named them."""
        return max(0, self.flagged_sections - self.ranked)

    @property
    def asked_only(self) -> int:
        """Sections of partitions nothing flagged, drawn because `--partition` named them."""
        return len(self.sections) - self.flagged_sections

    @property
    def not_plotted(self) -> int:
        """Flagged partitions left out by the `max_partitions` cap."""
        return max(0, self.flagged_total - self.flagged_sections)

    def verdict_line(self) -> str:
        """`missing 1, recovered 2` or `none`."""
        return ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items())) or "none"

    def fetch_error_line(self) -> str:
        """`NOT_LEADER_OR_FOLLOWER 12 (3 partitions), ...`, the most frequent first, or `none`."""
        return _error_counts(self.fetch_errors)

    def produce_error_line(self) -> str:
        """`NOT_ENOUGH_REPLICAS 1,673 (1 partition), ...`, the most frequent first, or `none`."""
        return _error_counts(self.produce_errors)


def _error_counts(errors: dict[str, tuple[int, int]]) -> str:
    """`NOT_LEADER_OR_FOLLOWER 12 (3 partitions), ...` (per error: answers, partitions), the most first, or `none`."""
    ranked = sorted(errors.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return ", ".join(f"{e} {n:,} ({p} partition{'s' if p != 1 else ''})" for e, (n, p) in ranked) or "none"


# --- shared wording ------------------------------------------------------------------------------------


def _num(v: int | None) -> str:
    """A count or a duration, with thousands separators (`14,000`)."""
    return "–" if v is None else f"{v:,}"


def _id(v: int | None) -> str:
    """An identifier or a position — broker id, offset, checksum, epoch, version — as `replog check` and the
    messages print it, without separators, so that it can be searched for and matched."""
    return "–" if v is None else str(v)


def _event(event_id: int) -> str:
    """The detecting event; end-of-run checks have none (`gold/invariant_violations` stores -1)."""
    return "–" if event_id < 0 else str(event_id)


def _secs(v: float | None, open_text: str = "–") -> str:
    return open_text if v is None else f"{v:,.3f}"


def evidence_key_text(key: Sequence[NumberedEvidence]) -> str | None:
    """The picture's numbered rings as one line under it (`1. append by broker 2 at 6.001 s, event 48; 2. ...`):
    in a crowded picture a ring's label may be its number alone. None when the picture has none."""
    if not key:
        return None

    def events(ids: tuple[int, ...]) -> str:
        return "" if not ids else f", event{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}"

    return "Numbered evidence in the picture: " + "; ".join(
        f"{r.number}. {r.label} at {_secs(r.time_s)} s{events(r.event_ids)}" for r in key) + "."


def _evidence(items: Sequence[Evidence]) -> str:
    shown = "; ".join(e.text() for e in items[:EVIDENCE_SHOWN])
    more = len(items) - EVIDENCE_SHOWN
    return shown + (f" (+{more} more)" if more > 0 else "") if items else "–"


CONTEXT_EVENT_TYPES: frozenset[str] = frozenset({"broker_config", "leadership_change", "broker_lifecycle"})
"""Evidence that sets the scene rather than records a step of a fault: a broker's settings, the start of a leader's
tenure, a start or crash. Many unrelated violations name one (every HW finding of a tenure names its start), so
they link no chain."""


def _event_ids(v: ViolationRow) -> set[int]:
    """The events that link a violation to others: its detecting event (none for an end-of-run check) and its
    evidence, but for `CONTEXT_EVENT_TYPES`."""
    return ({e.event_id for e in v.evidence if e.event_type not in CONTEXT_EVENT_TYPES}
            | ({v.event_id} if v.event_id >= 0 else set()))


def _found_order(v: ViolationRow) -> tuple[float, bool, int]:
    """A violation's place in time: its time (an end-of-run check's is the loss it found), an end-of-run check after
    any event of the same instant."""
    return (v.time_s, v.event_id < 0, v.event_id)


_CHAIN_INTRO = ("Violations of one chain name a common event (the one that found them or their evidence, other than "
                "a broker's settings, a leader's start or a broker's start or crash), so they are most likely "
                "knock-on findings of one fault. Each chain's line names the event most of them name, then its "
                "violations per invariant in time order (a write found lost at the end of the run at its loss):")


def _chain_numbers(s: PartitionSection) -> dict[int, int]:
    """Chain number (from 1) of each chained violation of `s`, by `id` of its row."""
    return {id(v): n for n, chain in enumerate(s.chains, 1) for v in chain}


def chain_hub(chain: Sequence[ViolationRow]) -> tuple[int, int]:
    """The event most violations of `chain` name (the lowest id among equals) and how many of its rows name it. A
    row standing for a streak weighs its count: what its earliest names stands for the streak (alike violations,
    excused by one event)."""
    weight: dict[int, int] = {}
    rows: dict[int, int] = {}
    for v in chain:
        for event_id in _event_ids(v):
            weight[event_id] = weight.get(event_id, 0) + v.count
            rows[event_id] = rows.get(event_id, 0) + 1
    hub = min(weight, key=lambda e: (-weight[e], e))
    return hub, rows[hub]


def _chain_line(n: int, chain: Sequence[ViolationRow], naming: dict[int, int]) -> str:
    """`chain 1 (4 errors) through event 48 (append by broker 2 at 6.001 s), named by 3: truncation_safety x2
    (brokers 1, 2; 7.002-16.002 s), inconsistent_offsets (broker 1; 18.003 s), acked_write_lost (broker 1; end
    of run).` `naming`: per event, how many of the partition's violations name it, listed or not."""
    by_severity: dict[str, int] = {}
    by_invariant: dict[str, list[ViolationRow]] = {}
    for v in chain:
        by_severity[v.severity] = by_severity.get(v.severity, 0) + v.count
        by_invariant.setdefault(v.invariant, []).append(v)
    counts = ", ".join(f"{k:,} {'info' if sev == INFO else sev + 's' if k > 1 else sev}"
                       for sev, k in by_severity.items())
    hub_id, sharing = chain_hub(chain)
    described = next((e for v in chain for e in v.evidence if e.event_id == hub_id and e.what is not None), None)
    hub = described.text() if described else str(hub_id)
    # The chain is made of the listed rows; more may name its event beyond report.max_rows, and a row that stands
    # for a streak names what its earliest violation names.
    all_naming = naming.get(hub_id, 0)
    streaks = any(v.count > 1 for v in chain)
    listed = f"{sharing} listed row{'s' if sharing > 1 else ''}" if streaks else f"{sharing} listed"
    if all_naming > sharing:
        sharing_text = f"{listed} ({_num(all_naming)} of all the partition's violations name it)"
    else:
        sharing_text = listed if streaks else str(sharing)

    def group(name: str, rows: list[ViolationRow]) -> str:
        brokers = sorted({v.replica for v in rows if v.replica is not None})
        who = f"broker{'s' if len(brokers) > 1 else ''} {', '.join(map(str, brokers))}; " if brokers else ""
        first, last = min(v.time_range[0] for v in rows), max(v.time_range[1] for v in rows)
        when = f"{_secs(first)} s" if first == last else f"{_secs(first)}-{_secs(last)} s"
        # An end-of-run check is dated at the loss it found: say when it was found too.
        found = ", found at the end of the run" if any(v.event_id < 0 for v in rows) else ""
        n = sum(v.count for v in rows)
        return f"{name}{f' x{n:,}' if n > 1 else ''} ({who}{when}{found})"

    return (f"chain {n} ({counts}) through event {hub}, named by {sharing_text}: "
            + ", ".join(group(name, rows) for name, rows in by_invariant.items()) + ".")


def _common_cause_line(s: PartitionSection) -> str | None:
    """`All 1,782 violations name one event, most likely their common cause: event 2488 (...) (chain 1 below).`: the
    chain whose event at least half of the partition's violations name (listed or not); None where none does."""
    naming = dict(s.naming)
    best: tuple[int, int, str] | None = None
    for n, chain in enumerate(s.chains, 1):
        hub_id, _ = chain_hub(chain)
        count = naming.get(hub_id, 0)
        if best is None or count > best[1]:
            described = next((e for v in chain for e in v.evidence if e.event_id == hub_id and e.what is not None),
                             None)
            best = (n, count, described.text() if described else str(hub_id))
    total = s.violation_count
    if best is None or total < 2 or 2 * best[1] < total:
        return None
    n, count, hub = best
    who = f"All {_num(total)} violations" if count >= total else f"{_num(count)} of the {_num(total)} violations"
    return f"{who} name one event, most likely their common cause: event {hub} (chain {n} below)."


def _section_violation_table(s: PartitionSection) -> tuple[tuple[str, ...], list[tuple[str, tuple[str, ...]]]]:
    """The head and the (severity, cells) rows of a section's violation table: with a chain column first when
    some of its violations are chained."""
    numbers = _chain_numbers(s)
    if not numbers:
        return _VIOLATION_HEAD, [(v.severity, _violation_cells(v)) for v in s.violations]
    return (("chain", *_VIOLATION_HEAD),
            [(v.severity, (str(numbers[id(v)]) if id(v) in numbers else "–", *_violation_cells(v)))
             for v in s.violations])


def _where(v: ViolationRow) -> str:
    return "–" if v.topic is None else f"{v.topic}-{v.partition}"


def _data_loss_line(doc: ReportDocument) -> str | None:
    """The first question after a failure, answered in one sentence: how many acknowledged writes are gone (one per
    produce acknowledgement whose records the final leader lacks), acks=all and acks=1 apart. None where the audit's
    catalogue has neither invariant (an older audit row)."""
    by_name = {c.invariant: c for c in doc.invariants}
    acked, acks1 = by_name.get("acked_write_lost"), by_name.get("acks1_write_lost")
    if acked is None:
        return None
    if not acked.evaluated:
        return "Acknowledged writes lost: not judged (" + (acked.note or "not evaluated") + ")."
    n = acked.errors + acked.warnings
    parts = [f"{n} acks=all write(s)" + (
        "" if n == 0 else f" (acked_write_lost: {acked.errors} error(s), {acked.warnings} warning(s): "
                          + _loss_causes(doc.loss_causes, acked.warnings) + ")")]
    if acks1 is not None and acks1.evaluated:
        parts.append(f"{acks1.infos} acks=1 write(s) (which Kafka allows)")
    return "Acknowledged writes lost: " + " and ".join(parts) + ", per produce acknowledgement."


LOSS_CAUSE_WORDS: dict[str, str] = {
    "unclean_election": "lost to an unclean election alone",
    "crash_and_unclean_election": "lost both with a crashed leader's unflushed tail and to an unclean election",
    "crash_recovery": "lost with a crashed replica's unflushed data (its crash recovery)",
}
"""How the overview says each cause of `final_log.LOSS_CAUSES`."""


def _loss_causes(causes: dict[str, int], warnings: int) -> str:
    """`542 lost to an unclean election alone, 18 lost both ...`: the warnings split by the cause their messages
    name; the general rule where no warning names one (an audit from before the causes were written, or none
    excused)."""
    named = [(words, causes[c]) for c, words in LOSS_CAUSE_WORDS.items() if causes.get(c)]
    if not warnings or not named:
        return "a warning where an unclean election or a crash that lost unflushed data explains it"
    rest = warnings - sum(n for _, n in named)
    return ", ".join(f"{n:,} {w}" for w, n in named) + (f", {rest:,} other" if rest > 0 else "")


def _overview(doc: ReportDocument) -> list[str]:
    """Plain sentences (no markup) opening both renderings."""
    lines = [
        f"Audit {doc.audit_id} (started {doc.audit_started_at}, bronze version {_id(doc.bronze_version)}) of "
        f"{len(doc.runs)} run(s): {', '.join(doc.runs) or 'none'}.",
        f"{doc.errors} error(s), {doc.warnings} warning(s) and {doc.infos} info ({INFO_MEANING}); lag incidents "
        f"by verdict: {doc.verdict_line()}.",
        f"Fetch responses with an error: {doc.fetch_error_line()}.",
        f"Produce answers with an error: {doc.produce_error_line()}.",
    ]
    lost = _data_loss_line(doc)
    if lost:
        lines.insert(2, lost)
    if doc.run_starts:
        starts = [f"{run} at {at}" for run, at in doc.run_starts.items()]
        more = f"; {len(starts) - RUN_STARTS_SHOWN} more run(s)" if len(starts) > RUN_STARTS_SHOWN else ""
        lines.append("Times are seconds since each run's first event: "
                     + "; ".join(starts[:RUN_STARTS_SHOWN]) + more + ".")
    asked = f"{doc.asked_only} partition(s) nothing flagged drawn as asked (--partition)"
    if doc.flagged_total == 0:
        lines.append("No violations, lag incidents or unclean elections in a partition: "
                     + (f"{asked}." if doc.asked_only else "nothing to plot."))
    else:
        lines.append(f"{doc.flagged_total} partition(s) have a violation, a lag incident or an unclean election; "
                     f"{doc.ranked} "
                     f"plotted (worst first, cap report.max_partitions = {doc.max_partitions})"
                     + (f", {doc.asked_flagged} more drawn as asked (--partition)" if doc.asked_flagged else "")
                     + (f", {doc.not_plotted} more not plotted" if doc.not_plotted else "")
                     + (f"; {asked}." if doc.asked_only else "."))
    return lines


RUN_STARTS_SHOWN = 5
"""Runs whose first event's time the overview names (the rest are counted)."""

INFO_MEANING = "acks=1 writes lost, which Kafka allows: counted, never a failure"
"""What a finding of severity info is, as the overview says it (acks1_write_lost is the catalogue's only one)."""

_INVARIANT_HEAD = ("invariant", "severity", "evaluated", "errors", "warnings", "info")
_VIOLATION_HEAD = ("invariant", "severity", "replica", "time (s)", "event", "offset", "expected", "actual",
                   "evidence (event ids)", "message")
_FETCH_ERROR_HEAD = ("follower", "leader", "error", "responses", "first (s)", "last (s)")
_FAULT_HEAD = ("broker", "fault", "start (s)", "end (s)", "lasted (ms)", "cut off from", "direction")
_FAULT_INTRO = ("Faults the simulator held the partition's replicas in (broker_fault events; a real broker log has "
                "none): a GC pause stops the broker (a paused follower falls behind, a paused leader answers late); "
                "a disk stall blocks its log appends (a stalled follower falls behind, a stalled leader takes no "
                "produce); a network partition loses what crosses the cut (outbound: what the broker sends its "
                "peers, inbound: what they send it) until the heal. A pause or stall ends early at the broker's "
                "crash or restart:")
_OVERVIEW_FAULT_INTRO = ("Faults the simulator held the run's brokers in, as the overview's lanes draw them (a network "
                         "partition is a fault of every broker on either side of its cut):")
_ZOMBIE_NOTE = ("A leader \"deposed at\" a time before its incident began was a zombie: the controller had elected "
                "a newer leader, but this broker, not yet told (a LeaderAndIsr reaches it only once it can hear the "
                "controller again), kept leading in its old epoch and judged its followers by its own view, as "
                "Kafka's leader does. Its shrink is a proposal the controller could not commit (pending or "
                "superseded) or rejected; the followers it saw lagging may have been following the new leader all "
                "along, or been it.")


def _zombie_note(incidents: Sequence[IncidentRow]) -> str | None:
    return _ZOMBIE_NOTE if any(i.zombie for i in incidents) else None


_FETCH_ERROR_INTRO = ("Fetch responses with an error, as the followers saw them (NETWORK_EXCEPTION: the request got "
                      "no answer, the leader unreachable; a follower backs off and retries, and one that keeps "
                      "failing falls behind and out of the ISR):")
_INCIDENT_HEAD = ("run", "partition", "follower", "leader (epoch)", "last caught up (s)", "start (s)", "end (s)",
                  "peak time lag (ms)", "peak message lag", "lag.max (ms)", "shrink due (s)", "shrink (s)", "verdict",
                  "failed fetches")


NOT_APPLICABLE_NOTE = "not applicable"
"""How an invariant's audit note starts when some audited runs come from a source whose events cannot show it
(record-level invariants on broker logs): nothing was judged on those runs."""


def _not_applicable(c: InvariantCount) -> bool:
    return (c.note or "").startswith(NOT_APPLICABLE_NOTE)


def _invariant_cells(c: InvariantCount) -> tuple[str, ...]:
    # A check that did not run has no count: a 0 there would read as "passed".
    if not c.evaluated:
        return (c.invariant, c.severity, "n/a" if _not_applicable(c) else "no", "–", "–", "–")
    return (c.invariant, c.severity, "partly" if _not_applicable(c) else "yes", str(c.errors), str(c.warnings),
            str(c.infos))


def _applicability_lines(doc: ReportDocument) -> list[str]:
    """What the summary's n/a and partly mean, once per distinct note (the invariants named)."""
    by_note: dict[tuple[str, str], list[str]] = {}
    for c in doc.invariants:
        if _not_applicable(c):
            label = "partly" if c.evaluated else "n/a"
            by_note.setdefault((label, (c.note or "").split(";")[0]), []).append(c.invariant)
    return [f"{label}: {note} — {', '.join(names)}." for (label, note), names in by_note.items()]


def _violation_cells(v: ViolationRow) -> tuple[str, ...]:
    # No detecting event: an end-of-run check (the final logs) found it then, dated at the loss it found.
    first, last = v.time_range
    when = _secs(first) + (f"-{_secs(last)}" if last > first else "") + (
        " (found at the end of the run)" if v.event_id < 0 else "")
    # A streak's row is its earliest violation's: its message says so, not to be read as the whole row's.
    message = v.message if v.count <= 1 else f"the earliest of {v.count:,}: {v.message}"
    return (v.invariant, v.severity, _id(v.replica), when, _event(v.event_id), _streak_offsets(v),
            _id(v.expected), _id(v.actual), _evidence(v.evidence), message)


def _streak_offsets(v: ViolationRow) -> str:
    """`98`, or for a streak `98..663 (566 violations)`, `1138..1313 (60 violations over 176 offsets)` where they
    are fewer than the offsets (`, first found at 120` when its earliest is not its lowest: the expected / actual
    columns and the message are that one's)."""
    if v.count <= 1 or v.offsets is None:
        return _id(v.offset)
    lo, hi = v.offsets
    over = f" over {hi - lo + 1:,} offsets" if v.count < hi - lo + 1 else ""
    earliest = "" if v.offset is None or v.offset == lo else f", first found at {v.offset}"
    return f"{lo}..{hi} ({v.count:,} violations{over}{earliest})"


def _incident_cells(i: IncidentRow) -> tuple[str, ...]:
    epoch = "" if i.epoch is None else f" ({i.epoch})"
    # A deposition before the incident's end is part of the story: before its start, the leader was a zombie.
    ends = i.end_s if i.end_s is not None else float("inf")
    deposed = f", deposed at {_secs(i.deposed_s)}" if i.deposed_s is not None and i.deposed_s < ends else ""
    shrink = _secs(i.shrink_s) + (f" ({i.shrink_outcome})" if i.shrink_s is not None and i.shrink_outcome else "")
    return (i.run_id, f"{i.topic}-{i.partition}", str(i.follower), f"{i.leader}{epoch}{deposed}",
            _secs(i.caught_up_s), _secs(i.start_s), _secs(i.end_s, "ongoing"), _num(i.peak_time_lag_ms),
            _num(i.peak_message_lag), _num(i.lag_max_ms), _secs(i.deadline_s), shrink, i.verdict,
            f"{i.failed_fetches} ({', '.join(i.fetch_errors)})" if i.failed_fetches else "0")


def _fetch_error_cells(f: FetchErrorRow) -> tuple[str, ...]:
    return (_id(f.follower), _id(f.leader), f.error, _num(f.responses), _secs(f.first_s), _secs(f.last_s))


def _fault_cells(f: FaultRow) -> tuple[str, ...]:
    end = _secs(f.end_s) + (" (run's end)" if f.open else "")
    return (_id(f.broker), f.kind.replace("_", " "), _secs(f.start_s), end, _num(round((f.end_s - f.start_s) * 1000)),
            f.peers or "–", f.direction or "–")


ACKS_NAME: dict[int, str] = {-1: "acks=all", 0: "acks=0", 1: "acks=1"}

_PRODUCE_INTRO = ("What the producers were answered, per acks setting. The wait of an acks=all write is from the "
                  "leader's append to its acknowledgement: the time the HW took to cover it, which a follower that "
                  "lags but stays in the ISR stretches. The errors count answers, not writes: a producer retries a "
                  "write refused (NOT_ENOUGH_REPLICAS: the ISR below min.insync.replicas, nothing appended) or timed "
                  "out (REQUEST_TIMED_OUT: appended, the HW did not cover it within the request's timeout), so one "
                  "write can get several, and a stalled HW shows in them rather than in the waits:")


def _span(first: float | None, last: float | None) -> str:
    return f"at {_secs(first)} s" if first == last else f"{_secs(first)}-{_secs(last)} s"


def _burst(first: float | None, last: float | None, answers: int) -> str:
    return f"{_num(answers)} {'' if first == last else 'in '}{_span(first, last)}"


def _between(r: ProduceRow) -> str:
    """When the answers of `r` came: ` (20.012-33.970 s)` (or ` (at 20.012 s)`) for one burst, ` (in 2 bursts:
    200 in 15.072-19.990 s, 211 in 50.101-55.932 s)` for several (the first ones, and how many more); empty if
    unknown."""
    if len(r.bursts) > 1:
        more = r.burst_count - len(r.bursts)
        return (f" (in {r.burst_count} bursts: " + ", ".join(_burst(a, b, n) for a, b, n in r.bursts)
                + (f", {more} more" if more > 0 else "") + ")")
    if r.first_s is None or r.last_s is None:
        return ""
    return f" ({_span(r.first_s, r.last_s)})"


def _produce_lines(rows: Sequence[ProduceRow]) -> list[str]:
    """One line per acks setting: `acks=all: 1,204 acknowledged (waited 2 ms median, 9 ms p99, 15,002 ms at most,
    that one acknowledged at 31.250 s); answers with an error: 3 REQUEST_TIMED_OUT (20.012-33.970 s).`, the
    acknowledged first, then each error (with when the first and last came: an operator lines them up with the
    faults), the most first."""
    lines = []
    for acks in sorted({r.acks for r in rows}, key=lambda a: (a is None, a != -1, -(a or 0))):
        mine = [r for r in rows if r.acks == acks]
        ok = [r for r in mine if r.error == "NONE"]
        parts = []
        for r in ok:
            waited = ""
            if r.wait_max_ms is not None:
                of = (f" of the {_num(r.timed)} whose append is in the data"
                      if r.timed is not None and r.timed < r.answers else "")
                waited = (f" (waited {_num(r.wait_p50_ms)} ms median, {_num(r.wait_p99_ms)} ms p99, "
                          f"{_num(r.wait_max_ms)} ms at most{of}, that one acknowledged at {_secs(r.wait_max_s)} s)")
            # Kafka sends an acks=0 producer no answer: its writes are appended, never acknowledged.
            parts.append(f"{_num(r.answers)} {'appended' if acks == 0 else 'acknowledged'}{waited}")
        failed = sorted((r for r in mine if r.error != "NONE"), key=lambda r: (-r.answers, r.error))
        if failed:
            parts.append("answers with an error: " + ", ".join(f"{_num(r.answers)} {r.error}{_between(r)}"
                                                               for r in failed))
        name = ("acks unknown (refusals read from broker logs)" if acks is None
                else ACKS_NAME.get(acks, f"acks={acks}") + (" (no answer sent)" if acks == 0 else ""))
        lines.append(f"{name}: " + "; ".join(parts) + ".")
    return lines


def _settings_line(s: PartitionSection) -> str:
    """`Settings in force (broker_config events): replica.lag.time.max.ms 10000; min.insync.replicas 1 (topic
    risky); ...`."""
    return "Settings in force (broker_config events): " + "; ".join(f"{k} {v}" for k, v in s.settings) + "."


def _silence_line(s: PartitionSection, silence_ms: int) -> str | None:
    """`No produce answer for 4.501 s (30.000-34.501 s) ...`: the partition's longest stretches without any answer,
    or None where it had none of report.silence_ms."""
    if not s.produce_silences:
        return None
    spans = [f"{_secs(b - a)} s ({_span(a, b)}{', to the end of the run' if end else ''})"
             for a, b, end in s.produce_silences if a is not None and b is not None]
    more = s.produce_silence_count - len(s.produce_silences)
    return ("No produce answer for " + ", ".join(spans) + (f", and {more} more such stretch(es)" if more > 0 else "")
            + f" (at least {silence_ms / 1000:g} s each, report.silence_ms; the longest first): the producers' "
              "requests were waiting (an acks=all write is answered when the HW covers it or its request times out), "
              "were lost with a leader that had died, or were held back while the partition had no leader"
            + ("; or the producers had stopped" if any(end for _, _, end in s.produce_silences) else "") + ".")


def _produce_block(s: PartitionSection, silence_ms: int) -> list[str]:
    """The produce lines of a section: one per acks setting, then its silences."""
    silence = _silence_line(s, silence_ms)
    return _produce_lines(s.produce) + ([silence] if silence else [])


def _listed(shown: int, total: int, what: str, order: str = "") -> str | None:
    return None if total <= shown else f"{total - shown} more {what} not listed (cap report.max_rows{order})."


STREAK_NOTE = ("A row with a range of offsets stands for a streak of alike violations: one replica's, of one "
               "invariant and severity, whose messages differ only in their numbers (with the same excusing event, if "
               "any), at offsets that follow one another or found at one instant by one event (`60 violations over "
               "176 offsets`: the offsets between were not found). Its other columns are the earliest one's (its "
               "message says so); its time runs from the first to the last (for a lost write, when it left the leader "
               "in office) (`jobs.violation_streaks`).")


def _streak_note(s: PartitionSection) -> str | None:
    return STREAK_NOTE if any(v.count > 1 for v in s.violations) else None


# How a partition's violations are chosen when there are more than report.max_rows.
_TAKE_TURNS = "; each invariant's earliest are listed first"


# --- Markdown ------------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    # A pipe ends a cell and a newline ends the row: both would break the table.
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def markdown(doc: ReportDocument) -> str:
    """The report as Markdown (images referenced by relative file name)."""
    out = ["# replog incident report", "", f"Generated {doc.generated_at} from the lake `{doc.lake}`.", ""]
    out += [*_overview(doc), ""]
    if doc.overviews:
        out += ["## Cluster overview", "", _overview_legend(doc), ""]
        for o in doc.overviews:
            out += [f"![Cluster overview of run {_md_cell(o.run_id)}]({o.png})", ""]
            if o.faults:
                out += [_OVERVIEW_FAULT_INTRO, ""]
                out += _md_table(_FAULT_HEAD, [_fault_cells(f) for f in o.faults])
                left = _listed(len(o.faults), o.fault_count, "faults", "; the earliest first")
                out += [left, ""] if left else []
        note = _overviews_left(doc)
        out += [note, ""] if note else []
    out += ["## Audit summary", ""]
    out += _md_table(_INVARIANT_HEAD, [_invariant_cells(c) for c in doc.invariants])
    out += [n for line in _applicability_lines(doc) for n in (line, "")]
    if doc.not_evaluated:
        out += [f"Not evaluated by the Spark audit ({len(doc.not_evaluated)}; run `replog check` for them): "
                + ", ".join(f"`{n}`" for n in doc.not_evaluated) + ".", ""]
    if doc.run_level:
        out += ["Violations not tied to a partition:", ""]
        out += _md_table(("run", *_VIOLATION_HEAD), [(v.run_id, *_violation_cells(v)) for v in doc.run_level])
        note = _listed(len(doc.run_level), doc.run_level_total, "run-level violations")
        out += [note, ""] if note else []
    out += ["## Lag incidents", ""]
    if not doc.incidents_total:
        out += ["No lag incidents.", ""]
    else:
        out += _md_table(("verdict", "incidents", "meaning"),
                         [(k, str(v), VERDICT_MEANING.get(k, "")) for k, v in sorted(doc.verdicts.items())])
        out += _md_table(_INCIDENT_HEAD, [_incident_cells(i) for i in doc.incidents])
        out += [n for note in (_listed(len(doc.incidents), doc.incidents_total, "incidents"),
                               _zombie_note(doc.incidents)) if note for n in (note, "")]
    out += ["## Partitions", ""]
    if not doc.flagged_sections:
        out += ["No violations and no lag incidents in any partition.", ""]
    if doc.sections:
        out += [_picture_legend(doc), ""]
    for s in doc.sections:
        out += [f"### {s.title}", "",
                s.counts, ""]
        if s.asked_line:
            out += [s.asked_line, ""]
        if s.settings:
            out += [_md_cell(_settings_line(s)), ""]
        cause = _common_cause_line(s)
        if cause:
            out += [_md_cell(cause), ""]
        if s.violations:
            head, rows = _section_violation_table(s)
            out += _md_table(head, [cells for _, cells in rows])
            note = _listed(s.listed_count, s.violation_count, "violations", _TAKE_TURNS)
            out += [n for line in (_streak_note(s), note, _spread_line(s.per_invariant) if note else None) if line
                    for n in (line, "")]
            if s.chains:
                out += [_CHAIN_INTRO, "", *(f"- {_md_cell(_chain_line(n, c, dict(s.naming)))}"
                                        for n, c in enumerate(s.chains, 1)), ""]
            out += [f"- `{name}`: {_md_cell(rule)} ({_md_cell(offsets)})" for name, rule, offsets in s.rules]
            out += [""] if s.rules else []
        if s.incidents:
            out += _md_table(_INCIDENT_HEAD, [_incident_cells(i) for i in s.incidents])
            out += [n for note in (_listed(len(s.incidents), s.incident_count, "incidents"), _zombie_note(s.incidents))
                    if note for n in (note, "")]
        if s.produce:
            out += [_PRODUCE_INTRO, "", *(f"- {_md_cell(line)}" for line in _produce_block(s, doc.silence_ms)), ""]
        if s.fetch_errors:
            out += [_FETCH_ERROR_INTRO, ""]
            out += _md_table(_FETCH_ERROR_HEAD, [_fetch_error_cells(f) for f in s.fetch_errors])
            note = _listed(len(s.fetch_errors), s.fetch_error_groups, "fetch error groups", "; the earliest first")
            out += [note, ""] if note else []
        if s.faults:
            out += [_FAULT_INTRO, ""]
            out += _md_table(_FAULT_HEAD, [_fault_cells(f) for f in s.faults])
            note = _listed(len(s.faults), s.fault_count, "faults", "; the earliest first")
            out += [note, ""] if note else []
        if s.png:
            out += [f"![{_md_cell(s.title)}]({s.png})", ""]
            key = evidence_key_text(s.evidence_key)
            out += [_md_cell(key), ""] if key else []
    if doc.not_plotted:
        out += [f"{doc.not_plotted} more flagged partition(s) not plotted (cap report.max_partitions = "
                f"{doc.max_partitions}); `replog report --run RUN_ID` narrows the report to one run.", ""]
    return "\n".join(out)


def _overview_legend(doc: ReportDocument) -> str:
    return ("Each run as a broker dashboard would have shown it, time in seconds since its first event: on top "
            "the partitions under-replicated, under min ISR and offline (no leader, as the controller saw it: until "
            "it fences a crashed leader, that broker still leads its partitions), and the followers lagging beyond "
            "replica.lag.time.max.ms behind a leader still in office (the most at once in each time bucket; a "
            "deposed leader's view is in the lag table only); in the middle the ISR shrinks (up) "
            "and expands (down) per bucket that the leaders committed (what IsrShrinksPerSec and IsrExpandsPerSec "
            "count, plus the commits a leader learnt from the metadata before the AlterPartition answer, which those "
            "meters miss), and, hatched on top, the ISR changes by the controller that removed a replica (an "
            "election or a LeaderAndIsr with a smaller ISR, which those metrics do not count); below, one lane per "
            "broker, grey while it is down, with its crashes, restarts and shutdowns and the elections that made it "
            "leader (red stars: unclean). The faults the simulator "
            "injected into a broker (broker_fault events) are thin bars on its lane from start to end: a network "
            "partition (purple, along the lane's upper edge: the broker cut off from some of its peers, until the "
            "heal or the run's end), a GC pause (pink) or a disk stall (amber) along its lower edge; a short one is "
            "drawn a little wider than it lasted, so that it shows. On the upper panels, faint red lines mark the "
            "crashes and faint bands of the same colours the faults' times. Which peers a partition cut off, and in "
            "which direction, is listed below each overview and with each flagged partition whose replica it was.")


def _overviews_left(doc: ReportDocument) -> str | None:
    return None if doc.overviews_capped <= 0 else (
        f"{doc.overviews_capped} more run(s) without an overview (cap report.max_partitions = {doc.max_partitions}); "
        "`replog report --run RUN_ID` draws one run.")


def _picture_legend(doc: ReportDocument) -> str:
    return ("Each picture: LEO (wide line) and HW (dashed) of every replica over time, one colour per broker, "
            "each broker's lines drawn a few points above or below the true value so that equal lines stay visible "
            "(two lines drawn a little apart, one just above or under the other, may be equal), the leader's over "
            "the others while "
            "it leads, and broken while the broker is down; "
            "below, one lane per replica, shaded while it is in the ISR (outlined and dotted while it is an eligible "
            "leader replica, KIP-966: out of the ISR yet electable), with a black strip while it leads (both as the "
            "controller saw them: it keeps a crashed leader until its session times out), its crashes and restarts "
            "marked and a grey-hatched veil while it was down, orange ticks where it got a fetch response with an "
            "error, and the faults the simulator held it in as on the overview: a network partition (purple) in its "
            "upper half, labelled "
            "with the nodes it cut the broker off from where there is room, a GC pause (pink) or disk stall "
            "(amber) in its lower half. Dotted "
            "vertical lines are leader changes (new leader and epoch; red dashed: an unclean election, which may "
            "lose acknowledged data; in the old truncation modes of KIP-101 and KIP-279 a clean one can too), "
            "shaded "
            "intervals are lag incidents (red: late / missing / premature), crosses and triangles are errors and "
            "warnings with the invariant name, small blue-grey diamonds info findings (an acks=1 write lost, which "
            "Kafka allows), numbered rings their evidence events in order (listed under the picture; where a "
            "picture is crowded, a ring's label is its number alone). "
            f"Time is seconds since the run's first event. {doc.bucket_note}").strip()


# --- HTML ----------------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1400px;
       color: #222; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tr.error td { background: #fde8e8; } tr.warning td { background: #fff4e0; } tr.bad td { background: #fde8e8; }
tr.info td { background: #eef2f6; }
img { max-width: 100%; border: 1px solid #ddd; }
code { background: #f3f3f3; padding: 0 0.2em; }
.note { color: #555; }
"""


def _h(text: object) -> str:
    return html.escape(str(text), quote=True)


def _html_table(head: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """`rows` are (row css class, cells)."""
    out = ["<table>", "<tr>" + "".join(f"<th>{_h(c)}</th>" for c in head) + "</tr>"]
    for cls, cells in rows:
        attr = f' class="{_h(cls)}"' if cls else ""
        out.append(f"<tr{attr}>" + "".join(f"<td>{_h(c)}</td>" for c in cells) + "</tr>")
    return [*out, "</table>"]


def _row_class(c: InvariantCount) -> str:
    """An audit summary row's class: its gravest severity found (none: no colour)."""
    return "error" if c.errors else "warning" if c.warnings else INFO if c.infos else ""


def _p(text: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<p{attr}>{_h(text)}</p>"


def html_page(doc: ReportDocument) -> str:
    """The report as one HTML page (inline CSS; images are the PNG files next to it)."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>replog incident report {_h(doc.audit_id)}</title>", f"<style>{_CSS}</style>", "</head>",
           "<body>", "<h1>replog incident report</h1>",
           _p(f"Generated {doc.generated_at} from the lake {doc.lake}.", "note")]
    out += [_p(line) for line in _overview(doc)]
    if doc.overviews:
        out += ["<h2>Cluster overview</h2>", _p(_overview_legend(doc))]
        for o in doc.overviews:
            out.append(f'<p><img src="{_h(o.png)}" alt="{_h("Cluster overview of run " + o.run_id)}"></p>')
            if o.faults:
                out.append(_p(_OVERVIEW_FAULT_INTRO))
                out += _html_table(_FAULT_HEAD, [("", _fault_cells(f)) for f in o.faults])
                left = _listed(len(o.faults), o.fault_count, "faults", "; the earliest first")
                out += [_p(left, "note")] if left else []
        note = _overviews_left(doc)
        out += [_p(note, "note")] if note else []
    out += ["<h2>Audit summary</h2>"]
    out += _html_table(_INVARIANT_HEAD, [(_row_class(c), _invariant_cells(c)) for c in doc.invariants])
    out += [_p(line, "note") for line in _applicability_lines(doc)]
    if doc.not_evaluated:
        out.append(_p(f"Not evaluated by the Spark audit ({len(doc.not_evaluated)}; run `replog check` for them): "
                      + ", ".join(doc.not_evaluated) + "."))
    if doc.run_level:
        out.append(_p("Violations not tied to a partition:"))
        out += _html_table(("run", *_VIOLATION_HEAD),
                           [(v.severity, (v.run_id, *_violation_cells(v))) for v in doc.run_level])
        note = _listed(len(doc.run_level), doc.run_level_total, "run-level violations")
        out += [_p(note, "note")] if note else []
    out.append("<h2>Lag incidents</h2>")
    if not doc.incidents_total:
        out.append(_p("No lag incidents."))
    else:
        out += _html_table(("verdict", "incidents", "meaning"),
                           [("bad" if k in BAD_VERDICTS else "", (k, str(v), VERDICT_MEANING.get(k, "")))
                            for k, v in sorted(doc.verdicts.items())])
        out += _html_table(_INCIDENT_HEAD, [("bad" if i.verdict in BAD_VERDICTS else "", _incident_cells(i))
                                            for i in doc.incidents])
        out += [_p(note, "note") for note in (_listed(len(doc.incidents), doc.incidents_total, "incidents"),
                                              _zombie_note(doc.incidents)) if note]
    out.append("<h2>Partitions</h2>")
    if not doc.flagged_sections:
        out.append(_p("No violations and no lag incidents in any partition."))
    if doc.sections:
        out.append(_p(_picture_legend(doc), "note"))
        out.append("<ul>" + "".join(f'<li><a href="#{_h(s.anchor)}">{_h(s.title)}</a></li>' for s in doc.sections)
                   + "</ul>")
    for s in doc.sections:
        out += [f'<h3 id="{_h(s.anchor)}">{_h(s.title)}</h3>',
                _p(s.counts)]
        if s.asked_line:
            out.append(_p(s.asked_line, "note"))
        if s.settings:
            out.append(_p(_settings_line(s), "note"))
        cause = _common_cause_line(s)
        if cause:
            out.append(_p(cause))
        if s.violations:
            out += _html_table(*_section_violation_table(s))
            note = _listed(s.listed_count, s.violation_count, "violations", _TAKE_TURNS)
            spread = _spread_line(s.per_invariant) if note else None
            out += [_p(line, "note") for line in (_streak_note(s), note, spread) if line]
            if s.chains:
                out += [_p(_CHAIN_INTRO), "<ul>" + "".join(f"<li>{_h(_chain_line(n, c, dict(s.naming)))}</li>"
                                                           for n, c in enumerate(s.chains, 1)) + "</ul>"]
            if s.rules:
                out.append("<ul>" + "".join(f"<li><code>{_h(name)}</code>: {_h(rule)} ({_h(offsets)})</li>"
                                            for name, rule, offsets in s.rules) + "</ul>")
        if s.incidents:
            out += _html_table(_INCIDENT_HEAD, [("bad" if i.verdict in BAD_VERDICTS else "", _incident_cells(i))
                                                for i in s.incidents])
            out += [_p(note, "note") for note in (_listed(len(s.incidents), s.incident_count, "incidents"),
                                                  _zombie_note(s.incidents)) if note]
        if s.produce:
            lines = _produce_block(s, doc.silence_ms)
            out += [_p(_PRODUCE_INTRO), "<ul>" + "".join(f"<li>{_h(line)}</li>" for line in lines) + "</ul>"]
        if s.fetch_errors:
            out.append(_p(_FETCH_ERROR_INTRO))
            out += _html_table(_FETCH_ERROR_HEAD, [("", _fetch_error_cells(f)) for f in s.fetch_errors])
            note = _listed(len(s.fetch_errors), s.fetch_error_groups, "fetch error groups", "; the earliest first")
            out += [_p(note, "note")] if note else []
        if s.faults:
            out.append(_p(_FAULT_INTRO))
            out += _html_table(_FAULT_HEAD, [("", _fault_cells(f)) for f in s.faults])
            note = _listed(len(s.faults), s.fault_count, "faults", "; the earliest first")
            out += [_p(note, "note")] if note else []
        if s.png:
            out.append(f'<p><img src="{_h(s.png)}" alt="{_h(s.title)}"></p>')
            key = evidence_key_text(s.evidence_key)
            out += [_p(key, "note")] if key else []
    if doc.not_plotted:
        out.append(_p(f"{doc.not_plotted} more flagged partition(s) not plotted (cap report.max_partitions = "
                      f"{doc.max_partitions}); `replog report --run RUN_ID` narrows the report to one run.", "note"))
    out += ["</body>", "</html>", ""]
    return "\n".join(out)
