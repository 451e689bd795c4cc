"""The incident report's picture of one partition: pure matplotlib on plain Python / pandas data, no Spark.

One figure per partition, two panels sharing the time axis (seconds since the run's first event):

  * top — every replica's log end offset (solid) and high watermark (dashed) as step lines, one
    colour per broker; where the report aggregated several changes into one time bucket, a light
    band shows the bucket's min..max (so a truncation or an HW drop inside a bucket stays visible);
    violations as markers at their time (and offset, when the invariant has one) labelled with the
    invariant name;
  * bottom — one lane per assigned replica: shaded while it is in the committed ISR (hatched when it
    left and rejoined inside one bucket), outlined and dotted while it is an eligible leader replica (KIP-966:
    out of the ISR, yet electable), a dark strip while it leads, its crashes and restarts marked (veiled while
    down), orange ticks along its top edge where it got a fetch response with an error, and the faults the simulator
    held it in (`broker_fault`) as thin bars as on the run's overview (`jobs.fault_plot`): a network partition
    in the upper half, labelled with the nodes it cut the broker off from, a GC pause or disk stall in the lower.

Both panels carry the leader changes (vertical lines labelled with the new leader and epoch; an unclean
election, which may lose acknowledged data, in red and dashed) and the lag incidents (shaded intervals labelled
with the follower and the verdict).

Rendering goes through `matplotlib.figure.Figure` and the Agg canvas directly, never `pyplot`: no
global figure registry, no display, safe on a driver without a screen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.path import Path as MplPath
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import Bbox, offset_copy

from jobs.fault_plot import MIN_FAULT_WIDTH, FaultSpan, draw_fault_bars, fault_handles, fault_kinds, partition_label
from jobs.report_document import BAD_VERDICTS, NumberedEvidence
from replication_core.checker.catalogue import ERROR, INFO, SEVERITIES, WARNING

OFFSET_COLUMNS: tuple[str, ...] = ("replica", "t_s", "hw", "leo", "hw_min", "hw_max", "leo_min", "leo_max")
"""Columns of `PartitionPlot.offsets`: one row per replica and time bucket; `hw` / `leo` are the values at
the end of the bucket, the `_min` / `_max` columns their range inside it."""

ISR_COLUMNS: tuple[str, ...] = ("replica", "t_s", "in_isr", "in_isr_whole", "in_elr")
"""Columns of `PartitionPlot.isr`: one row per assigned replica and time bucket; `in_isr` is the membership
at the end of the bucket, `in_isr_whole` whether no state that began in the bucket took it out of the ISR, `in_elr`
whether it was an eligible leader replica (KIP-966) at the end of the bucket."""

ELR_LABEL = "eligible leader replica\n(out of the ISR, electable)"
"""The legend's entry for the ELR bands (shown only where a replica was one)."""
MAX_LEADER_LABELS = 12
"""Beyond this many leader changes the lines are drawn without text (labels would overlap)."""
LEADER_LABEL_ROWS = 2
"""Heights at the top of the offsets panel that leader change labels may take, each the highest free one (two fit in
the headroom `_offset_limits` leaves above the highest line)."""
TOP_BAND = 0.96
"""Height (axes fraction) of the marks and evidence rings of violations without an offset."""
EVIDENCE_LABEL_HEADROOM = 14
"""Points an evidence label may reach above the offsets panel (the top band's labels start above it), short of the
subtitle."""
MAX_VIOLATION_LABELS = 8
"""Violation markers beyond this many are drawn without text."""
MAX_INFO_LABELS = 1
"""Labels per info invariant: its findings tell one story many times (the acks=1 writes an isolated leader took,
lost at the failover), so its first is labelled with the count of the others, and its evidence drawn once."""

EVIDENCE_LABEL_STEPS = 4
"""Heights an evidence label may climb to above its ring (then hang down to below it) to stay clear of the labels
before it: few, since a label further up reads as a neighbour's (beyond, its number alone)."""
EVIDENCE_NUMBER_STEPS = 18
"""Heights a number alone may go up or down to (a number hidden under a box is no use; it is short and tied to its
ring by a line)."""
EVIDENCE_TIE_POINTS = 20.0
"""How far (points, up or down) an evidence label may sit from its ring without a line to it: its first two steps."""
EVIDENCE_LABEL_SIDES: tuple[tuple[float, str], ...] = ((-4.0, "left"), (4.0, "right"), (7.0, "left"))
"""Where an evidence number may sit at each step, in order (x offset in points, alignment): starting just left of
its ring's centre, ending just right of it, or starting clear of the ring (beside a violation's box that ends at the
ring)."""
DODGE_POINTS = 2.5
"""Vertical shift between replicas' lines, in points (so equal offsets do not hide each other)."""
LANE_FAULT_OFFSETS = {"network_partition": -0.14, "gc_pause": 0.08, "disk_stall": 0.08}
"""Centre of a fault kind's bar relative to a replica lane's centre (inverted axis: negative is upper), between
the fetch-error ticks along the lane's top edge and the leader strip along its bottom."""
MAX_FAULT_LABELS = 12
"""Network partitions labelled with their peers at most (the bars are drawn for all)."""

_PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f", "#bcbd22", "#e377c2")
_LIFECYCLE_STYLE = {"crash": ("#d62728", "X"), "restart": ("#2ca02c", ">"), "start": ("#2ca02c", ">"),
                    "shutdown": ("#555555", "s"), "controlled_shutdown": ("#555555", "s")}
_VERDICT_SHORT = {"on_time": "removed from the ISR in time", "late": "removed from the ISR late",
                  "missing": "never removed from the ISR", "recovered": "caught up in time",
                  "leader_lost": "the leader changed first", "ongoing": "too early to judge",
                  "not_in_isr": "out of the ISR by another route", "premature": "removed while not lagging"}
INFO_COLOUR = "#5b7c99"
"""Findings of severity info (an acks=1 write lost, which Kafka allows): a calm blue-grey, apart from the red and
orange of errors and warnings and from the brokers' colours."""
_SEVERITY_STYLE = {ERROR: ("#d62728", "X"), WARNING: ("#ff7f0e", "^"), INFO: (INFO_COLOUR, "D")}
_MARK_SIZE = {INFO: 8.0}
"""Marker size per severity where not 13: an info diamond stays smaller than an error's cross."""
SEVERITY_LEGEND = {ERROR: "error", WARNING: "warning", INFO: "info: acks=1 write lost\n(Kafka allows it)"}
"""The legend's entry for the marks of each severity present."""
UNCLEAN_COLOUR = "#b2182b"
FETCH_ERROR_COLOUR = "#e6550d"


@dataclass(frozen=True)
class LeaderChange:
    """A new leader (None = the partition went offline) and its epoch, from `time_s` on."""

    time_s: float
    leader: int | None
    epoch: int | None
    unclean: bool = False
    """The controller elected it from outside the ISR and the ELR: unclean.leader.election.enable, or (KIP-966) the
    last known leader coming back after an unclean shutdown."""
    from_elr: bool = False
    """The controller elected it from the eligible leader replicas, the ISR being empty (KIP-966)."""


@dataclass(frozen=True)
class EvidencePoint:
    """An event that proves a violation: when, and a short label (`append by broker 2`)."""

    time_s: float
    label: str
    event_id: int | None = None
    """The event's id, for the picture's key (`evidence_key`); None where not known."""


@dataclass(frozen=True)
class ViolationMark:
    """One invariant violation to mark: its time, name, severity, (when it has them) replica and offset, and
    the evidence events that lead to it."""

    time_s: float
    invariant: str
    severity: str
    replica: int | None = None
    offset: int | None = None
    evidence: tuple[EvidencePoint, ...] = ()
    end_of_run: bool = False
    """Found at the end of the run (a lost write): `replica` is the final leader, which lacks the record, and the
    mark sits where the write left the leader then in office, which may be another broker."""
    streak: tuple[int, int, int] | None = None
    """(lowest offset, highest offset, count) where the mark stands for a streak of alike violations
    (`jobs.violation_streaks`); it sits at the earliest's offset."""


@dataclass(frozen=True)
class LossSpan:
    """Writes an end-of-run check found lost that left the leader in office at one instant (`time_s`): `count` of
    them, at offsets `first_offset`..`last_offset`, of one invariant and severity. The marks stop at max_rows; a span
    shows where all of them are."""

    time_s: float
    invariant: str
    severity: str
    first_offset: int
    last_offset: int
    count: int


@dataclass(frozen=True)
class LifecycleMark:
    """A broker crashed, restarted or shut down at `time_s` (`action` and `reason` as in the broker_lifecycle
    event)."""

    time_s: float
    broker: int
    action: str
    reason: str | None = None
    """`UNSURE_DOWN` for a crash read from broker logs at the next start, dated just after the broker's last line."""


@dataclass(frozen=True)
class FetchErrorMark:
    """Follower `follower` got a fetch response with an error at `time_s` (the first one of its time bucket)."""

    time_s: float
    follower: int


@dataclass(frozen=True)
class IncidentSpan:
    """A lag incident: the follower was beyond replica.lag.time.max.ms from `start_s` to `end_s` (None: to
    the end of the data)."""

    start_s: float
    end_s: float | None
    follower: int
    verdict: str
    leader: int | None = None
    lag_max_ms: int | None = None
    shrink_outcome: str | None = None
    """What became of the leader's shrink: committed, rejected, superseded or pending (never answered)."""
    zombie: bool = False
    """The controller had deposed the leader before the incident began (`IncidentRow.zombie`)."""

    @property
    def meaning(self) -> str | None:
        """The verdict in words, as the label says it: a shrink the controller never committed says so."""
        if self.verdict in ("on_time", "late") and self.shrink_outcome in ("pending", "superseded", "rejected"):
            return "shrink rejected" if self.shrink_outcome == "rejected" else "shrink never committed"
        return _VERDICT_SHORT.get(self.verdict)


@dataclass(frozen=True)
class PartitionPlot:
    """Everything one partition's figure shows; all times are seconds since the run's first event."""

    run_id: str
    topic: str
    partition: int
    end_s: float
    replicas: tuple[int, ...]
    offsets: pd.DataFrame
    isr: pd.DataFrame
    leaders: tuple[LeaderChange, ...] = ()
    violations: tuple[ViolationMark, ...] = ()
    incidents: tuple[IncidentSpan, ...] = ()
    lifecycle: tuple[LifecycleMark, ...] = ()
    fetch_errors: tuple[FetchErrorMark, ...] = ()
    faults: tuple[FaultSpan, ...] = ()
    """Broker faults of the run (the report gives the replicas' first ones, when `faults_total` is larger); those
    of the replicas are drawn."""
    faults_total: int = 0
    """All the replicas' faults, when `faults` holds only the first ones."""
    controllers: tuple[int, ...] = ()
    """Node ids known to be the run's controllers: a network partition's label names them so."""
    bucket_ms: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)
    violation_totals: tuple[tuple[str, str, int], ...] = ()
    """(severity, invariant, count) of all the partition's violations, when `violations` marks only the first
    ones; the headline counts these."""
    loss_spans: tuple[LossSpan, ...] = ()
    """Where the lost writes are, per instant they left the leader in office (the report's largest first)."""

    @property
    def totals(self) -> tuple[tuple[str, str, int], ...]:
        """(severity, invariant, count) of all the partition's violations: `violation_totals`, else the marked ones."""
        return self.violation_totals or tuple((v.severity, v.invariant, 1) for v in self.violations)

    def __post_init__(self) -> None:
        for name, frame, cols in (("offsets", self.offsets, OFFSET_COLUMNS), ("isr", self.isr, ISR_COLUMNS)):
            missing = [c for c in cols if c not in frame.columns]
            if missing:
                raise ValueError(f"PartitionPlot.{name} lacks columns {missing} (has {list(frame.columns)})")
        if not math.isfinite(self.end_s) or self.end_s < 0:
            raise ValueError(f"PartitionPlot.end_s must be a finite time >= 0, got {self.end_s!r}")


def headline(data: PartitionPlot) -> str:
    """One line saying what went wrong in the partition, e.g. `1 error (acked_write_lost) · 3 info
    (acks1_write_lost) · 1 lag incident`: the severities gravest first, then unclean elections and incidents."""
    return " · ".join(headline_parts(data)) or "no violation or lag incident"


def headline_parts(data: PartitionPlot) -> list[str]:
    """The parts of `headline`, one per severity, unclean elections and lag incidents."""
    totals = data.totals
    parts = []
    for severity in SEVERITIES:
        names = sorted({name for sev, name, _ in totals if sev == severity})
        n = sum(count for sev, _, count in totals if sev == severity)
        if n:
            # "3 info", as the audit and the check say it
            said = f"{n:,} {severity}" if severity == INFO else plural(n, severity)
            parts.append(f"{said} ({', '.join(names)})")
    unclean = sum(1 for c in data.leaders if c.unclean)
    if unclean:
        parts.append(plural(unclean, "unclean election"))
    if data.incidents:
        verdicts = sorted({i.verdict for i in data.incidents})
        n = len(data.incidents)
        parts.append(f"{plural(n, 'lag incident')} ({', '.join(verdicts)})")
    return parts


def _colour(data: PartitionPlot, replica: int | None) -> str:
    if replica is None or replica not in data.replicas:
        return "#444444"
    return _PALETTE[data.replicas.index(replica) % len(_PALETTE)]


def _extended(frame: pd.DataFrame, end_s: float) -> pd.DataFrame:
    """The series sorted by time with its last row repeated at `end_s`, so the last step reaches the end."""
    frame = frame.sort_values("t_s", kind="stable")
    if len(frame) and frame["t_s"].iloc[-1] < end_s:
        last = frame.iloc[[-1]].copy()
        last["t_s"] = end_s
        frame = pd.concat([frame, last], ignore_index=True)
    return frame


def _runs(t: Sequence[float], flags: Sequence[bool], end_s: float) -> list[tuple[float, float]]:
    """(start, width) of the maximal stretches where a step function (value flags[i] from t[i]) is true."""
    out: list[tuple[float, float]] = []
    start: float | None = None
    for i, (ti, on) in enumerate(zip(t, flags, strict=True)):
        if on and start is None:
            start = ti
        if not on and start is not None:
            out.append((start, ti - start))
            start = None
        if i == len(t) - 1 and start is not None:
            out.append((start, max(end_s, ti) - start))
    return out


def _leader_spans(data: PartitionPlot) -> dict[int, list[tuple[float, float]]]:
    """Per broker, the (start, width) stretches during which it led."""
    spans: dict[int, list[tuple[float, float]]] = {}
    changes = sorted(data.leaders, key=lambda c: c.time_s)
    for i, c in enumerate(changes):
        end = changes[i + 1].time_s if i + 1 < len(changes) else data.end_s
        if c.leader is not None and end > c.time_s:
            spans.setdefault(c.leader, []).append((c.time_s, end - c.time_s))
    return spans


def _dodge(ax, data: PartitionPlot, replica: int):  # type: ignore[no-untyped-def]
    """Data coordinates shifted by a few points per replica: replicas in step (the normal case) draw
    identical lines, and without the shift only the last one drawn would be visible."""
    lane = data.replicas.index(replica) if replica in data.replicas else 0
    shift = (lane - (len(data.replicas) - 1) / 2) * DODGE_POINTS
    return offset_copy(ax.transData, fig=ax.figure, y=shift, units="points")


INCIDENT_LABEL_BAD, INCIDENT_LABEL_OTHER = "#8b0000", "#6b4e00"
"""Incident label colours: late / missing / premature, and every other verdict (dark amber, as its shading)."""
DOWN_FACE, DOWN_EDGE = (1.0, 1.0, 1.0, 0.55), "#777777"
"""A down broker's lane: a translucent white veil hatched grey over its ISR shading and leader strip."""
DOWN_ACTIONS: tuple[str, ...] = ("crash", "shutdown")
"""broker_lifecycle actions after which a broker is down until its next `UP_ACTIONS` one."""
UP_ACTIONS: tuple[str, ...] = ("start", "restart")
"""broker_lifecycle actions that bring a broker up."""
UNSURE_DOWN = "unclean_start"
"""The reason of a crash whose time is not known: read from broker logs as the broker started again (its log
directory had no clean shutdown file), dated just after the last line the crashed process printed. The broker went
down at some time in the stretch to its start."""
UNSURE_FACE, UNSURE_HATCH = (1.0, 1.0, 1.0, 0.3), ".."
"""The stretch a broker went down in, at a time not known: a fainter veil, dotted."""
UNSURE_LABEL = "broker down at some time\n(crash read at its restart,\nfrom its last line before)"
"""The legend of that veil, in both pictures."""


def down_spans(lifecycle: Sequence[LifecycleMark], broker: int, end_s: float,
               unsure: bool | None = None) -> list[tuple[float, float]]:
    """(from, to) of the stretches in which `broker` was down: from a crash or shutdown to its next start or
    restart, or to `end_s`. `unsure` True: only those that open with a crash of unknown time (`UNSURE_DOWN`);
    False: only the others."""
    spans: list[tuple[float, float, bool]] = []
    down_from: tuple[float, bool] | None = None
    for m in sorted((m for m in lifecycle if m.broker == broker), key=lambda m: m.time_s):
        if m.action in DOWN_ACTIONS and down_from is None:
            down_from = (m.time_s, m.action == "crash" and m.reason == UNSURE_DOWN)
        elif m.action in UP_ACTIONS and down_from is not None:
            spans.append((down_from[0], m.time_s, down_from[1]))
            down_from = None
    if down_from is not None and down_from[0] < end_s:
        spans.append((down_from[0], end_s, down_from[1]))
    return [(a, b) for a, b, u in spans if unsure is None or u == unsure]


def broken_at(t: np.ndarray, y: np.ndarray, spans: Sequence[tuple[float, float]],
              step_in: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A step series (value y[i] from t[i]) with no value inside `spans`: a NaN at each span's start, and at its
    end the value then in force, so a line drawn through it stops at the start and resumes at the end.
    `step_in`: resume with the value in force just before the end instead, so that a change at that instant is
    drawn as a step of the resumed line (for spans another drawing of the same series covers)."""
    if not spans or not len(t):
        return t, y
    times, values = list(t), list(y)
    for start, stop in spans:
        before = [i for i, ti in enumerate(times) if ti < stop or (ti == stop and not step_in)]
        resumed = values[before[-1]] if before and stop < times[-1] else None
        # (time, 1, value) for the series' points, (time, 0, value) for the gap's: a resumed value goes before a
        # point of the same instant, which then steps from it.
        keep = [(ti, 1, v) for ti, v in zip(times, values, strict=True) if not start <= ti < stop]
        keep.append((start, 0, float("nan")))
        if resumed is not None:
            keep.append((stop, 0, resumed))
        keep.sort(key=lambda p: (p[0], p[1]))
        times, values = [p[0] for p in keep], [p[2] for p in keep]
    return np.asarray(times, dtype=float), np.asarray(values, dtype=float)


def merged(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """(from, to) spans with the overlapping and touching ones joined, in time order."""
    out: list[tuple[float, float]] = []
    for start, stop in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def outside(spans: Sequence[tuple[float, float]], end_s: float) -> list[tuple[float, float]]:
    """The stretches of [0, `end_s`] that no span of `spans` covers."""
    gaps: list[tuple[float, float]] = []
    at = 0.0
    for start, stop in merged(spans):
        if start > at:
            gaps.append((at, start))
        at = max(at, stop)
    return [*gaps, (at, end_s)] if at < end_s else gaps


LEADER_LINE_ZORDER = 2.5
"""The lines of a replica while it leads, over the followers' (2, matplotlib's default for lines)."""


def _draw_offsets(ax, data: PartitionPlot) -> None:  # type: ignore[no-untyped-def]
    leading = _leader_spans(data)
    for replica in data.replicas:
        series = data.offsets[data.offsets["replica"] == replica]
        if series.empty:
            continue
        s = _extended(series, data.end_s)
        colour = _colour(data, replica)
        transform = _dodge(ax, data, replica)
        # A down broker holds no offsets that anyone reads: its lines stop at the crash and resume at the restart
        # (at what recovery left), instead of running on flat as if it were alive.
        down = down_spans(data.lifecycle, replica, data.end_s)
        # While it leads, a replica's lines are drawn over the others' (followers in step draw the same lines a
        # few points apart, and the last drawn would hide the leader's, whose HW is the partition's).
        led = [(start, start + width) for start, width in leading.get(replica, [])]
        # (handed over, down, zorder): the stretches the other pass draws (a change as one starts is the resuming
        # pass's step) and those the broker is down.
        passes = [(merged(led), down, 2.0)] + ([(outside(led, data.end_s), down, LEADER_LINE_ZORDER)] if led else [])
        # LEO as a wide light line, HW as a thin dark dashed one on top: where they are equal the dashes
        # run inside the band, so both stay visible.
        for col, style, width, alpha in (("leo", "-", 4.0, 0.45), ("hw", "--", 1.6, 1.0)):
            for n, (other, gaps, zorder) in enumerate(passes):
                t, y = broken_at(*broken_at(s["t_s"].to_numpy(dtype=float), s[col].to_numpy(dtype=float), other,
                                            step_in=True), gaps)
                ax.step(t, y, where="post", color=colour, linestyle=style, linewidth=width, alpha=alpha,
                        label=f"broker {replica} {col.upper()}" if n == 0 else "_nolegend_", transform=transform,
                        zorder=zorder, gid=f"broker {replica} {col.upper()}{' leading' if n else ''}")
            # Only aggregated buckets have a range: a bar over the bucket's own width (not up to the next
            # point), so a dip inside one bucket is not smeared over a quiet stretch.
            ranged = s[s[f"{col}_max"] > s[f"{col}_min"]]
            if len(ranged):
                lo = ranged[f"{col}_min"].to_numpy(dtype=float)
                ax.bar(ranged["t_s"].to_numpy(dtype=float), ranged[f"{col}_max"].to_numpy(dtype=float) - lo,
                       width=data.bucket_ms / 1000.0, bottom=lo, align="edge", color=colour, alpha=0.25,
                       linewidth=0, transform=transform)
    ax.set_ylabel("offset (messages)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    # Offsets are never negative: the ticks in the headroom below 0 stay blank.
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if float(v).is_integer() and v >= 0 else ""))
    ax.grid(True, alpha=0.3)


LABEL_BOX_ALPHA, EVIDENCE_BOX_ALPHA = 0.7, 0.5
"""Opacity of the white boxes behind violation and evidence labels: enough to read the text over the lines, little
enough that a LEO or HW line under a label still shows (the labels sit where things happen: over the leader's
lines)."""

VIOLATION_LABEL_ROWS = 6
"""Heights below its mark (28 points apart), then as many above it, that a violation's label may take before it
is left out."""


def _draw_violations(ax, data: PartitionPlot, taken: list[Bbox]) -> int:  # type: ignore[no-untyped-def]
    """Mark every violation and label the chosen ones (`_labelled`), each at the first of `VIOLATION_LABEL_ROWS`
    heights where its drawn extent stays inside the panel and overlaps no label in `taken` (display extents: the
    incidents' labels, then each violation label placed); returns how many chosen ones found none."""
    top = ax.get_xaxis_transform()  # x in data, y in axes fraction: for marks without an offset

    def anchor(v: ViolationMark):  # type: ignore[no-untyped-def]
        return ((v.time_s, v.offset), ax.transData) if v.offset is not None else ((v.time_s, TOP_BAND), top)

    for v in data.violations:
        colour, marker = _SEVERITY_STYLE.get(v.severity, ("#d62728", "X"))
        (x, y), transform = anchor(v)
        # An info mark is small, edged in its own colour (a white edge would blank out the next one in a column of
        # consecutive lost offsets) and drawn under the others: an allowed loss must not cover an error.
        info = v.severity == INFO
        ax.plot([x], [y], marker=marker, color=colour, markersize=_MARK_SIZE.get(v.severity, 13.0),
                markeredgecolor=colour if info else "black", linestyle="none", transform=transform,
                zorder=5.5 if info else 6, clip_on=v.offset is not None)
    # Labels in `_labelled`'s order, so that each invariant's first gets a place before any invariant's second.
    renderer = ax.figure.canvas.get_renderer()
    panel = ax.get_window_extent(renderer)
    left_out = 0
    leaders: list[MplPath] = []
    """The placed labels' leader lines (display points), which a later label and its own line keep clear of."""
    totals: dict[tuple[str, str], int] = {}
    for severity, invariant, count in data.totals:
        totals[(severity, invariant)] = totals.get((severity, invariant), 0) + count
    for v in _labelled(data):
        colour = _SEVERITY_STYLE.get(v.severity, ("#d62728", "X"))[0]
        where = [] if v.replica is None or v.end_of_run else [f"broker {v.replica}"]
        if v.streak is not None:
            where.append(f"offsets {v.streak[0]}..{v.streak[1]}, {v.streak[2]:,} violations")
        elif v.offset is not None:
            where.append(f"offset {v.offset}")  # as the report's tables print it: no separators
        if v.end_of_run and v.replica is not None:
            where.append(f"not on final leader {v.replica}")  # after the offset: not read as the leader's offset
        # An info invariant has one label (MAX_INFO_LABELS): it says how many findings it stands for beyond its own
        # (a streak's mark stands for its count).
        own = v.streak[2] if v.streak is not None else 1
        more = totals.get((v.severity, v.invariant), own) - own if v.severity == INFO else 0
        text = (f"{v.severity.upper()}: {v.invariant}" + (f" (+{more:,} more)" if more > 0 else "")
                + (f"\n({', '.join(where)})" if where else ""))
        right_half = v.time_s > 0.6 * data.end_s
        xy, transform = anchor(v)
        label = ax.annotate(text, xy=xy, xycoords=transform, xytext=(-12 if right_half else 12, -16),
                            textcoords="offset points", fontsize=8.5, color=colour,
                            fontweight="normal" if v.severity == INFO else "bold",
                            ha="right" if right_half else "left", va="top",
                            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": colour,
                                  "alpha": LABEL_BOX_ALPHA},
                            arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.8}, zorder=7)
        # Below the mark first (the lines mostly rise, so the space under a mark is the freer); a mark near the
        # bottom of the panel, or under a crowd, gets a height above it.
        heights = [(-16 - 28 * row, "top") for row in range(VIOLATION_LABEL_ROWS)] + [
            (16 + 28 * row, "bottom") for row in range(VIOLATION_LABEL_ROWS)]
        mark = transform.transform(xy)
        # A place whose leader line crosses no other label or line first (crossed lines leave the reader guessing
        # which label is whose mark), each height on the mark's usual side, then on the other; failing that, the
        # first height on its usual side free of the other labels.
        usual = (-12, "right") if right_half else (12, "left")
        other = (12, "left") if right_half else (-12, "right")
        for clear_lines in (True, False):
            sides = (usual, other) if clear_lines else (usual,)
            for (dy, va), (dx, ha) in ((h, side) for h in heights for side in sides):
                label.xyann = (dx, dy)
                label.set_ha(ha)
                label.set_va(va)
                # The text's own box: the annotation's extent includes its leader line, which runs across the labels
                # placed above it.
                label.update_positions(renderer)
                extent = Text.get_window_extent(label, renderer).padded(3)
                inside = (panel.y0 <= extent.y0 and extent.y1 <= panel.y1 and panel.x0 <= extent.x0
                          and extent.x1 <= panel.x1)
                if not inside or any(extent.overlaps(b) for b in taken):
                    continue
                line = _leader_line(mark, extent)
                if clear_lines and not _clear(line, extent, taken, leaders):
                    continue
                taken.append(extent)
                leaders.append(line)
                break
            else:
                continue
            break
        else:
            label.remove()
            left_out += 1
    return left_out


LOSS_SPAN_WIDTH = 7.0
LOSS_SPAN_ALPHA = 0.4
"""A loss span's bar: wide and faint, under the marks, so that it shows the range without hiding a line."""


def _draw_loss_spans(ax, data: PartitionPlot, placed: list[Bbox]) -> None:  # type: ignore[no-untyped-def]
    """Each loss span as a bar at its time over its offsets, `N lost` beside its top end where that overlaps no
    label already placed (whose extents `placed` holds, and gets this one's)."""
    renderer = ax.figure.canvas.get_renderer()
    for span in data.loss_spans:
        colour = _SEVERITY_STYLE.get(span.severity, ("#d62728", "X"))[0]
        ax.plot([span.time_s, span.time_s], [span.first_offset, span.last_offset], color=colour,
                linewidth=LOSS_SPAN_WIDTH, alpha=LOSS_SPAN_ALPHA, solid_capstyle="butt", zorder=4.5)
        if span.count < 2:
            continue  # one write: its mark says it
        right_half = span.time_s > 0.6 * data.end_s
        label = ax.annotate(f"{span.count:,} lost", xy=(span.time_s, span.last_offset), xytext=(
            -6 if right_half else 6, 0), textcoords="offset points", fontsize=8, color=colour, fontweight="bold",
            ha="right" if right_half else "left", va="center", zorder=6.5,
            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7})
        label.update_positions(renderer)
        extent = Text.get_window_extent(label, renderer)
        if any(extent.overlaps(b) for b in placed):
            label.remove()
        else:
            placed.append(extent)


def _leader_line(mark: Sequence[float], box: Bbox) -> MplPath:
    """The line from a mark to the nearest point of its label's box (display points), as the annotation draws it."""
    near = (min(max(mark[0], box.x0), box.x1), min(max(mark[1], box.y0), box.y1))
    return MplPath([tuple(mark), near])


def _clear(line: MplPath, box: Bbox, boxes: Sequence[Bbox], lines: Sequence[MplPath]) -> bool:
    """True when `line` crosses none of `boxes` and none of `lines`, and `box` covers none of `lines` (display
    points; a line ending on a box's edge does not cross it)."""
    inner = [b.padded(-4) for b in boxes]
    return (not any(line.intersects_bbox(b, filled=True) for b in inner)
            and not any(line.intersects_path(other, filled=False) for other in lines)
            and not any(other.intersects_bbox(box.padded(-4), filled=True) for other in lines))


def _draw_evidence(ax, data: PartitionPlot, violation_labels: Sequence[Bbox] = (),  # type: ignore[no-untyped-def]
                   leader_labels: Sequence[Bbox] = ()) -> int:
    """The evidence events of the labelled violations as one numbered sequence of rings, each on the level of
    the first violation citing it and joined to its violations by dotted lines: the picture reads left to right
    as what happened first, then what broke. An event cited by several violations is drawn once. Its numbered
    label avoids the other evidence labels, `violation_labels` (with the incidents') and `leader_labels` (display
    extents: a number under a box cannot be read), and where it can the LEO and HW lines; where it finds no room,
    its number alone does. Returns how many labels are numbers alone."""
    top = ax.get_xaxis_transform()
    for v in _labelled(data):
        y, on_top, colour = _ring_level(v)
        if v.evidence:
            ax.plot([min(e.time_s for e in v.evidence), v.time_s], [y, y], linestyle=":", color=colour, linewidth=1.2,
                    transform=top if on_top else ax.transData, zorder=5)
    renderer = ax.figure.canvas.get_renderer()
    taken: list[Bbox] = []
    numbers_only = 0
    panel = ax.get_window_extent(renderer)
    ceiling = panel.y1 + EVIDENCE_LABEL_HEADROOM * ax.figure.dpi / 72.0
    rings = _evidence_rings(data)
    # Every ring and violation mark, as a small box a label must not cover (its own ring aside): a label over
    # another ring reads as that ring's, and one over a mark hides what broke.
    half = 4.0 * ax.figure.dpi / 72.0

    def dot(x: float, y: float, on_top: bool) -> Bbox:
        px, py = (top if on_top else ax.transData).transform((x, y))
        return Bbox.from_extents(px - half, py - half, px + half, py + half)

    ring_dots = [dot(ring.time_s, y, on_top) for ring, (y, on_top, _) in rings]
    mark_dots = [dot(v.time_s, *((TOP_BAND, True) if v.offset is None else (float(v.offset), False)))
                 for v in data.violations]
    others: list[Bbox] = []

    lines = _offset_line_paths(ax)

    def place(text: Text, steps: int) -> tuple[int, int, float, float, str, str, Bbox]:
        # Labels of events close together climb in steps, to the lowest step where they overlap no earlier label
        # (measured extents; the axes' limits are final), on one of `EVIDENCE_LABEL_SIDES`; then, where the climb
        # found no room (the top band has little above it), they hang below their ring in steps; else the place
        # with the fewest overlaps. Among places without overlaps, the first that covers no LEO or HW line (a box
        # over a line hides the step an operator is reading), else the one that covers the fewest.
        best: tuple[int, int, float, float, str, str, Bbox] | None = None
        for va, sign in (("bottom", 1), ("top", -1)):
            text.set_verticalalignment(va)
            for level in range(steps):
                for dx, ha in EVIDENCE_LABEL_SIDES:
                    dy = sign * (9 + 11 * level)
                    text.set_position((dx, dy))
                    text.set_horizontalalignment(ha)
                    extent = text.get_window_extent(renderer)
                    # Off the panel's sides (into the legend), below it or into the subtitle counts as a clash too.
                    outside = (extent.x0 < panel.x0 or extent.x1 > panel.x1 or extent.y1 > ceiling
                               or extent.y0 < panel.y0)
                    clashes = (_clashes(extent, taken) + _clashes(extent, violation_labels)
                               + _clashes(extent, leader_labels) + _clashes(extent, others) + outside)
                    covers = sum(line.intersects_bbox(extent, filled=False) for line in lines) if not clashes else 0
                    if best is None or (clashes, covers) < best[:2]:
                        best = (clashes, covers, dx, dy, ha, va, extent)
                    if not clashes and not covers:
                        return best
        assert best is not None
        return best

    for k, (ring, (y, on_top, colour)) in enumerate(rings):
        t = ring.time_s
        others[:] = ring_dots[:k] + ring_dots[k + 1:] + mark_dots
        transform = top if on_top else ax.transData
        # Over the labels' boxes: a ring under another event's label would leave its number pointing at nothing.
        ax.plot([t], [y], linestyle="none", marker="o", markersize=7, markerfacecolor="white", markeredgecolor=colour,
                markeredgewidth=1.6, transform=transform, zorder=7.5)
        text = ax.annotate(f"{ring.number}. {ring.label}", xy=(t, y), xycoords=transform, xytext=(-4, 9),
                           textcoords="offset points", fontsize=7.5, color=colour, ha="left", va="bottom", zorder=7,
                           bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none",
                                 "alpha": EVIDENCE_BOX_ALPHA})
        best = place(text, EVIDENCE_LABEL_STEPS)
        if best[0]:
            # No room for the label: its number alone (the report lists every number under the picture,
            # `evidence_key`), which may go further up or down its ring's line to find a free place (a number
            # hidden under a box is no use); still crowded, under the violations' boxes (what broke stays readable).
            text.set_text(f"{ring.number}.")
            best = place(text, EVIDENCE_NUMBER_STEPS)
            numbers_only += 1
        _, _, dx, dy, ha, va, extent = best
        text.set_position((dx, dy))
        text.set_horizontalalignment(ha)
        text.set_verticalalignment(va)
        if abs(dy) > EVIDENCE_TIE_POINTS:
            # A label that had to climb or hang beyond its first steps is tied to its ring (a line of its own, not
            # the label's: its extent stays the text's): among close events, it would read as the neighbour's.
            ax.annotate("", xy=(t, y), xycoords=transform, xytext=(dx, dy), textcoords="offset points",
                        arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.6, "alpha": 0.6, "shrinkA": 0,
                                    "shrinkB": 4}, zorder=6.8)
        if _clashes(extent, violation_labels):
            text.set_zorder(6.9)
        taken.append(extent)
    return numbers_only


def _offset_line_paths(ax) -> list[MplPath]:  # type: ignore[no-untyped-def]
    """The LEO and HW lines of `_draw_offsets` as drawn (display points), each split where it breaks (a down broker,
    a handover): a gap is no line to cover."""
    paths = []
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if not (gid.startswith("broker ") and (" LEO" in gid or " HW" in gid)):
            continue
        points = line.get_transform().transform(line.get_path().vertices)
        finite = np.isfinite(points).all(axis=1)
        edges = np.flatnonzero(np.diff(np.r_[0, finite.astype(int), 0]))
        paths.extend(MplPath(points[a:b]) for a, b in zip(edges[::2], edges[1::2], strict=True) if b - a > 1)
    return paths


def _evidence_rings(data: PartitionPlot) -> list[tuple[NumberedEvidence, tuple[float, bool, str]]]:
    """The evidence rings of the labelled violations in number order (time, then label), each with (its level: the
    offset, or the top band's height; whether on the top band; its colour), from the first violation citing it."""
    rings: dict[tuple[float, str], tuple[float, bool, str]] = {}
    events: dict[tuple[float, str], list[int]] = {}
    for v in _labelled(data):
        level = _ring_level(v)
        for e in v.evidence:
            key = (e.time_s, e.label)
            rings.setdefault(key, level)
            ids = events.setdefault(key, [])
            if e.event_id is not None and e.event_id not in ids:
                ids.append(e.event_id)
    return [(NumberedEvidence(k + 1, t, label, tuple(sorted(events[(t, label)]))), where)
            for k, ((t, label), where) in enumerate(sorted(rings.items()))]


def _ring_level(v: ViolationMark) -> tuple[float, bool, str]:
    """Where a labelled violation's evidence rings and dotted line go: (its offset, or the top band's height; whether on
    the top band; its severity's colour)."""
    colour = _SEVERITY_STYLE.get(v.severity, ("#d62728", "X"))[0]
    return (TOP_BAND, True, colour) if v.offset is None else (float(v.offset), False, colour)


def evidence_key(data: PartitionPlot) -> tuple[NumberedEvidence, ...]:
    """The numbered evidence rings of the picture of `data`, in number order: the key the report prints under it (in a
    crowded picture a ring's label may be its number alone)."""
    return tuple(ring for ring, _ in _evidence_rings(data))


def _top_band_marks(ax, data: PartitionPlot) -> list[Bbox]:  # type: ignore[no-untyped-def]
    """Display extents of the marks of violations without an offset and of the evidence rings drawn with them, on
    the top band (`TOP_BAND`): what a leader change's label must not cover."""
    band = ax.get_xaxis_transform()
    half = 7.0 * ax.figure.dpi / 72.0  # half the largest mark (13 points) and then some
    times = [v.time_s for v in data.violations if v.offset is None]
    times += [ring.time_s for ring, (_, on_top, _) in _evidence_rings(data) if on_top]
    out = []
    for t in times:
        x, y = band.transform((t, TOP_BAND))
        out.append(Bbox.from_extents(x - half, y - half, x + half, y + half))
    return out


def _clashes(extent: Bbox, taken: Sequence[Bbox]) -> int:
    """How many of the labels already placed (`taken`, display extents) a label's `extent` overlaps."""
    return sum(extent.overlaps(other) for other in taken)


def severity_rank(severity: str) -> int:
    """0 for an error, 1 a warning, 2 an info finding (`SEVERITIES`' order); an unknown severity ranks with errors,
    so that nothing unforeseen is ranked out of sight."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else 0


def _labelled(data: PartitionPlot) -> list[ViolationMark]:
    """The violations that get a text label (and their evidence drawn): errors first, then warnings, then info
    findings, the invariants of a severity taking turns (each one's earliest, then each one's second, ...), then by
    time: a flood of one invariant at one instant (the writes one crash or failover lost) does not take every label,
    and acks=1 losses never take an error's or a warning's. An info invariant gets `MAX_INFO_LABELS` (its earliest;
    at one instant, the first given: the report gives the lowest offset first)."""
    nth: dict[tuple[str, str], int] = {}
    ranked = []
    for v in sorted(data.violations, key=lambda v: (v.time_s, v.invariant)):
        key = (v.severity, v.invariant)
        if v.severity != INFO or nth.get(key, 0) < MAX_INFO_LABELS:
            ranked.append((severity_rank(v.severity), nth.get(key, 0), v.time_s, v.invariant, v))
        nth[key] = nth.get(key, 0) + 1
    ranked.sort(key=lambda r: r[:4])
    return [r[-1] for r in ranked[:MAX_VIOLATION_LABELS]]


INCIDENT_LABEL_ROWS = 3
"""Heights (from the bottom of the offset panel) that incident labels may take before one is left out."""


def _draw_incidents(axes, data: PartitionPlot, placed: list[Bbox]) -> int:  # type: ignore[no-untyped-def]
    """Shade every lag incident on both panels and label as many as fit without overlap; returns how many
    were left unlabelled, and adds the labels' display extents to `placed`. Labels are placed late / missing /
    premature first, then in time order, each in the lowest of `INCIDENT_LABEL_ROWS` rows where its drawn extent
    overlaps no other label (measured with the renderer, so the axes' limits and position must be final); one that
    would run past the panel's right edge takes two lines at its band, and where it still would, ends at the edge
    on two lines (as near its band as it can be: one long line would reach back over other incidents' bands)."""
    top = axes[0]
    for inc in data.incidents:
        end = data.end_s if inc.end_s is None else inc.end_s
        colour = "#d62728" if inc.verdict in BAD_VERDICTS else "#ffbf00"
        for ax in axes:
            ax.axvspan(inc.start_s, max(end, inc.start_s), color=colour, alpha=0.13, linewidth=0, zorder=0)
    renderer = top.figure.canvas.get_renderer()
    right = top.get_window_extent(renderer).x1
    taken: list[list[Bbox]] = [[] for _ in range(INCIDENT_LABEL_ROWS)]  # label extents per row
    unlabelled = 0
    for group in _incident_label_groups(data):
        inc = group[0]
        followers = sorted({i.follower for i in group})
        who = (f"broker {followers[0]}" if len(followers) == 1
               else "brokers " + ", ".join(str(f) for f in followers))
        text = f" {who} lagging{_incident_label_tail(inc)}"
        folded = _fold(text)
        label = top.text(inc.start_s, 0.0, text,
                         transform=top.get_xaxis_transform(), fontsize=8.5,
                         # Dark red for the leader's failings only: an on-time shrink is no alarm.
                         color=INCIDENT_LABEL_BAD if inc.verdict in BAD_VERDICTS else INCIDENT_LABEL_OTHER,
                         va="bottom", ha="left", zorder=7,
                         bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.6})
        for row, extents in enumerate(taken):
            label.set_text(text)
            label.set_x(inc.start_s)
            label.set_horizontalalignment("left")
            label.set_y(0.02 + 0.07 * row)
            extent = label.get_window_extent(renderer)
            if extent.x1 > right:  # two lines at the band, else two lines ending at the panel's edge: near the band
                label.set_text(folded)
                extent = label.get_window_extent(renderer)
            if extent.x1 > right:
                label.set_x(top.get_xlim()[1])
                label.set_horizontalalignment("right")
                extent = label.get_window_extent(renderer)
            if not _clashes(extent, extents):
                extents.append(extent)
                placed.append(extent)
                break
        else:
            label.remove()
            unlabelled += len(group)
    return unlabelled


def _fold(text: str) -> str:
    """`text` on two lines of about equal length, broken at the space nearest its middle (each line led by a space,
    as the label's first is)."""
    middle = len(text) // 2
    spaces = [k for k, c in enumerate(text) if c == " " and 0 < k < len(text) - 1]
    if not spaces:
        return text
    at = min(spaces, key=lambda k: (abs(k - middle), k))
    return f"{text[:at]}\n {text[at + 1:]}"


INCIDENT_LABEL_SHARE = 0.02
"""Incidents of different followers whose labels would read the same bar the broker, starting within this fraction
of the run of the first, share one label (`brokers 2, 3 lagging ...`): a leader cut off from its followers sees them
all fall behind at once, and one label per follower would stack them out of the panel."""


def _incident_label_tail(inc: IncidentSpan) -> str:
    """What an incident's label says after `broker N lagging`: the bound, a deposed leader, the verdict in words."""
    bound = "" if inc.lag_max_ms is None else f" > {inc.lag_max_ms / 1000:g} s"
    still = " (until the end of the data)" if inc.end_s is None and inc.verdict != "ongoing" else ""
    meaning = inc.meaning
    behind = f" behind deposed leader {inc.leader}" if inc.zombie and inc.leader is not None else ""
    return f"{bound}{behind}: {inc.verdict}{f' ({meaning})' if meaning else ''}{still}"


def _incident_label_groups(data: PartitionPlot) -> list[list[IncidentSpan]]:
    """The incidents in label order (late / missing / premature first, then by start), those that can share a label
    (`INCIDENT_LABEL_SHARE`) grouped, each group's first incident first."""
    near = INCIDENT_LABEL_SHARE * max(data.end_s, 1e-9)
    groups: list[list[IncidentSpan]] = []
    for inc in sorted(data.incidents, key=lambda i: (i.verdict not in BAD_VERDICTS, i.start_s)):
        tail = _incident_label_tail(inc)
        home = next((g for g in groups if _incident_label_tail(g[0]) == tail and inc.start_s - g[0].start_s <= near
                     and all(i.follower != inc.follower for i in g)), None)
        if home is None:
            groups.append([inc])
        else:
            home.append(inc)
    return groups


def _draw_leaders(axes, data: PartitionPlot) -> list[Bbox]:  # type: ignore[no-untyped-def]
    """Leader changes as vertical lines on both panels, labelled at the top of the offsets panel clear of each other
    and of the top band's marks and rings; returns the labels' display extents."""
    changes = sorted(data.leaders, key=lambda c: c.time_s)
    renderer = axes[0].figure.canvas.get_renderer()
    extents: list[Bbox] = []
    unclean_extents: list[Bbox] = []
    marks = _top_band_marks(axes[0], data)
    for ax in axes:
        for c in changes:
            if c.unclean:
                ax.axvline(c.time_s, color=UNCLEAN_COLOUR, linestyle="--", linewidth=1.6, alpha=0.9, zorder=3)
            else:
                ax.axvline(c.time_s, color="black", linestyle=":", linewidth=1.1, alpha=0.8, zorder=3)
    # Unclean elections keep their label however many changes there are: they are what may have lost data. They
    # are placed first, so that they get the top rows; then the others in time order.
    many = len(changes) > MAX_LEADER_LABELS
    for c in sorted(changes, key=lambda c: not c.unclean):
        if many and not c.unclean:
            continue
        who = "offline" if c.leader is None else f"leader {c.leader}"
        epoch = "" if c.epoch is None else f", epoch {c.epoch}"
        how = " (unclean)" if c.unclean else " (from ELR)" if c.from_elr else ""
        # A change in the last quarter of the run is labelled to the left of its line, so that the label stays
        # inside the axes.
        left = c.time_s > 0.75 * axes[0].get_xlim()[1]
        label = axes[0].text(c.time_s, 0.985, f"{who}{epoch}{how} ←" if left else f" → {who}{epoch}{how}",
                             transform=axes[0].get_xaxis_transform(), fontsize=8.5, ha="right" if left else "left",
                             va="top", zorder=8.5 if c.unclean else 8,
                             color=UNCLEAN_COLOUR if c.unclean else "black",
                             bbox={"boxstyle": "round,pad=0.2", "fc": "white",
                                   "ec": UNCLEAN_COLOUR if c.unclean else "#555555", "alpha": 0.85})
        # The highest of `LEADER_LABEL_ROWS` rows where it covers no other change's label (changes close in time)
        # and no mark or ring of the top band, else the row where it covers the fewest, an unclean election's label
        # counting twice (drawn over the others, it stays readable).
        best: tuple[int, float, Bbox] | None = None
        for row in range(LEADER_LABEL_ROWS):
            label.set_y(0.985 - 0.065 * row)
            extent = label.get_window_extent(renderer)
            clashes = _clashes(extent, extents) + _clashes(extent, unclean_extents) + _clashes(extent, marks)
            if best is None or clashes < best[0]:
                best = (clashes, label.get_position()[1], extent)
            if not clashes:
                break
        assert best is not None
        label.set_y(best[1])
        extents.append(best[2])
        if c.unclean:
            unclean_extents.append(best[2])
    return extents


def _draw_isr(ax, data: PartitionPlot) -> None:  # type: ignore[no-untyped-def]
    leading = _leader_spans(data)
    for lane, replica in enumerate(data.replicas):
        colour = _colour(data, replica)
        ax.broken_barh([(0.0, data.end_s)], (lane - 0.4, 0.8), facecolors="#eeeeee", zorder=1)
        s = data.isr[data.isr["replica"] == replica].sort_values("t_s", kind="stable")
        t = s["t_s"].tolist()
        last = [bool(x) for x in s["in_isr"].tolist()]
        whole = [bool(x) for x in s["in_isr_whole"].tolist()]
        ax.broken_barh(_runs(t, last, data.end_s), (lane - 0.4, 0.8), facecolors=colour, alpha=0.55, zorder=2)
        # A bucket in which the replica left and rejoined is hatched over that bucket only: after it the replica is
        # a member until the next change, like any other.
        bucket_s = data.bucket_ms / 1000.0
        ends = [*t[1:], max(data.end_s, t[-1])] if t else []
        flickers = [(ti, min(bucket_s, end - ti)) for ti, end, a, b in zip(t, ends, last, whole, strict=True)
                    if a and not b]
        ax.broken_barh(flickers, (lane - 0.4, 0.8), facecolors="white", edgecolors=colour, hatch="///", zorder=3)
        # Eligible leader replicas: out of the ISR but electable, which is why a partition whose ISR emptied can
        # still get a clean leader.
        eligible = [bool(x) for x in s["in_elr"].tolist()]
        ax.broken_barh(_runs(t, eligible, data.end_s), (lane - 0.4, 0.8), facecolors="none", edgecolors=colour,
                       hatch="..", linestyles="--", linewidth=1.2, zorder=3)
        ax.broken_barh(leading.get(replica, []), (lane + 0.22, 0.18), facecolors="black", zorder=4)
        # Crashed or shut down: the ISR and leadership above are the controller's view, which keeps a dead broker
        # as leader until its session times out; the process itself is gone.
        down = down_spans(data.lifecycle, replica, data.end_s, unsure=False)
        if down:
            bars = ax.broken_barh([(a, b - a) for a, b in down], (lane - 0.4, 0.8), facecolors=DOWN_FACE,
                                  edgecolors=DOWN_EDGE, hatch="xx", linewidth=0, zorder=4.5)
            bars.set_gid(f"down:{replica}")
        # A crash read at the restart: down at some time in the stretch, alive at its start.
        unsure = down_spans(data.lifecycle, replica, data.end_s, unsure=True)
        if unsure:
            bars = ax.broken_barh([(a, b - a) for a, b in unsure], (lane - 0.4, 0.8), facecolors=UNSURE_FACE,
                                  edgecolors=DOWN_EDGE, hatch=UNSURE_HATCH, linewidth=0, zorder=4.5)
            bars.set_gid(f"down-unsure:{replica}")
        # A follower's failed fetches: ticks along the top edge of its lane, where nothing else is drawn.
        failed = sorted(m.time_s for m in data.fetch_errors if m.follower == replica)
        if failed:
            ax.plot(failed, [lane - 0.33] * len(failed), marker="|", markersize=7, markeredgewidth=1.4,
                    color=FETCH_ERROR_COLOUR, linestyle="none", zorder=5)
    lanes = {r: i for i, r in enumerate(data.replicas)}
    # Over the ISR shading and its hatching, under the leader strip; outlined, as the shading has broker colours.
    fault_bars = draw_fault_bars(ax, data.faults, lanes, MIN_FAULT_WIDTH * max(data.end_s, 1e-3),
                                 LANE_FAULT_OFFSETS, edge="white")
    for bar in fault_bars:
        bar.set_zorder(bar.get_zorder() + 1.5)  # keeps FAULT_STYLE's order: a pause over a stall it overlaps
    ax.set_yticks(range(len(data.replicas)), [f"broker {r}" for r in data.replicas])
    ax.set_ylim(-0.6, len(data.replicas) - 0.4)
    ax.invert_yaxis()
    renderer = ax.figure.canvas.get_renderer()
    taken: list[Bbox] = []
    for k, m in enumerate(sorted(data.lifecycle, key=lambda m: m.time_s)):
        if m.broker not in data.replicas:
            continue
        lane = data.replicas.index(m.broker)
        colour, marker = _LIFECYCLE_STYLE.get(m.action, ("#555555", "o"))
        ax.plot([m.time_s], [lane], marker=marker, markersize=10, color=colour, markeredgecolor="white",
                linestyle="none", zorder=6)
        if k < MAX_LEADER_LABELS * 2:
            # Stops labelled above the marker, (re)starts below: a quick restart does not overwrite its stop.
            up = m.action in ("crash", "shutdown", "controlled_shutdown")
            text = ax.annotate(m.action.replace("_", " "), xy=(m.time_s, lane), xytext=(0, 9 if up else -9),
                               textcoords="offset points", fontsize=8, color=colour, fontweight="bold",
                               ha="center", va="bottom" if up else "top", zorder=7,
                               bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
            # A label over an earlier one (a shutdown right after its controlled shutdown) is left to its marker.
            extent = text.get_window_extent(renderer)
            if _clashes(extent, taken):
                text.remove()
            else:
                taken.append(extent)
    _label_partitions(ax, data, lanes, taken, fault_bars)
    ax.set_ylabel("ISR")
    ax.set_xlabel("time since the run's first event (s)")
    ax.grid(True, axis="x", alpha=0.3)


def _label_partitions(ax, data: PartitionPlot, lanes: dict[int, int], taken: list[Bbox],  # type: ignore[no-untyped-def]
                      bars: Sequence[Rectangle] = ()) -> None:
    """Label a replica's network partitions with the nodes they cut it off from, just after each bar's end or, where
    that is taken or past the picture's edge, just before its start, with a mark pointing at the bar: never on it,
    where the label hid the bar it names. A label that would cover a crash or restart label, an earlier label or a
    fault's bar (`bars`) is left out."""
    renderer = ax.figure.canvas.get_renderer()
    obstacles = [bar.get_window_extent(renderer) for bar in bars]
    cuts = sorted((f for f in data.faults if f.kind == "network_partition" and f.broker in lanes),
                  key=lambda f: (f.start_s, f.broker))
    for f in cuts[:MAX_FAULT_LABELS]:
        # Drawn at least MIN_FAULT_WIDTH of the run wide (draw_fault_bars): the label starts after what is drawn.
        end = max(f.end_s, f.start_s + MIN_FAULT_WIDTH * max(data.end_s, 1e-3))
        for side, at in ((1, end), (-1, f.start_s)):
            label = ("\u25c2 " if side > 0 else "") + partition_label(f, data.controllers) + (
                "" if side > 0 else " \u25b8")
            text = ax.annotate(label,
                               xy=(at, lanes[f.broker] + LANE_FAULT_OFFSETS["network_partition"]),
                               xytext=(3 * side, 0), textcoords="offset points", fontsize=7, color="#3f2360",
                               ha="left" if side > 0 else "right", va="center", zorder=7, gid="fault-label",
                               bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
            extent = text.get_window_extent(renderer)
            if not _clashes(extent, taken) and not _clashes(extent, obstacles) and _inside(extent, ax):
                taken.append(extent)
                break
            text.remove()


def _inside(extent: Bbox, ax) -> bool:  # type: ignore[no-untyped-def]
    """Whether a label's display `extent` lies within the axes' width."""
    box = ax.get_window_extent()
    return bool(extent.x0 >= box.x0 and extent.x1 <= box.x1)


def _offset_limits(data: PartitionPlot) -> tuple[float, float]:
    """The offset axis range: every series, violation and loss span offset, with headroom above the highest line for the
    leader labels and below for the incident labels (set explicitly: autoscaling ignores the dodged lines)."""
    values = [float(v) for c in ("hw_min", "leo_min", "hw_max", "leo_max", "hw", "leo")
              for v in data.offsets[c].dropna().tolist()]
    values += [float(v.offset) for v in data.violations if v.offset is not None]
    values += [float(o) for span in data.loss_spans for o in (span.first_offset, span.last_offset)]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    span = max(high - low, 1.0)
    return low - 0.14 * span, high + 0.22 * span


def render_partition(data: PartitionPlot) -> Figure:
    """The figure for one partition (see the module docstring for what it shows)."""
    fig = Figure(figsize=(13, 8), dpi=100)
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 1, height_ratios=(3.2, max(1.0, 0.45 * len(data.replicas))), hspace=0.08)
    top = fig.add_subplot(grid[0])
    lanes = fig.add_subplot(grid[1], sharex=top)
    top.tick_params(labelbottom=False)
    # Layout and limits first: labels are placed by their drawn extent.
    fig.subplots_adjust(left=0.08, right=0.79, top=0.84, bottom=0.08)
    top.set_xlim(0, max(data.end_s, 1e-3) * 1.01)
    _draw_offsets(top, data)
    top.set_ylim(*_offset_limits(data))
    _draw_isr(lanes, data)
    # The incidents' labels, along the bottom of the panel; then the violations' labels around them (they say what
    # broke), then the evidence numbers around both and around the leader changes' labels.
    placed: list[Bbox] = []
    unlabelled = _draw_incidents((top, lanes), data, placed)
    _draw_loss_spans(top, data, placed)
    leader_labels = _draw_leaders((top, lanes), data)
    crowded = _draw_violations(top, data, placed)
    numbers_only = _draw_evidence(top, data, placed, leader_labels)

    handles, labels = top.get_legend_handles_labels()
    # Only the marks this picture draws: a legend of things absent sends the reader looking for them.
    actions = {m.action for m in data.lifecycle if m.broker in data.replicas}
    flickered = bool((data.isr["in_isr"].astype(bool) & ~data.isr["in_isr_whole"].astype(bool)).any())
    bad = [i.verdict in BAD_VERDICTS for i in data.incidents]
    shown = [
        (True, Patch(facecolor="#888888", alpha=0.55, label="in ISR (broker colour)")),
        (flickered, Patch(facecolor="white", edgecolor="#888888", hatch="///",
                          label="left and rejoined ISR\nwithin a bucket")),
        (True, Patch(facecolor="black", label="leader")),
        *[(any(v.severity == s for v in data.violations),
           Line2D([], [], marker=_SEVERITY_STYLE[s][1], color=_SEVERITY_STYLE[s][0], linestyle="none",
                  markeredgecolor=_SEVERITY_STYLE[s][0] if s == INFO else "black", label=SEVERITY_LEGEND[s]))
          for s in SEVERITIES],
        (bool(data.loss_spans),
         Line2D([], [], color=_SEVERITY_STYLE.get(data.loss_spans[0].severity, ("#d62728",))[0] if data.loss_spans
                else "#d62728", linewidth=LOSS_SPAN_WIDTH, alpha=LOSS_SPAN_ALPHA, solid_capstyle="butt",
                label="acknowledged writes lost\n(their offsets, when they\nleft the leader in office)")),
        (any(v.evidence for v in _labelled(data)),
         Line2D([], [], marker="o", markerfacecolor="white", markeredgecolor="#d62728", linestyle="none",
                label="evidence event\n(numbered in time order)")),
        *[(bool(actions & set(kinds)), Line2D([], [], marker=_LIFECYCLE_STYLE[kinds[0]][1],
                                               color=_LIFECYCLE_STYLE[kinds[0]][0], linestyle="none", label=label))
          for kinds, label in ((("crash",), "broker crash"), (UP_ACTIONS, "broker (re)start"),
                               (("shutdown", "controlled_shutdown"), "broker shutdown"))],
        (any(down_spans(data.lifecycle, r, data.end_s, unsure=False) for r in data.replicas),
         Patch(facecolor=DOWN_FACE, edgecolor=DOWN_EDGE, hatch="xx", linewidth=0,
               label="broker down (crash or\nshutdown to restart)")),
        (any(down_spans(data.lifecycle, r, data.end_s, unsure=True) for r in data.replicas),
         Patch(facecolor=UNSURE_FACE, edgecolor=DOWN_EDGE, hatch=UNSURE_HATCH, linewidth=0,
               label=UNSURE_LABEL)),
        (any(bad), Patch(facecolor="#d62728", alpha=0.25, label="lag incident\n(late / missing / premature)")),
        # Named by the verdicts drawn: "other verdicts" read as "not on time" to an operator.
        (not all(bad), Patch(facecolor="#ffbf00", alpha=0.35, label="lag incident\n(" + " / ".join(
            sorted({i.verdict.replace("_", " ") for i in data.incidents if i.verdict not in BAD_VERDICTS})) + ")")),
    ]
    handles += [h for drawn, h in shown if drawn]
    if any(c.unclean for c in data.leaders):
        handles.append(Line2D([], [], color=UNCLEAN_COLOUR, linestyle="--", label="unclean election"))
    if data.isr["in_elr"].astype(bool).any():
        handles.append(Patch(facecolor="none", edgecolor="#888888", hatch="..", linestyle="--",
                             label=ELR_LABEL))
    handles += fault_handles(fault_kinds(data.faults, data.replicas), wrap=True)
    if data.fetch_errors:
        handles.append(Line2D([], [], marker="|", markersize=7, markeredgewidth=1.4, color=FETCH_ERROR_COLOUR,
                              linestyle="none", label="fetch response with an error\n(on the follower's lane)"))
    labels += [h.get_label() for h in handles[len(labels):]]
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.805, 0.88), fontsize=8.5, frameon=False)
    fig.suptitle(f"{data.topic}-{data.partition}   (run {data.run_id})", x=0.08, ha="left", fontsize=14,
                 fontweight="bold")
    resolution = "exact changes" if data.bucket_ms <= 1 else f"one point per {data.bucket_ms:,} ms bucket"
    # The dodge keeps equal lines apart; said, so that nobody reads the gap as offsets.
    parts = ["LEO wide line, HW dashed, one colour per broker" + (
        f" (equal offsets drawn {DODGE_POINTS:g} points apart)" if len(data.replicas) > 1 else ""), resolution]
    notes = list(data.notes)
    drawn = sum(1 for f in data.faults if f.broker in data.replicas)
    if data.faults_total > drawn:
        notes.append(f"first {drawn} of the replicas' {data.faults_total} broker faults drawn")
    if crowded:
        notes.append(f"{plural(crowded, 'violation label')} left out (crowded)")
    if numbers_only:
        notes.append(f"{plural(numbers_only, 'evidence label')} shortened to the number (the report lists them)")
    if unlabelled:
        n = len(data.incidents)
        notes.append(f"{n - unlabelled} of {n} lag incidents labelled (shading marks all)")
    # The headline on as many lines as it needs too (it names every invariant broken), breaking between its parts.
    said = _wrapped(headline_parts(data), sep=" · ") or [headline(data)]
    sub = "\n".join(said) + "\n" + "\n".join(_wrapped([*parts, *notes]))
    fig.text(0.08, 0.935, sub, fontsize=9.5, ha="left", va="top")
    return fig


def plural(n: int, word: str) -> str:
    """`n` and `word`, with an s unless `n` is 1 ("1 violation label", "2 violation labels")."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


SUBTITLE_CHARS = 150
"""Characters per subtitle line (the figure's width at its font size): the notes go on as many lines as they need."""


def _wrapped(parts: Sequence[str], width: int = SUBTITLE_CHARS, sep: str = "; ") -> list[str]:
    """`parts` joined by `sep` into lines of at most `width` characters, breaking only between parts (a note stays
    whole, so that it can be read and searched for; a line that goes on ends with `sep` stripped); a part longer
    than `width` is a line of its own."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(sep) + len(part) <= width:
            lines[-1] += sep + part
        else:
            if lines:
                lines[-1] += sep.rstrip()
            lines.append(part)
    return lines


def plot_partition(data: PartitionPlot, path: Path) -> Path:
    """Render the partition's figure to the PNG `path` (its folder must exist) and return the path."""
    render_partition(data).savefig(path, format="png")
    return path
