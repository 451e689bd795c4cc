"""`jobs.overview_plot` on hand-made data, without Spark: what the run's overview draws, and a valid PNG."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.colors import to_hex

from jobs.overview_plot import (
    CHURN_COLUMNS,
    COUNT_COLUMNS,
    DOWN_COLOUR,
    DOWN_COLUMNS,
    ELECTION_COLUMNS,
    ELR_COLOUR,
    MAX_LANES,
    UNSURE_DOWN_COLOUR,
    ClusterOverview,
    _down_spans,
    plot_overview,
    render_overview,
)
from jobs.plots import UNCLEAN_COLOUR, UNSURE_LABEL, LifecycleMark

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def incident() -> ClusterOverview:
    """Three brokers, 10 buckets of 1 s: broker 3 crashes at 2.5 s and restarts at 6.2 s; its two partitions are
    under-replicated meanwhile; the controller elects broker 1 cleanly at 2 s and broker 2 uncleanly at 7 s."""
    counts = pd.DataFrame([(b, 2 if 2 <= b <= 6 else 0, 1 if b == 4 else 0, 0, 1 if b in (2, 3) else 0)
                           for b in range(10)], columns=list(COUNT_COLUMNS))
    return ClusterOverview(
        run_id="run-1", end_s=10.0, bucket_ms=1000, brokers=(1, 2, 3), partitions=4, counts=counts,
        churn=pd.DataFrame([(2, 2, 0), (6, 0, 2)], columns=list(CHURN_COLUMNS)),
        elections=pd.DataFrame([(2, 1, False, False, 1), (7, 2, True, False, 1)], columns=list(ELECTION_COLUMNS)),
        down=pd.DataFrame([(3, b, False) for b in range(2, 7)], columns=list(DOWN_COLUMNS)),
        lifecycle=(LifecycleMark(2.5, 3, "crash"), LifecycleMark(6.2, 3, "restart")), lifecycle_total=2)


def test_the_figure_shows_the_counts_the_churn_and_a_lane_per_broker() -> None:
    fig = render_overview(incident())
    counts, churn, lanes = fig.axes[:3]
    urp = next(line for line in counts.get_lines() if line.get_label() == "under-replicated partitions")
    assert list(urp.get_ydata()) == [0, 0, 2, 2, 2, 2, 2, 0, 0, 0]
    assert list(urp.get_xdata()) == [float(b) for b in range(10)], "bucket starts, in seconds"
    bars = sorted((p.get_x(), round(p.get_height())) for p in churn.patches if p.get_height())
    assert bars == [(2.0, 2), (6.0, -2)], "two shrinks up in bucket 2, two expands down in bucket 6"
    assert [t.get_text() for t in lanes.get_yticklabels()] == ["broker 1", "broker 2", "broker 3"]
    # Broker 3 is down in buckets 2..6 (its crash at 2.5 s to its restart at 6.2 s), on its own lane (the third).
    downs = [c for c in lanes.collections if to_hex(c.get_facecolor()[0]) == DOWN_COLOUR]
    (extent,) = [p.get_extents() for p in downs[0].get_paths()]
    assert tuple(round(v, 3) for v in (extent.x0, extent.x1, extent.y0, extent.y1)) == (2.0, 7.0, 1.6, 2.4)
    unclean = [c for c in lanes.collections if to_hex(c.get_facecolor()[0]) == UNCLEAN_COLOUR]
    assert [tuple(o) for c in unclean for o in c.get_offsets()] == [(7.5, 1.0)], "broker 2's unclean election"
    title = fig.texts[0].get_text()
    assert "4 partitions, 3 brokers; most per 1 s bucket (equal counts drawn 1.8 points apart)" in title
    # Equal counts do not hide each other: the same value is drawn 1.8 points higher on the orange line.
    umi = next(line for line in counts.get_lines() if line.get_label() == "partitions under min ISR")
    y_urp, y_umi = (line.get_transform().transform((4.0, 1.0))[1] for line in (urp, umi))
    assert y_urp - y_umi == pytest.approx(1.8 * fig.dpi / 72)
    # Brokers the run names without a lane (a broker log's brokers, whose assignment no line states) count too.
    named = render_overview(replace(incident(), broker_count=5))
    assert "4 partitions, 5 brokers; most per 1 s bucket" in named.texts[0].get_text()


def test_a_crash_read_at_the_restart_is_down_at_some_time_in_its_stretch() -> None:
    """Broker 3's crash read from its log at the restart (dated at its last line, 2.5 s): its down buckets are drawn
    fainter and dotted, named so in the legend, which says nothing of it for a run without one."""
    down = pd.DataFrame([(3, b, True) for b in range(2, 7)], columns=list(DOWN_COLUMNS))
    lanes = render_overview(replace(incident(), down=down)).axes[2]
    unsure = [c for c in lanes.collections if to_hex(c.get_facecolor()[0]) == UNSURE_DOWN_COLOUR]
    (extent,) = [p.get_extents() for c in unsure for p in c.get_paths()]
    assert tuple(round(v, 3) for v in (extent.x0, extent.x1, extent.y0, extent.y1)) == (2.0, 7.0, 1.6, 2.4)
    assert not [c for c in lanes.collections if to_hex(c.get_facecolor()[0]) == DOWN_COLOUR]
    assert UNSURE_LABEL in [t.get_text() for t in lanes.get_legend().get_texts()]
    assert UNSURE_LABEL not in [t.get_text() for t in render_overview(incident()).axes[2].get_legend().get_texts()]


def test_an_election_from_the_eligible_leader_replicas_has_its_own_mark() -> None:
    """KIP-966: broker 2 elected from the ELR at 5 s is a diamond of its own colour, named in the legend, which says
    nothing of it for a run without one."""
    elections = pd.DataFrame([(2, 1, False, False, 1), (5, 2, False, True, 1)], columns=list(ELECTION_COLUMNS))
    lanes = render_overview(replace(incident(), elections=elections)).axes[2]
    from_elr = [c for c in lanes.collections if to_hex(c.get_facecolor()[0]) == ELR_COLOUR]
    assert [tuple(o) for c in from_elr for o in c.get_offsets()] == [(5.5, 1.0)]
    assert "elected from the ELR" in [t.get_text() for t in lanes.get_legend().get_texts()]
    assert "elected from the ELR" not in [t.get_text() for t in render_overview(incident()).axes[2].get_legend()
                                          .get_texts()]


def test_down_spans_join_consecutive_down_buckets() -> None:
    down = pd.DataFrame([(1, 3, False), (1, 1, False), (1, 2, False), (1, 7, True), (2, 4, True)],
                        columns=list(DOWN_COLUMNS))
    assert _down_spans(down, 500) == {1: [(0.5, 2.0), (3.5, 4.0)], 2: [(2.0, 2.5)]}
    # A crash read at the restart (time unknown) is drawn apart.
    assert _down_spans(down, 500, unsure=False) == {1: [(0.5, 2.0)]}
    assert _down_spans(down, 500, unsure=True) == {1: [(3.5, 4.0)], 2: [(2.0, 2.5)]}


def test_many_brokers_keep_the_busiest_lanes_and_say_how_many_are_left_out() -> None:
    brokers = tuple(range(1, MAX_LANES + 11))
    crashes = tuple(LifecycleMark(1.0, b, "crash") for b in brokers[-3:])
    data = replace(incident(), brokers=brokers, lifecycle=crashes, lifecycle_total=len(crashes))
    fig = render_overview(data)
    shown = [t.get_text() for t in fig.axes[2].get_yticklabels()]
    assert len(shown) == MAX_LANES and {f"broker {b}" for b in brokers[-3:]} <= set(shown)
    assert "10 quieter brokers not drawn" in fig.texts[0].get_text()


def test_bad_input_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"ClusterOverview.counts lacks columns \['lagging'\]"):
        replace(incident(), counts=incident().counts.drop(columns=["lagging"]))
    with pytest.raises(ValueError, match="bucket_ms must be >= 1 ms, got 0"):
        replace(incident(), bucket_ms=0)
    path = plot_overview(incident(), tmp_path / "sub" / "overview.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
