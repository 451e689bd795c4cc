"""The incident report's picture of a whole run: the cluster as a broker dashboard would have shown it.

One figure per run, three panels sharing the time axis (seconds since the run's first event), drawn from
per-bucket aggregates (`jobs.cluster_overview`), so its size does not depend on the run's:

  * top — how many partitions were under-replicated, under min ISR and offline (Kafka's
    `UnderReplicatedPartitions`, `UnderMinIsrPartitionCount`, `OfflinePartitionsCount`), and how many
    followers were lagging beyond replica.lag.time.max.ms (open lag incidents, while their leader was in office):
    the most in each bucket;
  * middle — the leaders' committed ISR shrinks (up) and expands (down) per bucket (`Partition.maybeShrinkIsr` /
    `maybeExpandIsr`: what `IsrShrinksPerSec` and `IsrExpandsPerSec` count), and, hatched on top of the shrinks,
    the ISR changes by the controller that removed a replica (an election or a LeaderAndIsr / PartitionChangeRecord
    with a smaller ISR), which those metrics leave out although they raise `UnderReplicatedPartitions` too;
  * bottom — one lane per broker: grey in the buckets in which it was down (from a crash or shutdown to its
    restart), its crashes, restarts and shutdowns marked, the elections that made it leader (unclean in red,
    from the eligible leader replicas as diamonds), and the faults the simulator held it in (`broker_fault`: GC
    pause, disk stall, network partition) as thin bars of one colour per kind, at least `MIN_FAULT_WIDTH` of the
    run wide: a partition along the lane's upper edge, a pause or stall along its lower edge, clear of the marks
    in its middle.

Crashes are also drawn as faint vertical lines across the upper panels, and the lanes' faults as faint bands of
their colours, so a rise in under-replicated partitions can be read against the failure that caused it.
Rendering goes through `Figure` and the Agg canvas directly, never `pyplot`, as `jobs.plots` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import offset_copy

from jobs.fault_plot import (
    MIN_FAULT_WIDTH,
    FaultSpan,
    draw_fault_bars,
    fault_handles,
    fault_kinds,
    shade_fault_times,
)
from jobs.plots import _LIFECYCLE_STYLE, UNCLEAN_COLOUR, UNSURE_HATCH, UNSURE_LABEL, LifecycleMark, plural

COUNT_SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("under_replicated", "under-replicated partitions", "#ff7f0e", "-"),
    ("under_min_isr", "partitions under min ISR", "#d62728", "-"),
    ("offline", "offline partitions (no leader, as the controller saw it)", "#000000", "-"),
    ("lagging", "followers lagging > replica.lag.time.max.ms\n(behind a leader in office)", "#9467bd", "--"),
)
"""(column of `ClusterOverview.counts`, legend text, colour, line style) of the top panel's series."""
COUNT_DODGE_POINTS = 1.8
"""The top panel's lines drawn this far apart (under-replicated above, offline below): a partition under min ISR is
also under-replicated, and with both counts equal the red line hid the orange one."""
_COUNT_SHIFT = {"under_replicated": 1.0, "under_min_isr": 0.0, "offline": -1.0, "lagging": 0.0}
COUNT_COLUMNS: tuple[str, ...] = ("bucket", *(c for c, *_ in COUNT_SERIES))
CHURN_COLUMNS: tuple[str, ...] = ("bucket", "shrinks", "expands")
CONTROLLER_COLUMNS: tuple[str, ...] = ("bucket", "shrinks")
ELECTION_COLUMNS: tuple[str, ...] = ("bucket", "leader_id", "unclean", "from_elr", "elections")
DOWN_COLUMNS: tuple[str, ...] = ("broker_id", "bucket", "unsure")
MAX_LANES = 40
"""Brokers drawn as lanes at most (the busiest, by crashes and elections); the subtitle counts the rest."""
X_MARGIN = 0.012
"""Room left of t = 0, as a share of the run's span."""
ELECTION_TICK_SIZE = 160
"""Marker area (points²) of a clean election's tick on a broker lane."""
CLEAN_COLOUR = "#1f77b4"
ELR_COLOUR = "#17becf"
SHRINK_COLOUR = "#d62728"
CONTROLLER_SHRINK_COLOUR = "#8c564b"
DOWN_COLOUR = "#bbbbbb"
UNSURE_DOWN_COLOUR = "#eeeeee"
"""A lane's stretch in which the broker went down at a time not known (a crash read at its restart)."""
EXPAND_COLOUR = "#2ca02c"


LEGEND_ROW_IN = 0.17
"""Height of one entry of a legend at font size 7, in inches (with its spacing), to size the lanes' panel."""


@dataclass(frozen=True)
class ClusterOverview:
    """Everything one run's overview shows. Time buckets are `bucket_ms` wide from the run's first event;
    `counts` has one row per bucket (0 .. buckets - 1) with the most of each series in it."""

    run_id: str
    end_s: float
    bucket_ms: int
    brokers: tuple[int, ...]
    partitions: int
    counts: pd.DataFrame
    churn: pd.DataFrame
    elections: pd.DataFrame
    down: pd.DataFrame
    """One row per broker and bucket in which it was down at some time."""
    lifecycle: tuple[LifecycleMark, ...] = ()
    lifecycle_total: int = 0
    """All the run's crashes, restarts and shutdowns, when `lifecycle` holds only the first ones."""
    controller_shrinks: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(CONTROLLER_COLUMNS)))
    """Per bucket with any, the ISR changes by the controller that removed a replica (`shrinks`)."""
    faults: tuple[FaultSpan, ...] = ()
    """The run's broker faults (the first ones, by start, when `faults_total` is larger)."""
    faults_total: int = 0
    """All the run's broker faults, when `faults` holds only the first ones."""
    broker_count: int | None = None
    """The brokers the run's events or assignment name, lanes or not (None: those of `brokers`)."""

    def __post_init__(self) -> None:
        for name, frame, cols in (("counts", self.counts, COUNT_COLUMNS), ("churn", self.churn, CHURN_COLUMNS),
                                  ("elections", self.elections, ELECTION_COLUMNS),
                                  ("down", self.down, DOWN_COLUMNS),
                                  ("controller_shrinks", self.controller_shrinks, CONTROLLER_COLUMNS)):
            missing = [c for c in cols if c not in frame.columns]
            if missing:
                raise ValueError(f"ClusterOverview.{name} lacks columns {missing} (has {list(frame.columns)})")
        if self.bucket_ms < 1:
            raise ValueError(f"ClusterOverview.bucket_ms must be >= 1 ms, got {self.bucket_ms}")


def _t(bucket: pd.Series | int, bucket_ms: int) -> pd.Series | float:
    return bucket * bucket_ms / 1000.0


def _lanes(data: ClusterOverview) -> list[int]:
    """The brokers drawn, busiest first up to `MAX_LANES`, in id order."""
    if len(data.brokers) <= MAX_LANES:
        return sorted(data.brokers)
    busy = {b: 0 for b in data.brokers}
    for m in data.lifecycle:
        busy[m.broker] = busy.get(m.broker, 0) + 1
    # A broker that was paused or cut off is part of the story even when it never crashed.
    for f in data.faults:
        if f.broker in busy:
            busy[f.broker] += 1
    for leader, n in zip(data.elections["leader_id"], data.elections["elections"], strict=True):
        if leader in busy:
            busy[int(leader)] += int(n)
    return sorted(sorted(busy, key=lambda b: (-busy[b], b))[:MAX_LANES])


def _down_spans(down: pd.DataFrame, bucket_ms: int, unsure: bool | None = None) -> dict[int, list[tuple[float, float]]]:
    """Per broker, its runs of consecutive down buckets as (start, end) in seconds; `unsure` True: of the buckets in
    which it went down at a time not known only, False: of the others only."""
    spans: dict[int, list[tuple[float, float]]] = {}
    width = bucket_ms / 1000.0
    if unsure is not None:
        down = down[down["unsure"].astype(bool) == unsure]
    for broker, group in down.groupby("broker_id"):
        runs: list[list[int]] = []
        for b in sorted(int(x) for x in group["bucket"]):
            if runs and b == runs[-1][1] + 1:
                runs[-1][1] = b
            else:
                runs.append([b, b])
        spans[int(broker)] = [(first * width, (last + 1) * width) for first, last in runs]
    return spans


def _legend_beside(ax, **kwargs: object) -> None:  # type: ignore[no-untyped-def]
    """The panel's legend right of it, outside the axes: inside, a corner legend covered the counts' lines and the
    churn bars that reach the panel's top right (the three panels share one column, so all narrow alike)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, framealpha=0.85, **kwargs)


def _draw_counts(ax, data: ClusterOverview) -> None:  # type: ignore[no-untyped-def]
    t = _t(data.counts["bucket"], data.bucket_ms)
    # Under-replicated is filled: the other counts often equal it (a partition under min ISR is also
    # under-replicated), and a line drawn on it would hide it.
    first, *_ = COUNT_SERIES
    ax.fill_between(t, data.counts[first[0]], step="post", color=first[2], alpha=0.3, linewidth=0)
    for col, label, colour, style in COUNT_SERIES:
        shift = offset_copy(ax.transData, fig=ax.figure, y=_COUNT_SHIFT[col] * COUNT_DODGE_POINTS, units="points")
        ax.step(t, data.counts[col], where="post", color=colour, linestyle=style, linewidth=1.4, label=label,
                transform=shift)
    ax.set_ylabel("partitions / followers")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max([1, *(data.counts[c].max() for c, *_ in COUNT_SERIES if len(data.counts))]) * 1.1)
    _legend_beside(ax)


def _draw_churn(ax, data: ClusterOverview) -> None:  # type: ignore[no-untyped-def]
    width = data.bucket_ms / 1000.0
    t = _t(data.churn["bucket"], data.bucket_ms)
    ax.bar(t, data.churn["shrinks"], width=width, align="edge", color=SHRINK_COLOUR)
    ax.bar(t, -data.churn["expands"], width=width, align="edge", color=EXPAND_COLOUR)
    # Stacked on the leaders' shrinks of the same bucket, so the bar's top is every ISR shrink it saw.
    leaders = dict(zip(data.churn["bucket"].astype(int), data.churn["shrinks"].astype(int), strict=True))
    by_controller = data.controller_shrinks
    under = [leaders.get(int(b), 0) for b in by_controller["bucket"]]
    ax.bar(_t(by_controller["bucket"], data.bucket_ms), by_controller["shrinks"], width=width, bottom=under,
           align="edge", color=CONTROLLER_SHRINK_COLOUR, hatch="////", edgecolor="white", linewidth=0)
    ax.axhline(0, color="#555555", linewidth=0.6)
    tops = [u + int(n) for u, n in zip(under, by_controller["shrinks"], strict=True)]
    highest = max([1, *data.churn["shrinks"], *data.churn["expands"], *tops])
    ax.set_ylim(-highest * 1.15, highest * 1.15)
    ax.set_ylabel(f"per {width:g} s")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, symmetric=True))
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{abs(v):g}")
    # Kafka's IsrShrinksPerSec counts only a leader's shrink (maybeShrinkIsr); the controller's removals, at an
    # election or a broker's fencing, are another bar, or a rise in under-replicated partitions reads unexplained.
    _legend_beside(ax, handles=[
        Patch(color=SHRINK_COLOUR, label="ISR shrinks by the leader (IsrShrinksPerSec), up"),
        Patch(facecolor=CONTROLLER_SHRINK_COLOUR, hatch="////", edgecolor="white",
              label="ISR removals by the controller (election, LeaderAndIsr), up"),
        Patch(color=EXPAND_COLOUR, label="ISR expands by the leader (IsrExpandsPerSec), down")])


def _lane_handles(data: ClusterOverview, lanes: list[int]) -> list[Patch | Line2D]:
    """The broker lanes' legend entries: the marks always drawn, the ELR election and the fault kinds if present."""
    return [Patch(color=DOWN_COLOUR, label="down"),
            *([Patch(facecolor=UNSURE_DOWN_COLOUR, hatch=UNSURE_HATCH, edgecolor=DOWN_COLOUR, label=UNSURE_LABEL)]
              if data.down["unsure"].astype(bool).any() else []),
            Line2D([], [], color=CLEAN_COLOUR, marker="|", markersize=9, markeredgewidth=2.5, linestyle="",
                   label="elected leader"),
            *([Line2D([], [], color=ELR_COLOUR, marker="D", linestyle="", label="elected from the ELR")]
              if data.elections["from_elr"].astype(bool).any() else []),
            Line2D([], [], color=UNCLEAN_COLOUR, marker="*", linestyle="", label="elected unclean"),
            *(Line2D([], [], color=c, marker=mk, linestyle="", label=a)
              for a, (c, mk) in _LIFECYCLE_STYLE.items() if a not in ("start", "controlled_shutdown")),
            *fault_handles(fault_kinds(data.faults, lanes))]


def _draw_lanes(ax, data: ClusterOverview, lanes: list[int]) -> None:  # type: ignore[no-untyped-def]
    row = {b: i for i, b in enumerate(lanes)}
    for b, spans in _down_spans(data.down, data.bucket_ms, unsure=False).items():
        if b in row:
            ax.broken_barh([(start, end - start) for start, end in spans], (row[b] - 0.4, 0.8), color=DOWN_COLOUR,
                           linewidth=0)
    for b, spans in _down_spans(data.down, data.bucket_ms, unsure=True).items():
        if b in row:
            ax.broken_barh([(start, end - start) for start, end in spans], (row[b] - 0.4, 0.8),
                           facecolor=UNSURE_DOWN_COLOUR, edgecolor=DOWN_COLOUR, hatch=UNSURE_HATCH, linewidth=0)
    draw_fault_bars(ax, data.faults, row, _least_fault_s(data))
    elections = data.elections[data.elections["leader_id"].isin(lanes)]
    unclean, from_elr = elections["unclean"].astype(bool), elections["from_elr"].astype(bool)
    kinds = (~unclean & ~from_elr, from_elr, unclean)
    # A clean election's tick is a line marker: only its width makes it visible, next to the axis at t = 0 most of all.
    for chosen_rows, colour, marker, size, line in zip(kinds, (CLEAN_COLOUR, ELR_COLOUR, UNCLEAN_COLOUR),
                                                       ("|", "D", "*"), (ELECTION_TICK_SIZE, 30, 90), (2.5, None, None),
                                                       strict=True):
        chosen = elections[chosen_rows]
        if len(chosen):
            ax.scatter(_t(chosen["bucket"], data.bucket_ms) + data.bucket_ms / 2000.0,
                       [row[int(b)] for b in chosen["leader_id"]], marker=marker, s=size, color=colour, zorder=3,
                       linewidths=line)
    for m in data.lifecycle:
        if m.broker in row:
            colour, marker = _LIFECYCLE_STYLE.get(m.action, ("#555555", "o"))
            ax.scatter([m.time_s], [row[m.broker]], marker=marker, s=40, color=colour, zorder=4)
    ax.set_yticks(range(len(lanes)), [f"broker {b}" for b in lanes], fontsize=7 if len(lanes) > 12 else 8)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.invert_yaxis()
    _legend_beside(ax, handles=_lane_handles(data, lanes))


def _least_fault_s(data: ClusterOverview) -> float:
    """The narrowest a fault is drawn, in seconds (`MIN_FAULT_WIDTH` of the run)."""
    return MIN_FAULT_WIDTH * max(data.end_s, data.bucket_ms / 1000.0)


def render_overview(data: ClusterOverview) -> Figure:
    """The run's overview figure (not saved; see `plot_overview`)."""
    lanes = _lanes(data)
    # Tall enough for the lanes and for their legend beside them, which the fault kinds lengthen: a few lanes
    # with every kind of mark would otherwise push it past the figure's bottom edge.
    lane_height = max(0.25 * max(len(lanes), 3) + 0.6, LEGEND_ROW_IN * len(_lane_handles(data, lanes)) + 0.3)
    fig = Figure(figsize=(12, 3.2 + 1.6 + lane_height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(3, 1, sharex=True, height_ratios=[3.2, 1.6, lane_height])
    _draw_counts(axes[0], data)
    _draw_churn(axes[1], data)
    _draw_lanes(axes[2], data, lanes)
    # Only the drawn lanes' faults: a band whose bar is on no lane would explain nothing.
    drawn = set(lanes)
    lane_faults = [f for f in data.faults if f.broker in drawn]
    for ax in axes[:2]:
        shade_fault_times(ax, lane_faults, _least_fault_s(data))
    for m in data.lifecycle:
        if m.action == "crash":
            for ax in axes[:2]:
                ax.axvline(m.time_s, color=_LIFECYCLE_STYLE["crash"][0], linewidth=0.6, alpha=0.35, zorder=0)
    axes[2].set_xlabel("time (s) since the run's first event")
    end = max(data.end_s, data.bucket_ms / 1000.0)
    # A margin before 0: the elections and starts of the run's first bucket would sit on the axis line otherwise.
    axes[2].set_xlim(-X_MARGIN * end, end)
    brokers = len(data.brokers) if data.broker_count is None else max(data.broker_count, len(data.brokers))
    notes = [f"{plural(data.partitions, 'partition')}, {plural(brokers, 'broker')}; most per "
             f"{data.bucket_ms / 1000:g} s bucket (equal counts drawn {COUNT_DODGE_POINTS:g} points apart)"]
    if len(lanes) < len(data.brokers):
        notes.append(f"{len(data.brokers) - len(lanes)} quieter brokers not drawn")
    if data.lifecycle_total > len(data.lifecycle):
        notes.append(f"first {len(data.lifecycle)} of {data.lifecycle_total} crashes / restarts marked")
    if data.faults_total > len(data.faults):
        notes.append(f"first {len(data.faults)} of {data.faults_total} broker faults drawn")
    fig.suptitle(f"Cluster overview: run {data.run_id}\n" + "; ".join(notes), fontsize=10)
    return fig


def plot_overview(data: ClusterOverview, path: Path) -> Path:
    """Render and save the overview as a PNG at `path`; returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    render_overview(data).savefig(path, dpi=100)
    return path
