"""`jobs.overview_plot` on hand-made data, without Spark: the controller's ISR removals in the churn panel and the
clean elections' ticks on the broker lanes, tested by what the figure draws."""

from __future__ import annotations

import pandas as pd
from matplotlib.colors import to_hex

from jobs.overview_plot import (
    CHURN_COLUMNS,
    CLEAN_COLOUR,
    CONTROLLER_COLUMNS,
    CONTROLLER_SHRINK_COLOUR,
    COUNT_COLUMNS,
    DOWN_COLUMNS,
    ELECTION_COLUMNS,
    ELECTION_TICK_SIZE,
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
        down=pd.DataFrame([(2, b) for b in range(2, 8)], columns=list(DOWN_COLUMNS)),
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
