"""How the report draws the simulator's broker faults (`broker_fault`) on a broker's lane, in both pictures.

A fault is a thin bar from its start to its end, one colour per kind, at least `MIN_FAULT_WIDTH` of the run wide:
a network partition on one strip of the lane, a GC pause or disk stall on another. Each picture says where its
strips lie (`offsets`), because each keeps other marks in its lanes: the overview its elections and crashes in
the middle, a partition's picture its leader strip along the lower edge and the fetch-error ticks along the upper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from matplotlib.patches import Patch, Rectangle


class FaultStyle(NamedTuple):
    """How one kind of broker fault is drawn on a broker lane."""

    colour: str
    label: str
    offset: float
    """Centre of its bar relative to the lane's centre on the overview, in lanes (the y axis is inverted: negative
    is upper)."""
    zorder: float


FAULT_STYLE: dict[str, FaultStyle] = {
    "network_partition": FaultStyle("#6a3d9a", "network partition (cut off from peers)", -0.22, 2.0),
    # A pause and a stall both stop the broker's own progress and share the lower strip; a pause is usually the
    # shorter, so it is drawn over a stall it overlaps and both stay visible.
    "gc_pause": FaultStyle("#e377c2", "GC pause", 0.22, 2.2),
    "disk_stall": FaultStyle("#d4a017", "disk stall", 0.22, 2.1),
}
"""broker_fault kind -> its style; legend order. The colours are none of the down grey, the crash and unclean reds,
the election blues or the restart green. The overview's lane middle is left to the elections, crashes and restarts,
which a bar there would hide or be hidden by."""
FAULT_BAR_HEIGHT = 0.18
"""Height of a fault's bar, in lanes (a lane is 1; its shading fills 0.8): the two strips fit inside it."""
MIN_FAULT_WIDTH = 0.004
"""Narrowest a fault's bar is drawn, as a share of the run's span: a 300 ms GC pause in an hour-long run is
otherwise thinner than a pixel."""
FAULT_SHADE_ALPHA = 0.12
"""Opacity of a fault's band across the overview's upper panels: faint, so that overlapping faults darken it and the
counts stay readable over it."""
DIRECTION_TEXT = {"both": "both ways", "outbound": "outbound only", "inbound": "inbound only"}
"""A network partition's `direction` as its label says it (outbound only: what the broker sends them is lost,
what they send it arrives)."""


@dataclass(frozen=True)
class FaultSpan:
    """A broker fault of the simulator's injector (`broker_fault`) from `start_s` to `end_s` (seconds since the
    run's first event); `kind` is a key of `FAULT_STYLE`. `open`: nothing ended it, so it runs to the run's end.
    `peers` and `direction` are a network partition's: the nodes it cut the broker off from, and which way."""

    start_s: float
    end_s: float
    broker: int
    kind: str
    open: bool = False
    peers: tuple[int, ...] = ()
    direction: str | None = None


def fault_kinds(faults: Iterable[FaultSpan], brokers: Iterable[int]) -> list[str]:
    """The kinds of the faults drawn on `brokers`' lanes (those of `FAULT_STYLE`), in its order: legend entries."""
    drawn = set(brokers)
    present = {f.kind for f in faults if f.broker in drawn}
    return [k for k in FAULT_STYLE if k in present]


def fault_handles(kinds: Sequence[str], wrap: bool = False) -> list[Patch]:
    """One legend entry per fault kind in `kinds`; `wrap` puts a label's parenthesis on a line of its own."""
    return [Patch(color=FAULT_STYLE[k].colour,
                  label=FAULT_STYLE[k].label.replace(" (", "\n(") if wrap else FAULT_STYLE[k].label) for k in kinds]


def draw_fault_bars(ax, faults: Iterable[FaultSpan], row: Mapping[int, int], least_s: float,  # type: ignore[no-untyped-def]
                    offsets: Mapping[str, float] | None = None, edge: str | None = None) -> list[Rectangle]:
    """One bar (a `Rectangle` with gid `fault:<kind>`) per fault of a broker in `row` (broker -> lane) on its
    kind's strip, at least `least_s` wide; `offsets` moves a kind's strip (default: `FaultStyle.offset`), `edge`
    outlines the bars (for lanes whose shading has the bars' colours). Returns the bars drawn."""
    bars = []
    for f in faults:
        if f.broker not in row or f.kind not in FAULT_STYLE:
            continue
        style = FAULT_STYLE[f.kind]
        centre = row[f.broker] + (offsets or {}).get(f.kind, style.offset)
        bar = Rectangle((f.start_s, centre - FAULT_BAR_HEIGHT / 2), max(f.end_s - f.start_s, least_s),
                        FAULT_BAR_HEIGHT, facecolor=style.colour, edgecolor=edge or "none",
                        linewidth=0.6 if edge else 0, zorder=style.zorder, gid=f"fault:{f.kind}")
        ax.add_patch(bar)
        bars.append(bar)
    return bars


def shade_fault_times(ax, faults: Iterable[FaultSpan], least_s: float) -> list[Patch]:  # type: ignore[no-untyped-def]
    """A faint band of its kind's colour (gid `fault-time:<kind>`) across `ax` over each fault's time, at least
    `least_s` wide, behind everything else: a panel's counts read against the faults that may explain them. One
    band per kind and time: a network partition is a fault of every broker on either side of its cut, and one cut
    drawn three times would read as three."""
    bands = []
    seen: set[tuple[str, float, float]] = set()
    for f in faults:
        if f.kind in FAULT_STYLE and (f.kind, f.start_s, f.end_s) not in seen:
            seen.add((f.kind, f.start_s, f.end_s))
            band = ax.axvspan(f.start_s, max(f.end_s, f.start_s + least_s), color=FAULT_STYLE[f.kind].colour,
                              alpha=FAULT_SHADE_ALPHA, linewidth=0, zorder=0, gid=f"fault-time:{f.kind}")
            bands.append(band)
    return bands


def peer_names(peers: Iterable[int], controllers: Iterable[int] = ()) -> str:
    """A network partition's peers as the report names them, brokers first: `2, 3, controller 1000`
    (`controllers`: the node ids known to be controllers); `every peer` when it names none."""
    known = set(controllers)
    names = [f"controller {p}" if p in known else str(p) for p in sorted(peers, key=lambda p: (p in known, p))]
    return ", ".join(names) if names else "every peer"


def partition_label(f: FaultSpan, controllers: Iterable[int] = ()) -> str:
    """What a network partition cut the broker off from, e.g. `cut off from 2, 3, controller 1000 (both ways)`."""
    how = DIRECTION_TEXT.get(f.direction or "", f.direction or "")
    return f"cut off from {peer_names(f.peers, controllers)}" + (f" ({how})" if how else "")
