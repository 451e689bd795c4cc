"""`jobs.overview_plot` on hand-made data, without Spark: the controller's ISR removals in the churn panel, the
clean elections' ticks and the broker faults' bars on the broker lanes, tested by what the figure draws."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
from matplotlib.colors import to_hex

from jobs.fault_plot import FAULT_BAR_HEIGHT, FAULT_STYLE, MIN_FAULT_WIDTH, FaultSpan
from jobs.overview_plot import (
    CHURN_COLUMNS,
    CLEAN_COLOUR,
    CONTROLLER_COLUMNS,
    CONTROLLER_SHRINK_COLOUR,
    COUNT_COLUMNS,
    DOWN_COLUMNS,
    ELECTION_COLUMNS,
    ELECTION_TICK_SIZE,
    MAX_LANES,
    ClusterOverview,
    render_overview,
)
from jobs.plots import LifecycleMark


def failover(controller_shrinks: pd.DataFrame | None = None) -> ClusterOverview:
    """KIP-101's shape, 10 buckets of 1 s: brokers 1 and 2 elected at 0 s; broker 2 crashes at 2.5 s, the controller
    elects broker 1 with ISR [1] at 6 s (one partition under-replicated from then), broker 2 restarts at 8 s and is
    expanded back at 8 s. Bucket 3 also has a leader's own shrink, of another partition."""
    counts = pd.DataFrame([(b, 1 if 6 <= b < 8 else 0, 0, 0, 0) for b in range(10)], columns=list(COUNT_COLUMNS))
    extra = {} if controller_shrinks is None else {"controller_shrinks": controller_shrinks}
    return ClusterOverview(
        run_id="kip101", end_s=10.0, bucket_ms=1000, brokers=(1, 2), partitions=2, counts=counts,
        churn=pd.DataFrame([(3, 1, 0), (6, 2, 0), (8, 0, 1)], columns=list(CHURN_COLUMNS)),
        elections=pd.DataFrame([(0, 1, False, False, 1), (0, 2, False, False, 1), (6, 1, False, False, 1)],
                               columns=list(ELECTION_COLUMNS)),
        down=pd.DataFrame([(2, b, False) for b in range(2, 8)], columns=list(DOWN_COLUMNS)),
        lifecycle=(LifecycleMark(2.5, 2, "crash"), LifecycleMark(8.0, 2, "restart")), lifecycle_total=2, **extra)


def _bars(ax, colour: str) -> list[tuple[float, float, float, bool]]:  # type: ignore[no-untyped-def]
    """(x, bottom, height, hatched) of the bars of one colour."""
    return sorted((p.get_x(), p.get_y(), p.get_height(), bool(p.get_hatch())) for p in ax.patches
                  if p.get_height() and to_hex(p.get_facecolor()) == colour)


def test_the_controllers_isr_removals_are_hatched_bars_on_top_of_the_leaders_shrinks() -> None:
    removed = pd.DataFrame([(6, 1)], columns=list(CONTROLLER_COLUMNS))
    churn = render_overview(failover(removed)).axes[1]
    # The election's removal at 6 s stands on the leaders' two shrinks of that bucket; the leaders' bars are as before.
    assert _bars(churn, CONTROLLER_SHRINK_COLOUR) == [(6.0, 2.0, 1.0, True)]
    assert [(x, h) for x, _, h, _ in _bars(churn, "#d62728")] == [(3.0, 1.0), (6.0, 2.0)]
    assert churn.get_ylim()[1] > 3, "room for the stacked bar"
    labels = [t.get_text() for t in churn.get_legend().get_texts()]
    assert labels == ["ISR shrinks by the leader (IsrShrinksPerSec), up",
                      "ISR removals by the controller (election, LeaderAndIsr), up",
                      "ISR expands by the leader (IsrExpandsPerSec), down"]


def test_a_run_without_controller_removals_draws_none() -> None:
    churn = render_overview(failover()).axes[1]
    assert _bars(churn, CONTROLLER_SHRINK_COLOUR) == []


def test_clean_election_ticks_are_wide_and_clear_of_the_axis_at_the_runs_start() -> None:
    lanes = render_overview(failover()).axes[2]
    (ticks,) = [c for c in lanes.collections if to_hex(c.get_facecolor()[0]) == CLEAN_COLOUR]
    assert [tuple(o) for o in ticks.get_offsets()] == [(0.5, 0.0), (0.5, 1.0), (6.5, 0.0)]
    assert list(ticks.get_sizes()) == [ELECTION_TICK_SIZE] and list(ticks.get_linewidths()) == [2.5]
    left, right = lanes.get_xlim()
    assert left < 0 < right == 10.0, "a margin before t = 0, so a tick there is not drawn on the axis line"


# Broker 1 cut off from broker 2 and the controller from 0.5 s until a heal at 2 s, and again from 9 s to the run's
# end; broker 2 in a GC pause over 1..1.3 s (while it is up) and a 2 ms disk stall at 4 s (while it is down).
FAULTS = (FaultSpan(0.5, 2.0, 1, "network_partition", False, (2, 1000), "both"), FaultSpan(1.0, 1.3, 2, "gc_pause"),
          FaultSpan(4.0, 4.002, 2, "disk_stall"), FaultSpan(9.0, 10.0, 1, "network_partition", True, (2,), "both"))


def _fault_bars(ax) -> list[tuple[str, float, float, float, float, str]]:  # type: ignore[no-untyped-def]
    """(kind, x, y, width, height, colour) of every fault bar, by kind and time."""
    return sorted((p.get_gid().removeprefix("fault:"), round(p.get_x(), 4), round(p.get_y(), 4),
                   round(p.get_width(), 4), round(p.get_height(), 4), to_hex(p.get_facecolor()))
                  for p in ax.patches if (p.get_gid() or "").startswith("fault:"))


def test_each_broker_fault_is_one_bar_on_its_kinds_strip_of_the_brokers_lane() -> None:
    lanes = render_overview(replace(failover(), faults=FAULTS, faults_total=len(FAULTS))).axes[2]
    half = FAULT_BAR_HEIGHT / 2
    stripe = {k: style.offset for k, style in FAULT_STYLE.items()}
    colour = {k: style.colour for k, style in FAULT_STYLE.items()}
    # Broker 1 is lane 0, broker 2 lane 1. The 2 ms stall is drawn MIN_FAULT_WIDTH of the 10 s run wide.
    assert _fault_bars(lanes) == [
        ("disk_stall", 4.0, round(1 + stripe["disk_stall"] - half, 4), round(MIN_FAULT_WIDTH * 10, 4),
         FAULT_BAR_HEIGHT, colour["disk_stall"]),
        ("gc_pause", 1.0, round(1 + stripe["gc_pause"] - half, 4), 0.3, FAULT_BAR_HEIGHT, colour["gc_pause"]),
        ("network_partition", 0.5, round(stripe["network_partition"] - half, 4), 1.5, FAULT_BAR_HEIGHT,
         colour["network_partition"]),
        ("network_partition", 9.0, round(stripe["network_partition"] - half, 4), 1.0, FAULT_BAR_HEIGHT,
         colour["network_partition"]),
    ]
    labels = [t.get_text() for t in lanes.get_legend().get_texts()]
    assert labels[-3:] == ["network partition (cut off from peers)", "GC pause", "disk stall"]
    # No colour of a fault is the down grey or a crash / unclean election's red; the bars leave the lane's middle,
    # where the crash, restart and election marks are, free.
    assert not set(colour.values()) & {"#bbbbbb", "#d62728", "#b2182b"}
    assert len(set(colour.values())) == len(FAULT_STYLE)
    assert all(abs(s) - half >= 0.1 and abs(s) + half <= 0.4 for s in stripe.values())


def test_the_legend_names_only_the_fault_kinds_drawn_and_a_run_without_faults_draws_none() -> None:
    partitions_only = replace(failover(), faults=FAULTS[:1], faults_total=1)
    labels = [t.get_text() for t in render_overview(partitions_only).axes[2].get_legend().get_texts()]
    assert "network partition (cut off from peers)" in labels
    assert "GC pause" not in labels and "disk stall" not in labels
    quiet = render_overview(failover()).axes[2]
    assert _fault_bars(quiet) == []
    assert not {t.get_text() for t in quiet.get_legend().get_texts()} & {v.label for v in FAULT_STYLE.values()}


def test_the_lanes_panel_is_tall_enough_for_its_legend_with_every_kind() -> None:
    """Two lanes, every kind of mark: the legend beside the lanes ends above the lanes' bottom edge, not below the
    figure's (as it did with the lanes' height alone)."""
    elections = pd.DataFrame([(0, 1, False, False, 1), (5, 2, False, True, 1)], columns=list(ELECTION_COLUMNS))
    fig = render_overview(replace(failover(), elections=elections, faults=FAULTS, faults_total=len(FAULTS)))
    fig.canvas.draw()
    lanes = fig.axes[2]
    assert len(lanes.get_legend().get_texts()) == 10
    assert lanes.get_legend().get_window_extent().y0 >= lanes.get_window_extent().y0


def test_faults_left_out_by_the_cap_are_counted_in_the_subtitle() -> None:
    fig = render_overview(replace(failover(), faults=FAULTS[:2], faults_total=7))
    assert len(_fault_bars(fig.axes[2])) == 2
    assert "first 2 of 7 broker faults drawn" in fig.texts[0].get_text()
    every = render_overview(replace(failover(), faults=FAULTS, faults_total=4))
    assert "broker faults" not in every.texts[0].get_text()


def test_with_more_brokers_than_lanes_a_faulted_broker_keeps_its_lane_and_its_bar() -> None:
    """MAX_LANES + 5 quiet brokers but the last, which a GC pause held: the busiest lanes include it."""
    brokers = tuple(range(1, MAX_LANES + 6))
    pause = FaultSpan(3.0, 3.5, brokers[-1], "gc_pause")
    lanes = render_overview(replace(failover(), brokers=brokers, faults=(pause,), faults_total=1)).axes[2]
    shown = [t.get_text() for t in lanes.get_yticklabels()]
    assert len(shown) == MAX_LANES and shown[-1] == f"broker {brokers[-1]}"
    assert [(k, x) for k, x, *_ in _fault_bars(lanes)] == [("gc_pause", 3.0)]


def _fault_bands(ax) -> list[tuple[str, float, float, str]]:  # type: ignore[no-untyped-def]
    """(kind, start, end, colour) of every fault's band across a panel (a `Rectangle` since matplotlib 3.9)."""
    return sorted((p.get_gid().removeprefix("fault-time:"), round(p.get_x(), 4), round(p.get_x() + p.get_width(), 4),
                   to_hex(p.get_facecolor())) for p in ax.patches if (p.get_gid() or "").startswith("fault-time:"))


def test_the_upper_panels_shade_each_faults_time_once_in_its_kinds_colour() -> None:
    # The first partition is recorded on both sides of its cut: broker 2's copy of it is one band, not two.
    both_sides = (*FAULTS, FaultSpan(0.5, 2.0, 2, "network_partition", False, (1,), "both"))
    fig = render_overview(replace(failover(), faults=both_sides, faults_total=len(both_sides)))
    colour = {k: style.colour for k, style in FAULT_STYLE.items()}
    expected = [("disk_stall", 4.0, round(4.0 + MIN_FAULT_WIDTH * 10, 4), colour["disk_stall"]),
                ("gc_pause", 1.0, 1.3, colour["gc_pause"]),
                ("network_partition", 0.5, 2.0, colour["network_partition"]),
                ("network_partition", 9.0, 10.0, colour["network_partition"])]
    counts, churn, lanes = fig.axes
    assert _fault_bands(counts) == expected and _fault_bands(churn) == expected
    assert _fault_bands(lanes) == []  # the lanes have their bars
    # Faint, behind the counts: the under-replicated line drawn over them stays readable.
    assert {round(p.get_alpha(), 2) for p in counts.patches if (p.get_gid() or "").startswith("fault-time:")} == {0.12}
    assert _fault_bands(render_overview(failover()).axes[0]) == []


def test_the_upper_panels_shade_only_the_faults_of_the_brokers_drawn_as_lanes() -> None:
    brokers = tuple(range(1, MAX_LANES + 2))
    # Broker MAX_LANES + 1 has nothing but a pause: the busier brokers take every lane, so its pause is not shaded.
    quiet = FaultSpan(3.0, 3.5, MAX_LANES + 1, "gc_pause")
    elections = pd.DataFrame([(0, b, False, False, 2) for b in brokers[:-1]], columns=list(ELECTION_COLUMNS))
    fig = render_overview(replace(failover(), brokers=brokers, elections=elections, faults=(quiet,), faults_total=1))
    assert _fault_bands(fig.axes[0]) == []
