"""`jobs.plots` on hand-made data, without Spark: the figure's content and a valid PNG."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from matplotlib.path import Path as MplPath
from matplotlib.text import Text

from jobs.fault_plot import FAULT_BAR_HEIGHT, FAULT_STYLE, MIN_FAULT_WIDTH, FaultSpan
from jobs.plots import (
    ELR_LABEL,
    EVIDENCE_TIE_POINTS,
    FETCH_ERROR_COLOUR,
    INFO_COLOUR,
    ISR_COLUMNS,
    LANE_FAULT_OFFSETS,
    LOSS_SPAN_WIDTH,
    OFFSET_COLUMNS,
    SUBTITLE_CHARS,
    UNCLEAN_COLOUR,
    UNSURE_LABEL,
    EvidencePoint,
    FetchErrorMark,
    IncidentSpan,
    LeaderChange,
    LifecycleMark,
    LossSpan,
    PartitionPlot,
    ViolationMark,
    broken_at,
    down_spans,
    evidence_key,
    headline,
    merged,
    outside,
    plot_partition,
    plural,
    render_partition,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _offsets(rows: list[tuple[int, float, int, int]]) -> pd.DataFrame:
    """(replica, t_s, hw, leo) with exact (non-aggregated) ranges."""
    return pd.DataFrame([(r, t, hw, leo, hw, hw, leo, leo) for r, t, hw, leo in rows], columns=list(OFFSET_COLUMNS))


def _isr(rows: list[tuple[int, float, bool]]) -> pd.DataFrame:
    return pd.DataFrame([(r, t, m, m, False) for r, t, m in rows], columns=list(ISR_COLUMNS))


def _figure_text(fig) -> str:  # type: ignore[no-untyped-def]
    """Title and subtitle: the texts placed on the figure itself."""
    return "\n".join(t.get_text() for t in fig.texts)


def kip101_like() -> PartitionPlot:
    """Broker 2 leads, broker 1 truncates to its HW on restart and is then elected: offset 1 is lost."""
    return PartitionPlot(
        run_id="run-1", topic="kip101", partition=0, end_s=25.0, replicas=(1, 2),
        offsets=_offsets([(2, 0.0, 0, 0), (2, 1.0, 0, 1), (2, 6.0, 1, 2), (2, 6.002, 2, 2),
                          (1, 0.0, 0, 0), (1, 1.0, 1, 1), (1, 6.0, 1, 2), (1, 7.0, 1, 1), (1, 18.0, 2, 2)]),
        isr=_isr([(1, 0.0, True), (2, 0.0, True), (2, 7.5, False), (2, 17.0, True)]),
        leaders=(LeaderChange(0.0, 2, 0), LeaderChange(7.6, 1, 1)),
        violations=(ViolationMark(18.0, "acked_write_lost", "error", 1, 1,
                                  (EvidencePoint(7.0, "truncation by broker 1"),
                                   EvidencePoint(6.0, "append by broker 2"))),
                    ViolationMark(20.0, "committed_prefix_agreement", "warning", None, None)),
        incidents=(IncidentSpan(8.0, 16.0, 2, "missing", 1, 30_000), IncidentSpan(20.0, None, 2, "ongoing", 1)),
        lifecycle=(LifecycleMark(6.2, 1, "crash"), LifecycleMark(7.0, 1, "restart")),
    )


def test_headline_names_what_went_wrong() -> None:
    assert headline(kip101_like()) == ("1 error (acked_write_lost) · 1 warning (committed_prefix_agreement) · "
                                       "2 lag incidents (missing, ongoing)")


def test_headline_counts_every_violation_when_only_the_first_are_marked() -> None:
    # The report marks at most report.max_rows violations; the headline counts the partition's totals.
    data = replace(kip101_like(), violation_totals=(("error", "acked_write_lost", 538),
                                                    ("warning", "committed_prefix_agreement", 1000),
                                                    ("warning", "inconsistent_offsets", 189)))
    assert headline(data) == ("538 errors (acked_write_lost) · 1,189 warnings (committed_prefix_agreement, "
                              "inconsistent_offsets) · 2 lag incidents (missing, ongoing)")


def test_a_long_headline_goes_on_several_subtitle_lines_broken_between_its_parts() -> None:
    # Five invariants broken in one partition (kip-279 in its old mode): the headline, longer than a subtitle line,
    # is broken between its parts rather than running off the figure.
    data = replace(kip101_like(), violation_totals=(
        ("error", "epoch_cache_monotonic", 1), ("error", "follower_log_matching", 1),
        ("warning", "committed_prefix_agreement", 1), ("warning", "inconsistent_offsets", 1),
        ("warning", "isr_holds_committed", 1), ("info", "acks1_write_lost", 5)))
    assert len(headline(data)) > SUBTITLE_CHARS
    lines = _figure_text(render_partition(data)).splitlines()
    assert lines[1:3] == ["2 errors (epoch_cache_monotonic, follower_log_matching) · 3 warnings "
                          "(committed_prefix_agreement, inconsistent_offsets, isr_holds_committed) ·",
                          "5 info (acks1_write_lost) · 2 lag incidents (missing, ongoing)"]
    assert all(len(line) <= SUBTITLE_CHARS for line in lines[1:])


INFO_LEGEND = "info: acks=1 write lost\n(Kafka allows it)"


def _acks1_lost() -> tuple[ViolationMark, ...]:
    """Three acks=1 writes at offsets 3..5 lost at the end of the run (24.9 s), each with its append's evidence."""
    return tuple(ViolationMark(24.9, "acks1_write_lost", "info", 1, o, (EvidencePoint(o - 1.0, "append by broker 2"),),
                               end_of_run=True) for o in (3, 4, 5))


def test_the_headline_counts_acks1_losses_as_info_after_errors_and_warnings() -> None:
    data = replace(kip101_like(), violations=kip101_like().violations + _acks1_lost())
    assert headline(data) == ("1 error (acked_write_lost) · 1 warning (committed_prefix_agreement) · "
                              "3 info (acks1_write_lost) · 2 lag incidents (missing, ongoing)")
    only = replace(kip101_like(), violations=(), incidents=(), violation_totals=(("info", "acks1_write_lost", 1),))
    assert headline(only) == "1 info (acks1_write_lost)"


def test_acks1_losses_are_small_calm_diamonds_under_the_errors_with_one_label_and_a_legend_entry() -> None:
    data = replace(kip101_like(), violations=kip101_like().violations + _acks1_lost())
    fig = render_partition(data)
    top = fig.axes[0]
    diamonds = [line for line in top.get_lines() if line.get_marker() == "D"]
    assert sorted(float(line.get_ydata()[0]) for line in diamonds) == [3.0, 4.0, 5.0]
    # Edged in their own colour: a white edge would blank out the next mark in a column of lost offsets.
    assert {(to_hex(line.get_color()), to_hex(line.get_markeredgecolor())) for line in diamonds} == {
        (INFO_COLOUR, INFO_COLOUR)}
    (cross,) = [line for line in top.get_lines() if line.get_marker() == "X"]  # the acked_write_lost error
    assert all(d.get_markersize() < cross.get_markersize() and d.get_zorder() < cross.get_zorder() for d in diamonds)
    texts = [t.get_text() for t in top.texts]
    # One label for the invariant, counting the marks it stands for; the error and the warning keep theirs. An
    # end-of-run finding's replica is the final leader lacking the write, not the broker the mark sits on.
    assert [t for t in texts if t.startswith("INFO:")] == [
        "INFO: acks1_write_lost (+2 more)\n(offset 3, not on final leader 1)"]
    assert any(t.startswith("ERROR: acked_write_lost") for t in texts)
    assert any(t.startswith("WARNING: committed_prefix_agreement") for t in texts)
    # Only the labelled finding's evidence is drawn: one ring for three findings.
    assert sum(t.strip().endswith(". append by broker 2") for t in texts) == 2, "the error's append, and one info's"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"error", "warning", INFO_LEGEND} <= set(legend)
    assert INFO_LEGEND not in [t.get_text() for t in render_partition(kip101_like()).legends[0].get_texts()]
    # The report marks the first max_rows: the label counts every finding of the partition.
    totals = (("error", "acked_write_lost", 1), ("warning", "committed_prefix_agreement", 1),
              ("info", "acks1_write_lost", 60))
    capped = render_partition(replace(data, violation_totals=totals))
    assert "INFO: acks1_write_lost (+59 more)\n(offset 3, not on final leader 1)" in [
        t.get_text() for t in capped.axes[0].texts]


def test_a_long_subtitle_goes_on_as_many_lines_as_it_needs_breaking_between_notes() -> None:
    notes = ("first 5 of 9 leader changes drawn", "50 of 60 violations marked, each invariant's earliest first",
             "first 2 of the replicas' 40 broker faults drawn")
    sub = _figure_text(render_partition(replace(kip101_like(), notes=notes, bucket_ms=200))).splitlines()
    assert sub[1:] == [
        "1 error (acked_write_lost) · 1 warning (committed_prefix_agreement) · 2 lag incidents (missing, ongoing)",
        "LEO wide line, HW dashed, one colour per broker (equal offsets drawn 2.5 points apart); one point per 200 ms "
        "bucket; first 5 of 9 leader changes drawn;",
        "50 of 60 violations marked, each invariant's earliest first; first 2 of the replicas' 40 broker faults drawn"]


def test_figure_shows_hw_and_leo_per_replica_the_isr_lanes_leaders_and_the_incident(tmp_path: Path) -> None:
    fig = render_partition(kip101_like())
    top, lanes = fig.axes
    labels = top.get_legend_handles_labels()[1]
    assert {"broker 1 LEO", "broker 1 HW", "broker 2 LEO", "broker 2 HW"} <= set(labels)
    texts = [t.get_text().strip() for t in top.texts]
    assert "→ leader 2, epoch 0" in texts and "→ leader 1, epoch 1" in texts
    assert {"1. append by broker 2", "2. truncation by broker 1"} <= set(texts), "the evidence, numbered in order"
    assert {"crash", "restart"} <= {t.get_text() for t in lanes.texts}
    assert any("ERROR: acked_write_lost" in t and "offset 1" in t for t in texts)
    assert any("WARNING: committed_prefix_agreement" in t for t in texts)
    assert "broker 2 lagging > 30 s: missing (never removed from the ISR)" in texts
    assert any("ongoing" in t for t in texts)
    assert top.get_ylabel() == "offset (messages)"
    assert "time" in lanes.get_xlabel() and "(s)" in lanes.get_xlabel()
    assert [t.get_text() for t in lanes.get_yticklabels()] == ["broker 1", "broker 2"]
    assert "kip101-0   (run run-1)" in _figure_text(fig)
    # Broker 2's LEO step line reaches the end of the run.
    leo2 = next(line for line in top.get_lines() if line.get_label() == "broker 2 LEO")
    assert leo2.get_xdata()[-1] == pytest.approx(25.0)


def test_an_unclean_election_is_drawn_red_and_dashed_labelled_and_counted() -> None:
    data = replace(kip101_like(), leaders=(LeaderChange(0.0, 2, 0), LeaderChange(7.6, 1, 1, unclean=True)))
    assert headline(data) == ("1 error (acked_write_lost) · 1 warning (committed_prefix_agreement) · "
                              "1 unclean election · 2 lag incidents (missing, ongoing)")
    fig = render_partition(data)
    top = fig.axes[0]
    label = next(t for t in top.texts if "leader 1" in t.get_text())
    assert label.get_text().strip() == "→ leader 1, epoch 1 (unclean)" and label.get_color() == UNCLEAN_COLOUR
    dashed = [line for line in top.get_lines() if line.get_color() == UNCLEAN_COLOUR]
    assert len(dashed) == 1 and dashed[0].get_linestyle() == "--" and dashed[0].get_xdata()[0] == 7.6
    assert "unclean election" in [t.get_text() for t in fig.legends[0].get_texts()]
    # Without one, neither the legend nor the headline mentions it.
    assert "unclean election" not in [t.get_text() for t in render_partition(kip101_like()).legends[0].get_texts()]


def _lane_bars(ax, lane: int) -> list[tuple[bool, float, float]]:  # type: ignore[no-untyped-def]
    """(hatched, x from, x to) of the bars spanning lane `lane`'s full height, the grey background left out."""
    out = []
    for c in ax.collections:
        # An unfilled bar (an eligible replica's outline) has no face colour.
        face = c.get_facecolor()
        grey = len(face) > 0 and tuple(round(float(x), 3) for x in face[0][:3]) == (0.933, 0.933, 0.933)
        for path in c.get_paths():
            v = path.vertices
            if not grey and v[:, 1].min() == pytest.approx(lane - 0.4) and v[:, 1].max() == pytest.approx(lane + 0.4):
                out.append((bool(c.get_hatch()), round(float(v[:, 0].min()), 3), round(float(v[:, 0].max()), 3)))
    return sorted(out)


def test_a_replica_that_left_and_rejoined_inside_a_bucket_is_hatched_over_that_bucket_only() -> None:
    """Broker 2 left and rejoined within the 175 ms bucket at 7.5 s and stays until 17 s: that bucket is hatched,
    and the lane is a member's from 0 to 17 s (before, the hatch ran on to the next change)."""
    isr = pd.DataFrame([(1, 0.0, True, True, False), (2, 0.0, True, True, False), (2, 7.5, True, False, False),
                        (2, 17.0, False, False, False)], columns=list(ISR_COLUMNS))
    lanes = render_partition(replace(kip101_like(), isr=isr, bucket_ms=175)).axes[1]
    assert _lane_bars(lanes, 1) == [(False, 0.0, 17.0), (True, 7.5, 7.675)]


def test_an_eligible_leader_replica_is_outlined_while_it_is_one() -> None:
    """KIP-966: broker 2 leaves the ISR at 7.5 s below min ISR and is eligible until it rejoins at 17 s: its lane is
    outlined and dotted over that span, and the legend says what that means; without one, the legend does not."""
    isr = pd.DataFrame([(1, 0.0, True, True, False), (2, 0.0, True, True, False), (2, 7.5, False, False, True),
                        (2, 17.0, True, True, False)], columns=list(ISR_COLUMNS))
    fig = render_partition(replace(kip101_like(), isr=isr))
    assert _lane_bars(fig.axes[1], 1) == [(False, 0.0, 7.5), (False, 17.0, 25.0), (True, 7.5, 17.0)]
    assert ELR_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]
    assert ELR_LABEL not in [t.get_text() for t in render_partition(kip101_like()).legends[0].get_texts()]


def test_an_election_from_the_eligible_leader_replicas_says_so() -> None:
    """KIP-966: a leader elected from the ELR is an ordinary leader change whose label names where it came from."""
    data = replace(kip101_like(), leaders=(LeaderChange(0.0, 2, 0), LeaderChange(7.6, 1, 1, from_elr=True)))
    top = render_partition(data).axes[0]
    label = next(t for t in top.texts if "leader 1" in t.get_text())
    assert label.get_text().strip() == "→ leader 1, epoch 1 (from ELR)"
    assert not [line for line in top.get_lines() if line.get_color() == UNCLEAN_COLOUR]


def test_isr_lane_shading_follows_membership() -> None:
    fig = render_partition(kip101_like())
    lanes = fig.axes[1]
    # Broker 2's lane (index 1): in the ISR on [0, 7.5) and from 17 to the end of the run (25).
    spans = []
    for coll in lanes.collections:
        for path in coll.get_paths():
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            if coll.get_alpha() == pytest.approx(0.55) and ys.min() == pytest.approx(0.6):
                spans.append((round(float(xs.min()), 3), round(float(xs.max()), 3)))
    assert sorted(spans) == [(0.0, 7.5), (17.0, 25.0)]


def test_plot_partition_writes_a_png_of_non_trivial_size(tmp_path: Path) -> None:
    path = plot_partition(kip101_like(), tmp_path / "p.png")
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 20_000


def test_aggregated_buckets_and_a_partition_without_data_still_render(tmp_path: Path) -> None:
    offsets = pd.DataFrame([(1, float(t), t * 10, t * 10 + 5, t * 10 - 3, t * 10, t * 10, t * 10 + 9)
                            for t in range(100)], columns=list(OFFSET_COLUMNS))
    plot = PartitionPlot(run_id="big", topic="t", partition=3, end_s=100.0, replicas=(1,), offsets=offsets,
                         isr=pd.DataFrame([(1, 0.0, True, True, False), (1, 50.0, True, False, False)],
                                          columns=list(ISR_COLUMNS)),
                         bucket_ms=250, notes=("first 5 of 9 leader changes drawn",))
    fig = render_partition(plot)
    assert "one point per 250 ms bucket" in _figure_text(fig)
    assert "first 5 of 9 leader changes drawn" in _figure_text(fig)
    empty = PartitionPlot(run_id="r", topic="t", partition=0, end_s=0.0, replicas=(),
                          offsets=pd.DataFrame(columns=list(OFFSET_COLUMNS)),
                          isr=pd.DataFrame(columns=list(ISR_COLUMNS)))
    assert plot_partition(empty, tmp_path / "empty.png").read_bytes()[:8] == PNG_MAGIC


def test_a_frame_missing_a_column_is_refused_with_the_columns_named() -> None:
    with pytest.raises(ValueError, match=r"offsets lacks columns \['hw_min'"):
        PartitionPlot(run_id="r", topic="t", partition=0, end_s=1.0, replicas=(1,),
                      offsets=pd.DataFrame(columns=["replica", "t_s", "hw", "leo"]),
                      isr=pd.DataFrame(columns=list(ISR_COLUMNS)))


def test_crowded_lag_incidents_are_labelled_without_overlap_bad_verdicts_first() -> None:
    """Twenty incidents a second apart cannot all carry a label: the ones that do never overlap, every late /
    missing / premature one is among them, and the subtitle says how many are labelled."""
    crowded = tuple(IncidentSpan(float(k), k + 0.8, 2, "missing" if k % 7 == 3 else "on_time", 1, 10_000)
                    for k in range(20))
    fig = render_partition(replace(kip101_like(), incidents=crowded))
    top = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [t for t in top.texts if "lagging" in t.get_text()]
    assert 3 <= len(labels) < 20
    extents = [t.get_window_extent(renderer) for t in labels]
    assert not any(a.overlaps(b) for k, a in enumerate(extents) for b in extents[k + 1:])
    missing = sum("missing" in t.get_text() for t in labels)
    assert missing == sum(i.verdict == "missing" for i in crowded) == 3
    assert f"{len(labels)} of 20 lag incidents labelled (shading marks all)" in _figure_text(fig)
    # The shading still marks all twenty (on both panels).
    assert sum(1 for p in top.patches if p.get_alpha() == pytest.approx(0.13)) == 20


def test_evidence_labels_of_events_close_together_do_not_overlap() -> None:
    """Two violations at one offset citing eight events within two seconds (the shape of an acknowledged write
    lost after a failover): every numbered label stays readable."""
    events = tuple(EvidencePoint(6.0 + 0.25 * k, f"{'append' if k % 2 else 'hw_change'} by broker {1 + k % 2}")
                   for k in range(8))
    violations = (ViolationMark(18.0, "acked_write_lost", "error", 1, 1, events[:5]),
                  ViolationMark(19.0, "inconsistent_offsets", "error", 1, 1, events[3:]))
    fig = render_partition(replace(kip101_like(), violations=violations))
    renderer = fig.canvas.get_renderer()
    labels = [t for t in fig.axes[0].texts if t.get_text()[:2] in {f"{k}." for k in range(1, 9)}]
    assert sorted(t.get_text().split(".")[0] for t in labels) == [str(k) for k in range(1, 9)]
    extents = [t.get_window_extent(renderer) for t in labels]
    assert not any(a.overlaps(b) for k, a in enumerate(extents) for b in extents[k + 1:])


def test_a_followers_fetch_errors_are_ticks_on_its_lane_with_a_legend_entry() -> None:
    data = replace(kip101_like(), fetch_errors=(FetchErrorMark(9.0, 2), FetchErrorMark(9.5, 2),
                                                FetchErrorMark(3.0, 1), FetchErrorMark(4.0, 7)))
    lanes = render_partition(data).axes[1]
    ticks = {tuple(line.get_xdata()): tuple(round(float(y), 2) for y in line.get_ydata())
             for line in lanes.get_lines() if line.get_color() == FETCH_ERROR_COLOUR}
    # Broker 1 is lane 0, broker 2 lane 1; broker 7 is not a replica of the partition: not drawn.
    assert ticks == {(3.0,): (-0.33,), (9.0, 9.5): (0.67, 0.67)}
    legend = [t.get_text() for t in render_partition(data).legends[0].get_texts()]
    assert "fetch response with an error\n(on the follower's lane)" in legend
    assert not any("fetch response" in t.get_text() for t in render_partition(kip101_like()).legends[0].get_texts())


# Broker 1 (lane 0) cut off from broker 2 and the controller at 10 s; broker 2 (lane 1) paused at 9 s and stalled
# at 12 s for 1 ms; broker 7 is no replica of the partition; broker 2's partition opens at 22 s and nothing heals it.
LANE_FAULTS = (FaultSpan(10.0, 12.5, 1, "network_partition", False, (1000, 2), "outbound"),
               FaultSpan(9.0, 9.4, 2, "gc_pause"), FaultSpan(12.0, 12.001, 2, "disk_stall"),
               FaultSpan(3.0, 8.0, 7, "gc_pause"),
               FaultSpan(22.0, 25.0, 2, "network_partition", True, (1,), "both"))


def _lane_fault_bars(ax) -> list[tuple[str, float, float, float, float, str]]:  # type: ignore[no-untyped-def]
    return sorted((p.get_gid().removeprefix("fault:"), round(p.get_x(), 4), round(p.get_y(), 4),
                   round(p.get_width(), 4), round(p.get_height(), 4), to_hex(p.get_facecolor()))
                  for p in ax.patches if (p.get_gid() or "").startswith("fault:"))


def test_the_replicas_broker_faults_are_bars_on_their_lanes_and_partitions_name_their_peers() -> None:
    data = replace(kip101_like(), faults=LANE_FAULTS, faults_total=4, controllers=(1000,))  # the replicas' 4
    fig = render_partition(data)
    lanes = fig.axes[1]
    half = FAULT_BAR_HEIGHT / 2
    up, down = LANE_FAULT_OFFSETS["network_partition"], LANE_FAULT_OFFSETS["gc_pause"]
    colour = {k: s.colour for k, s in FAULT_STYLE.items()}
    # The 1 ms stall is drawn MIN_FAULT_WIDTH of the 25 s run wide; broker 7's pause is not drawn.
    assert _lane_fault_bars(lanes) == [
        ("disk_stall", 12.0, round(1 + down - half, 4), round(MIN_FAULT_WIDTH * 25, 4), FAULT_BAR_HEIGHT,
         colour["disk_stall"]),
        ("gc_pause", 9.0, round(1 + down - half, 4), 0.4, FAULT_BAR_HEIGHT, colour["gc_pause"]),
        ("network_partition", 10.0, round(up - half, 4), 2.5, FAULT_BAR_HEIGHT, colour["network_partition"]),
        ("network_partition", 22.0, round(1 + up - half, 4), 3.0, FAULT_BAR_HEIGHT, colour["network_partition"]),
    ]
    # Between the fetch-error ticks (-0.33) and the leader strip (from +0.22), inside the lane's shading (+-0.4).
    assert all(o - half > -0.33 and o + half <= 0.22 for o in LANE_FAULT_OFFSETS.values())
    # The partitions say whom they cut off, brokers before the controller, beside their bars, never on them: the
    # first after its end, pointing back; the one open to the run's end before its start, pointing at it.
    texts = {t.get_text(): t for t in lanes.texts if t.get_gid() == "fault-label"}
    assert set(texts) == {"\u25c2 cut off from 2, controller 1000 (outbound only)",
                          "cut off from 1 (both ways) \u25b8"}
    assert texts["cut off from 1 (both ways) \u25b8"].get_horizontalalignment() == "right"
    renderer = fig.canvas.get_renderer()
    bars = [p.get_window_extent(renderer) for p in lanes.patches if (p.get_gid() or "").startswith("fault:")]
    assert not any(t.get_window_extent(renderer).overlaps(b) for t in texts.values() for b in bars)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [t for t in legend if t in ("network partition\n(cut off from peers)", "GC pause", "disk stall")] == [
        "network partition\n(cut off from peers)", "GC pause", "disk stall"]
    assert "broker faults drawn" not in _figure_text(fig)


def test_a_partition_picture_without_faults_draws_no_bar_and_a_capped_run_says_so() -> None:
    bare = render_partition(kip101_like())
    assert _lane_fault_bars(bare.axes[1]) == []
    assert not any("GC pause" in t.get_text() for t in bare.legends[0].get_texts())
    # Only broker 7 (no replica) paused: no bar, no legend entry.
    elsewhere = render_partition(replace(kip101_like(), faults=LANE_FAULTS[3:4], faults_total=1))
    assert _lane_fault_bars(elsewhere.axes[1]) == []
    assert not any("GC pause" in t.get_text() for t in elsewhere.legends[0].get_texts())
    capped = render_partition(replace(kip101_like(), faults=LANE_FAULTS[:2], faults_total=40))
    assert "first 2 of the replicas' 40 broker faults drawn" in _figure_text(capped)


def test_a_partition_label_goes_where_it_covers_no_other_label_or_is_left_out() -> None:
    def labels(*faults: FaultSpan) -> list[str]:
        """The alignments of the partition labels placed (left: after the bar's end, right: before its start)."""
        lanes = render_partition(replace(kip101_like(), faults=faults)).axes[1]
        renderer = lanes.figure.canvas.get_renderer()
        placed = [t for t in lanes.texts if t.get_gid() == "fault-label"]
        others = [t for t in lanes.texts if t.get_gid() != "fault-label"]
        box = lanes.get_window_extent(renderer)
        for t in placed:  # none covers a crash or restart label, and each stays inside the lanes' width
            extent = t.get_window_extent(renderer)
            assert not any(extent.overlaps(o.get_window_extent(renderer)) for o in others)
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1
        return [t.get_horizontalalignment() for t in placed]

    # Broker 1 crashes at 6.2 s, its label above the marker, where a partition's label would go: one from 5 s is
    # labelled before its start; one from 3 s has no room on either side (the picture starts at 0 s) and keeps its
    # bar only; broker 2, which has no crash, gets its label after the end.
    assert labels(FaultSpan(5.0, 5.5, 1, "network_partition", False, (2,), "both")) == ["right"]
    assert labels(FaultSpan(3.0, 3.5, 1, "network_partition", False, (2,), "both")) == []
    assert labels(FaultSpan(2.0, 2.5, 2, "network_partition", False, (1,), "inbound")) == ["left"]


def test_loss_spans_show_where_all_the_lost_writes_are_beyond_the_marks() -> None:
    """542 writes lost at 14 s (offsets 2-543) and 18 at 6 s (544-561), of which the picture marks only a few: a
    faint bar per instant over its offsets, `N lost` at its top, a legend entry; a single lost write gets its bar but
    no count (its mark says it); no bar and no entry without spans."""
    spans = (LossSpan(14.0, "acked_write_lost", "warning", 2, 543, 542),
             LossSpan(6.0, "acked_write_lost", "warning", 544, 561, 18),
             LossSpan(20.0, "acked_write_lost", "warning", 600, 600, 1))
    fig = render_partition(replace(kip101_like(), loss_spans=spans))
    top = fig.axes[0]
    bars = sorted((tuple(line.get_xdata()), tuple(line.get_ydata())) for line in top.get_lines()
                  if line.get_linewidth() == LOSS_SPAN_WIDTH)
    assert bars == [((6.0, 6.0), (544, 561)), ((14.0, 14.0), (2, 543)), ((20.0, 20.0), (600, 600))]
    assert sorted(t.get_text() for t in top.texts if t.get_text().endswith(" lost")) == ["18 lost", "542 lost"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("acknowledged writes lost") for t in legend)
    plain = render_partition(kip101_like())
    assert not any(line.get_linewidth() == LOSS_SPAN_WIDTH for line in plain.axes[0].get_lines())
    assert not any(t.get_text().startswith("acknowledged writes lost") for t in plain.legends[0].get_texts())


def _incident_labels(incidents: tuple[IncidentSpan, ...]) -> tuple[Any, list[str]]:
    """kip101_like over 60 s with `incidents`: the figure and its incident labels, sorted."""
    fig = render_partition(replace(kip101_like(), incidents=incidents, end_s=60.0))
    return fig, sorted(t.get_text().strip() for t in fig.axes[0].texts if "lagging" in t.get_text())


def test_a_zombie_leaders_incident_is_labelled_so_and_an_uncommitted_shrink_says_it() -> None:
    """Leader 1, deposed before the incident began, proposed the shrink in time but the controller never answered
    (pending); a later incident's shrink was rejected; a committed one reads as before."""
    incidents = (IncidentSpan(5.0, 9.0, 2, "on_time", 1, 10_000, "pending", zombie=True),
                 IncidentSpan(12.0, 16.0, 3, "late", 1, 10_000, "rejected"),
                 IncidentSpan(20.0, 24.0, 2, "on_time", 1, 10_000, "committed"))
    _, labels = _incident_labels(incidents)
    assert labels == ["broker 2 lagging > 10 s behind deposed leader 1: on_time (shrink never committed)",
                      "broker 2 lagging > 10 s: on_time (removed from the ISR in time)",
                      "broker 3 lagging > 10 s: late (shrink rejected)"]


def test_followers_that_fell_behind_together_share_one_label() -> None:
    """A leader cut off from both followers sees them lag from nearly the same instant with the same verdict: one
    label names both (the second would stack a row higher, or not fit). A follower's own later incident, and one with
    another verdict, keep labels of their own."""
    incidents = (IncidentSpan(5.0, 9.0, 2, "on_time", 1, 10_000, "committed"),
                 IncidentSpan(5.003, 9.0, 3, "on_time", 1, 10_000, "committed"),
                 IncidentSpan(5.2, 9.5, 4, "late", 1, 10_000, "committed"),
                 IncidentSpan(30.0, 34.0, 2, "on_time", 1, 10_000, "committed"))
    fig, labels = _incident_labels(incidents)
    assert labels == ["broker 2 lagging > 10 s: on_time (removed from the ISR in time)",
                      "broker 4 lagging > 10 s: late (removed from the ISR late)",
                      "brokers 2, 3 lagging > 10 s: on_time (removed from the ISR in time)"]
    assert "lag incidents labelled" not in _figure_text(fig), "all four are labelled"


def test_a_late_label_too_long_for_one_line_folds_at_its_band_and_only_then_ends_at_the_edge() -> None:
    """At 55 s of 80 a zombie leader's incident label would run past the panel on one line: it takes two lines of
    about equal length, starting at its band; at 78 s even those would not fit, so they end at the panel's edge (as
    one long line there would have reached back to ~45 s, over other bands)."""
    folded = " broker 2 lagging > 10 s behind deposed\n leader 1: on_time (shrink never committed)"
    for start, align in ((55.0, "left"), (78.0, "right")):
        fig = render_partition(replace(kip101_like(), end_s=80.0, incidents=(
            IncidentSpan(start, start + 2.0, 2, "on_time", 1, 10_000, "pending", zombie=True),)))
        (label,) = [t for t in fig.axes[0].texts if "lagging" in t.get_text()]
        renderer = fig.canvas.get_renderer()
        panel = fig.axes[0].get_window_extent(renderer)
        assert (label.get_text(), label.get_horizontalalignment()) == (folded, align)
        assert label.get_window_extent(renderer).x1 <= panel.x1 + 0.5
        if align == "left":
            assert label.get_position()[0] == start
    # Early in the run one line fits at the band.
    fig = render_partition(replace(kip101_like(), end_s=80.0, incidents=(
        IncidentSpan(5.0, 7.0, 2, "on_time", 1, 10_000, "pending", zombie=True),)))
    assert "\n" not in next(t.get_text() for t in fig.axes[0].texts if "lagging" in t.get_text())


def test_a_down_brokers_lines_stop_at_its_crash_and_resume_at_its_restart() -> None:
    """kip101_like: broker 1 crashes at 6.2 s and restarts at 7.0 s (recovery leaves LEO 1); broker 2 is never down.
    A crash without a restart stops the lines for good."""
    assert down_spans(kip101_like().lifecycle, 1, 25.0) == [(6.2, 7.0)]
    assert down_spans(kip101_like().lifecycle, 2, 25.0) == []
    forever = (LifecycleMark(3.0, 2, "start"), LifecycleMark(9.0, 2, "crash"), LifecycleMark(12.0, 2, "shutdown"))
    assert down_spans(forever, 2, 25.0) == [(9.0, 25.0)]
    # A crash read at the restart (dated at the last line: down at some time after) is drawn apart.
    unsure = (LifecycleMark(3.0, 2, "crash", "unclean_start"), LifecycleMark(5.0, 2, "start"), *forever[1:])
    assert down_spans(unsure, 2, 25.0) == [(3.0, 5.0), (9.0, 25.0)]
    assert down_spans(unsure, 2, 25.0, unsure=True) == [(3.0, 5.0)]
    assert down_spans(unsure, 2, 25.0, unsure=False) == [(9.0, 25.0)]

    top = render_partition(kip101_like()).axes[0]
    leo = {line.get_label(): line for line in top.lines}["broker 1 LEO"]
    xs, ys = (np.asarray(v, dtype=float) for v in leo.get_data())
    # Nothing is drawn between the crash and the restart; the line holds LEO 2 up to the crash and 1 from 7 s.
    inside = (xs > 6.2) & (xs < 7.0)
    assert not np.isfinite(ys[inside]).any()
    assert ys[xs == 6.0][0] == 2 and np.isnan(ys[xs == 6.2]).all() and ys[xs == 7.0][0] == 1
    # Never down: unbroken, drawn over the others while it leads (to 7.6 s), with the others after.
    lines = {line.get_gid(): line for line in top.lines}
    led_x, led_y = (np.asarray(v, dtype=float) for v in lines["broker 2 HW leading"].get_data())
    rest_x, rest_y = (np.asarray(v, dtype=float) for v in lines["broker 2 HW"].get_data())
    assert np.isfinite(led_y[led_x < 7.6]).all() and np.isfinite(rest_y[rest_x >= 7.6]).all()
    # (A lone point at the run's end draws nothing.)
    assert not np.isfinite(led_y[(led_x >= 7.6) & (led_x < 25.0)]).any() and not np.isfinite(rest_y[rest_x < 7.6]).any()


def test_a_leaders_lines_are_drawn_over_the_followers_while_it_leads() -> None:
    """kip101_like: broker 2 leads to 7.6 s, broker 1 from then on; each one's leading stretch is a line of its own
    above every follower line, and only the whole-series lines are in the legend."""
    top = render_partition(kip101_like()).axes[0]
    lines = {line.get_gid(): line for line in top.lines if line.get_gid()}
    for broker, (start, stop) in ((2, (0.0, 7.6)), (1, (7.6, 25.0))):
        for col in ("LEO", "HW"):
            leading, rest = lines[f"broker {broker} {col} leading"], lines[f"broker {broker} {col}"]
            assert leading.get_zorder() > max(line.get_zorder() for gid, line in lines.items()
                                              if not gid.endswith("leading"))
            x, y = (np.asarray(v, dtype=float) for v in leading.get_data())
            assert np.isfinite(y[(x >= start) & (x < stop)]).all(), (broker, col)
            assert leading.get_label() == "_nolegend_" and rest.get_label() == f"broker {broker} {col}"
    assert outside([(2.0, 4.0), (3.0, 5.0), (8.0, 10.0)], 12.0) == [(0.0, 2.0), (5.0, 8.0), (10.0, 12.0)]
    assert outside([(0.0, 12.0)], 12.0) == [] and merged([(5.0, 6.0), (1.0, 2.0), (2.0, 3.0)]) == [(1.0, 3.0),
                                                                                                    (5.0, 6.0)]


def test_broken_at_puts_a_gap_over_each_span_and_resumes_with_the_value_in_force() -> None:
    t, y = np.array([0.0, 2.0, 5.0, 10.0]), np.array([1.0, 2.0, 3.0, 3.0])
    bt, by = broken_at(t, y, [(1.0, 4.0)])
    assert bt.tolist() == [0.0, 1.0, 4.0, 5.0, 10.0]
    assert by[0] == 1.0 and np.isnan(by[1]) and by[2:].tolist() == [2.0, 3.0, 3.0]
    # To the end: no resumption.
    bt, by = broken_at(t, y, [(6.0, 10.0)])
    assert bt.tolist() == [0.0, 2.0, 5.0, 6.0, 10.0] and np.isnan(by[3])
    assert broken_at(t, y, []) == (t, y)
    # A change at the span's end: by default the line resumes at the new value; stepping in, it resumes at the value
    # before and steps up (a leader's line taking over from its follower line at a leader change).
    bt, by = broken_at(t, y, [(1.0, 5.0)])
    assert bt.tolist() == [0.0, 1.0, 5.0, 5.0, 10.0] and by[2:].tolist() == [3.0, 3.0, 3.0]
    bt, by = broken_at(t, y, [(1.0, 5.0)], step_in=True)
    assert bt.tolist() == [0.0, 1.0, 5.0, 5.0, 10.0] and by[2:].tolist() == [2.0, 3.0, 3.0]


def test_crowded_violation_labels_never_overlap_or_leave_the_panel_and_the_rest_are_counted() -> None:
    """Eight warnings of three invariants at one instant and offset (an end-of-run check after an unclean
    election), at the top of the panel: each invariant gets a label before any gets a second, no two labels
    overlap, none leaves the offset panel, and the subtitle counts the ones left out."""
    crowd = tuple(ViolationMark(20.0, inv, "warning", 1, 2) for inv in
                  ("acked_write_lost",) * 4 + ("inconsistent_offsets",) * 2 + ("committed_prefix_agreement",) * 2)
    fig = render_partition(replace(kip101_like(), violations=crowd))
    top = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [t for t in top.texts if t.get_text().startswith("WARNING:")]
    extents = [Text.get_window_extent(t, renderer) for t in labels]  # the boxes, not their leader lines
    panel = top.get_window_extent(renderer)
    assert labels and not any(a.overlaps(b) for k, a in enumerate(extents) for b in extents[k + 1:])
    assert all(panel.y0 <= e.y0 and e.y1 <= panel.y1 and panel.x0 <= e.x0 and e.x1 <= panel.x1 for e in extents)
    named = [t.get_text().split(":")[1].split("\n")[0].strip() for t in labels]
    assert len(set(named)) == min(len(labels), 3)  # the invariants take turns
    left_out = len(crowd) - len(labels)
    assert left_out > 0 and f"{plural(left_out, 'violation label')} left out (crowded)" in _figure_text(fig)


def test_a_violation_label_takes_a_place_whose_leader_line_crosses_no_other_label_or_line() -> None:
    """KIP-101's four errors along one offset (a truncation at 7 s, the loss at 13.5 s, the divergence at 18 s, the
    second truncation at 16 s, labelled in that order): the divergence's label, whose usual place below-left of its
    mark would send its line across the loss's label, goes where its line crosses no other label or line. The last
    one, at 16 s, has the loss's label under its mark and the divergence's above it: no place without a crossing is
    left, and it takes the first free height, as before."""
    from matplotlib.path import Path as MplPath

    marks = {("truncation_safety", 1): 7.0, ("acked_write_lost", 1): 13.5, ("truncation_safety", 2): 16.0,
             ("inconsistent_offsets", 1): 18.0}
    fig = render_partition(replace(kip101_like(), end_s=24.5, incidents=(), violations=tuple(
        ViolationMark(t, inv, "error", replica, 1) for (inv, replica), t in marks.items())))
    top = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    placed = {}
    for text in (t for t in top.texts if t.get_text().startswith("ERROR:")):
        key = (text.get_text().split(":")[1].split("\n")[0].strip(), int(text.get_text().split("(broker ")[1][0]))
        box = Text.get_window_extent(text, renderer)
        x, y = top.transData.transform((marks[key], 1))
        placed[key] = (box, MplPath([(x, y), (min(max(x, box.x0), box.x1), min(max(y, box.y0), box.y1))]))
    assert set(placed) == set(marks), "every error labelled"
    for key in (("truncation_safety", 1), ("acked_write_lost", 1), ("inconsistent_offsets", 1)):
        box, line = placed[key]
        for other, (other_box, other_line) in placed.items():
            if other != key and other != ("truncation_safety", 2):
                assert not line.intersects_path(other_line, filled=False), (key, other)
                assert not line.intersects_bbox(other_box.padded(-4), filled=True), (key, other)
                assert not other_line.intersects_bbox(box.padded(-4), filled=True), (key, other)


def test_plural_says_one_thing_in_the_singular() -> None:
    """The figures' counts: "1 violation label", "2 violation labels", "0 partitions"."""
    assert [plural(n, "violation label") for n in (1, 2)] == ["1 violation label", "2 violation labels"]
    assert plural(0, "partition") == "0 partitions"


def test_a_violation_at_the_bottom_of_the_panel_is_labelled_above_its_mark() -> None:
    """Below its mark there is no room at offset 0: the label goes above it, inside the panel; one mid-panel
    keeps its label below."""
    for offset, above in ((0, True), (1, False)):
        fig = render_partition(replace(kip101_like(), violations=(ViolationMark(20.0, "acked_write_lost", "error", 1,
                                                                                offset),)))
        top = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        [label] = [t for t in top.texts if t.get_text().startswith("ERROR:")]
        box = Text.get_window_extent(label, renderer)
        mark_y = top.transData.transform((20.0, offset))[1]
        panel = top.get_window_extent(renderer)
        assert bool(box.y0 > mark_y) is above and bool(box.y1 < mark_y) is not above, offset
        assert panel.y0 <= box.y0 and box.y1 <= panel.y1
        assert "left out" not in _figure_text(fig)


def test_a_down_broker_is_veiled_on_its_lane_from_its_crash_to_its_restart() -> None:
    """The lanes' ISR and leader strip are the controller's view, which keeps a crashed leader until its session
    times out: the broker's own down time (crash at 6.2 s, restart at 7.0 s) is drawn over them, and named in the
    legend; a broker that never went down has no veil and a picture without any no legend entry."""
    fig = render_partition(kip101_like())
    lanes = fig.axes[1]
    veils = {c.get_gid(): c for c in lanes.collections if (c.get_gid() or "").startswith("down:")}
    assert set(veils) == {"down:1"}
    (path,) = veils["down:1"].get_paths()
    box = path.get_extents()
    assert (round(box.x0, 3), round(box.x1, 3)) == (6.2, 7.0)
    assert "broker down (crash or\nshutdown to restart)" in [t.get_text() for t in fig.legends[0].get_texts()]
    calm = render_partition(replace(kip101_like(), lifecycle=()))
    assert not any((c.get_gid() or "").startswith("down:") for c in calm.axes[1].collections)
    assert "broker down (crash or\nshutdown to restart)" not in [t.get_text() for t in calm.legends[0].get_texts()]
    # The same crash read from broker logs at the restart, dated at the broker's last line: down at some time in
    # the stretch, veiled apart and named so.
    unsure = replace(kip101_like(), lifecycle=tuple(
        replace(m, reason="unclean_start") if m.action == "crash" else m for m in kip101_like().lifecycle))
    fig = render_partition(unsure)
    gids = {c.get_gid() for c in fig.axes[1].collections if (c.get_gid() or "").startswith("down")}
    assert gids == {"down-unsure:1"}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert UNSURE_LABEL in legend and "broker down (crash or\nshutdown to restart)" not in legend


def test_the_legend_names_only_the_marks_the_picture_draws() -> None:
    """A legend entry for a mark the picture lacks sends the reader looking for it: crashes, restarts, shutdowns,
    evidence rings, each kind of incident shading and a rejoin within a bucket appear only when drawn."""
    def legend(data: PartitionPlot) -> set[str]:
        return {t.get_text() for t in render_partition(data).legends[0].get_texts()}

    optional = {"broker crash", "broker (re)start", "broker shutdown", "evidence event\n(numbered in time order)",
                "lag incident\n(late / missing / premature)", "lag incident\n(ongoing)",
                "left and rejoined ISR\nwithin a bucket"}
    full = kip101_like()
    assert legend(full) & optional == optional - {"broker shutdown", "left and rejoined ISR\nwithin a bucket"}
    bare = replace(full, lifecycle=(), incidents=(), violations=())
    assert legend(bare) & optional == set()
    # The other incidents' entry names the verdicts drawn: "other verdicts" read as "not on time".
    calm = replace(bare, incidents=(IncidentSpan(8.0, 16.0, 2, "on_time", 1, 30_000),
                                    IncidentSpan(20.0, 24.0, 2, "recovered", 1, 30_000)))
    assert "lag incident\n(on time / recovered)" in legend(calm)
    assert {"in ISR (broker colour)", "leader"} <= legend(bare)


def test_an_incident_label_is_dark_red_only_for_the_leaders_failings() -> None:
    """Late, missing and premature labels are dark red; others (an on-time shrink, a follower still lagging at the
    end) dark amber, as their shading: an on-time shrink is no alarm."""
    from matplotlib.colors import to_hex

    from jobs.plots import INCIDENT_LABEL_BAD, INCIDENT_LABEL_OTHER

    top = render_partition(kip101_like()).axes[0]
    colours = {t.get_text().split(":")[1].split()[0]: to_hex(t.get_color()) for t in top.texts
               if " lagging" in t.get_text()}
    assert colours == {"missing": INCIDENT_LABEL_BAD, "ongoing": INCIDENT_LABEL_OTHER}


def _warning_crowd(cited: tuple[EvidencePoint, ...]):  # type: ignore[no-untyped-def]
    """Seven warnings of three invariants at 20 s, offset 1, each citing `cited`, drawn: (the warning labels' boxes,
    the offset panel's texts, the renderer)."""
    crowd = tuple(ViolationMark(20.0, inv, "warning", 2, 1, cited) for inv in
                  ("acked_write_lost",) * 3 + ("inconsistent_offsets", "committed_prefix_agreement") * 2)
    fig = render_partition(replace(kip101_like(), violations=crowd))
    renderer = fig.canvas.get_renderer()
    texts = fig.axes[0].texts
    return [Text.get_window_extent(t, renderer) for t in texts if t.get_text().startswith("WARNING:")], texts, renderer


def test_evidence_numbers_are_not_hidden_under_violation_labels() -> None:
    """A crowd of warnings at one instant (an end-of-run check after an unclean election) citing events just
    before it: the violations' boxes are placed first, and no numbered evidence label sits under one of them."""
    cited = (EvidencePoint(19.6, "truncation by broker 1"), EvidencePoint(19.8, "leader_election by broker 1000"))
    boxes, texts, renderer = _warning_crowd(cited)
    numbers = [t.get_window_extent(renderer) for t in texts if t.get_text()[:3] in {"1. ", "2. "}]
    assert len(boxes) >= 3 and len(numbers) == 2
    assert not any(n.overlaps(b) for n in numbers for b in boxes)


def test_evidence_numbers_are_not_hidden_under_a_leader_change_label() -> None:
    """Events just after a leader change, near the top of the panel: their numbers climb and find room beside the
    change's label (`→ leader 1, epoch 1`), not under it."""
    cited = tuple(EvidencePoint(7.7 + 0.1 * k, f"append by broker {k}") for k in range(3))
    fig = render_partition(replace(kip101_like(), violations=(ViolationMark(12.0, "acked_write_lost", "error", 1, 2,
                                                                            cited),)))
    renderer = fig.canvas.get_renderer()
    texts = fig.axes[0].texts
    leader = [t.get_window_extent(renderer) for t in texts if "leader 1, epoch 1" in t.get_text()]
    numbers = [t.get_window_extent(renderer) for t in texts if t.get_text()[:3] in {"1. ", "2. ", "3. "}]
    assert len(leader) == 1 and len(numbers) == 3
    assert not any(n.overlaps(leader[0]) for n in numbers)


def test_violation_labels_do_not_cover_the_lag_incidents_labels() -> None:
    """A violation low in the panel, inside the last lag incident: its label finds a height clear of the incident's
    label along the bottom of the panel instead of covering it (both are text a reader needs)."""
    offsets = _offsets([(2, 0.0, 0, 0), (2, 5.0, 10, 10), (1, 0.0, 0, 0), (1, 5.0, 10, 10)])
    data = replace(kip101_like(), offsets=offsets,
                   violations=(ViolationMark(22.0, "committed_prefix_agreement", "error", 1, 1),))
    fig = render_partition(data)
    renderer = fig.canvas.get_renderer()
    texts = fig.axes[0].texts
    boxes = [Text.get_window_extent(t, renderer) for t in texts if t.get_text().startswith("ERROR:")]
    incidents = [t.get_window_extent(renderer) for t in texts if "lagging" in t.get_text()]
    assert len(boxes) == 1 and len(incidents) == 2
    assert not any(boxes[0].overlaps(i) for i in incidents)


def test_leader_change_labels_close_in_time_do_not_cover_each_other_and_unclean_ones_go_on_top() -> None:
    """An unclean election whose long label reaches over the next two changes: each label takes the highest of the two
    rows where it covers no other, the unclean election first (alternating rows in time order put the third change's
    label over the first's)."""
    leaders = (LeaderChange(5.0, 3, 5, unclean=True), LeaderChange(6.0, 1, 6), LeaderChange(9.8, 2, 7))
    fig = render_partition(replace(kip101_like(), leaders=leaders))
    renderer = fig.canvas.get_renderer()
    labels = {t.get_text(): t for t in fig.axes[0].texts if "epoch" in t.get_text()}
    assert len(labels) == 3
    extents = [t.get_window_extent(renderer) for t in labels.values()]
    assert not any(a.overlaps(b) for k, a in enumerate(extents) for b in extents[k + 1:])
    assert labels[" → leader 3, epoch 5 (unclean)"].get_position()[1] == pytest.approx(0.985)


def test_leader_change_labels_leave_the_top_bands_marks_and_rings_visible() -> None:
    """A warning without an offset (the top band) just after a leader change, citing an event there: the change's
    label takes the row below rather than covering the mark or the ring."""
    warning = ViolationMark(9.0, "committed_prefix_agreement", "warning", None, None,
                            (EvidencePoint(8.5, "append by broker 2"),))
    fig = render_partition(replace(kip101_like(), violations=(warning,)))
    top = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    (label,) = [t for t in top.texts if "leader 1, epoch 1" in t.get_text()]
    extent = label.get_window_extent(renderer)
    band = top.get_xaxis_transform()
    for t in (9.0, 8.5):
        x, y = band.transform((t, 0.96))
        assert not extent.contains(x, y), f"the mark or ring at {t} s is under the label"


def test_evidence_labels_stay_off_the_legend_and_the_subtitle() -> None:
    """A ring near the run's end (its label ends at the ring instead of running into the legend), and five rings of a
    violation without an offset close together (their labels stay below the subtitle, as numbers if need be)."""
    late = ViolationMark(24.5, "acked_write_lost", "error", 1, 1,
                         (EvidencePoint(24.0, "leader_election by broker 1000"),))
    band = ViolationMark(12.0, "committed_prefix_agreement", "warning", None, None,
                         tuple(EvidencePoint(10.0 + 0.2 * k, f"append by broker {k}") for k in range(5)))
    fig = render_partition(replace(kip101_like(), violations=(late, band)))
    top = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    panel = top.get_window_extent(renderer)
    numbers = [t.get_window_extent(renderer) for t in top.texts if re.match(r"^\d+\.", t.get_text())]
    assert len(numbers) == 6
    assert all(panel.x0 <= e.x0 and e.x1 <= panel.x1 and e.y1 <= panel.y1 + 14 * fig.dpi / 72 for e in numbers)



def test_crowded_evidence_labels_fall_back_to_their_numbers_and_the_key_lists_every_ring() -> None:
    """Twenty-four events within 1.2 s at one offset: every number is drawn once, those without room for their label
    as the number alone, which the subtitle counts; `evidence_key` lists every ring in number order with its events'
    ids (two events of one time and label share a ring)."""
    events = tuple(EvidencePoint(6.0 + 0.05 * k, f"append by broker {1 + k % 2}", 100 + k) for k in range(24))
    twin = EvidencePoint(6.0, "append by broker 1", 99)
    violations = (ViolationMark(18.0, "acked_write_lost", "error", 1, 1, (twin, *events[:13])),
                  ViolationMark(19.0, "inconsistent_offsets", "error", 1, 1, events[11:]))
    data = replace(kip101_like(), violations=violations)
    fig = render_partition(data)
    numbered = [t.get_text() for t in fig.axes[0].texts if re.match(r"^\d+\.", t.get_text())]
    assert sorted(int(t.split(".")[0]) for t in numbered) == list(range(1, 25))
    short = [t for t in numbered if re.fullmatch(r"\d+\.", t)]
    assert short, "twenty-four full labels within 1.2 s cannot all find room"
    assert f"{plural(len(short), 'evidence label')} shortened to the number (the report lists them)" in _figure_text(
        fig)
    key = evidence_key(data)
    assert [(r.number, r.label) for r in key] == [(k + 1, e.label) for k, e in enumerate(events)]
    assert key[0].event_ids == (99, 100) and key[23].event_ids == (123,) and key[3].time_s == pytest.approx(6.15)


def test_a_clean_changes_label_with_no_free_row_goes_under_an_unclean_elections() -> None:
    """Two unclean elections filling both rows over a clean change's time: its label has to cover one, and is drawn
    under it (what may have lost data stays readable)."""
    leaders = (LeaderChange(5.0, 3, 5, unclean=True), LeaderChange(9.0, 2, 6, unclean=True), LeaderChange(8.0, 1, 7))
    fig = render_partition(replace(kip101_like(), leaders=leaders))
    renderer = fig.canvas.get_renderer()
    labels = [t for t in fig.axes[0].texts if "epoch" in t.get_text()]
    (clean,) = [t for t in labels if "unclean" not in t.get_text()]
    covered = [t for t in labels if "unclean" in t.get_text()
               and t.get_window_extent(renderer).overlaps(clean.get_window_extent(renderer))]
    assert covered and all(t.get_zorder() > clean.get_zorder() for t in covered)


def test_a_number_alone_finds_a_place_clear_of_the_violations_boxes() -> None:
    """A crowd of warnings at one instant citing eight events in the second before it: the numbers that have no room
    for their label go further up or down their ring's line rather than under a violation's box."""
    cited = tuple(EvidencePoint(19.0 + 0.1 * k, f"append by broker {1 + k % 2}") for k in range(8))
    boxes, texts, renderer = _warning_crowd(cited)
    numbers = [t.get_window_extent(renderer) for t in texts if re.fullmatch(r"\d+\.", t.get_text())]
    assert numbers, "the crowd leaves some rings no room for their label"
    assert not any(n.overlaps(b) for n in numbers for b in boxes)


def test_a_streaks_mark_names_its_offsets_and_count_and_an_info_label_counts_beyond_them() -> None:
    """The warning's mark stands for 566 alike findings at 98..663; the acks=1 mark for 40 of the 60 info findings,
    so its label counts 20 more."""
    base = kip101_like()
    warning = next(v for v in base.violations if v.severity == "warning")
    info = replace(_acks1_lost()[0], streak=(3, 42, 40))
    marks = [replace(v, streak=(98, 663, 566)) if v is warning else v for v in base.violations]
    data = replace(base, violations=(*marks, info),
                   violation_totals=(("error", "acked_write_lost", 1), ("warning", "committed_prefix_agreement", 566),
                                     ("info", "acks1_write_lost", 60)))
    texts = [t.get_text() for t in render_partition(data).axes[0].texts]
    assert any(t.startswith("WARNING: committed_prefix_agreement\n(") and t.endswith("offsets 98..663, 566 violations)")
               for t in texts), texts
    assert "INFO: acks1_write_lost (+20 more)\n(offsets 3..42, 40 violations, not on final leader 1)" in texts


def test_an_evidence_label_covers_no_other_ring_and_no_violation_mark() -> None:
    """Two violations at close offsets (100 and 111 on a 0-200 axis) found at 18 and 19 s: the first cites an append
    at 10.0 s, the second an HW move at 10.5 s, whose ring sits where the append's label would first go (its first
    step above its ring). No label covers a ring other than its own, nor a violation's mark."""
    base = kip101_like()
    offsets = pd.concat([base.offsets, _offsets([(2, 24.0, 200, 200)])], ignore_index=True)
    levels = {"append by broker 2": 100.0, "hw_change by broker 1": 111.0}
    data = replace(base, offsets=offsets, violations=(
        ViolationMark(18.0, "acked_write_lost", "error", 1, 100, (EvidencePoint(10.0, "append by broker 2"),)),
        ViolationMark(19.0, "inconsistent_offsets", "error", 1, 111, (EvidencePoint(10.5, "hw_change by broker 1"),))))
    fig = render_partition(data)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    rings = {ring.number: ax.transData.transform((ring.time_s, levels[ring.label])) for ring in evidence_key(data)}
    marks = [ax.transData.transform(xy) for xy in ((18.0, 100.0), (19.0, 111.0))]
    labels = {int(t.get_text().split(".")[0]): t.get_window_extent(renderer) for t in ax.texts
              if t.get_text()[:1].isdigit() and "." in t.get_text()[:3]}
    assert sorted(labels) == [1, 2]
    for number, extent in labels.items():
        inner = extent.padded(-1)
        covered = [n for n, xy in rings.items() if n != number and inner.contains(*xy)]
        assert not covered, f"label {number} covers ring(s) {covered}"
        assert not any(inner.contains(*xy) for xy in marks), f"label {number} covers a violation mark"


def test_an_evidence_label_covers_no_leo_or_hw_line_where_a_free_place_is_near() -> None:
    """An append at 10 s on broker 2's flat LEO of 100, which rises to 180 at 10.3 s: the label's first place (from
    just left of its ring, rightwards) would lie across that rise; ending at its ring, leftwards, it covers no line.
    A label over a line hides the step an operator is reading."""
    base = kip101_like()
    data = replace(base, offsets=_offsets([(2, 0.0, 100, 100), (2, 10.3, 100, 180), (2, 12.0, 180, 180),
                                           (1, 0.0, 0, 0), (1, 24.0, 200, 200)]),
                   violations=(ViolationMark(18.0, "acked_write_lost", "error", 1, 100,
                                             (EvidencePoint(10.0, "append by broker 2"),)),))
    fig = render_partition(data)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    (label,) = [t for t in ax.texts if t.get_text().startswith("1. append")]
    extent = label.get_window_extent(renderer)
    crossed = []
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if not gid.startswith("broker "):
            continue
        points = line.get_transform().transform(line.get_path().vertices)
        # The drawn pieces between the line's breaks (NaN), each checked against the label's box.
        pieces = np.split(points, np.flatnonzero(~np.isfinite(points).all(axis=1)))
        for piece in pieces:
            piece = piece[np.isfinite(piece).all(axis=1)]
            if len(piece) > 1 and MplPath(piece).intersects_bbox(extent, filled=False):
                crossed.append(gid)
    assert not crossed, f"the label covers {crossed}"


def test_an_evidence_label_far_from_its_ring_is_tied_to_it_by_a_line() -> None:
    """Eight events within two seconds at one offset: labels that had to go more than two steps from their ring get
    a line to it (an annotation of their own, with no text), the others none."""
    events = tuple(EvidencePoint(6.0 + 0.25 * k, f"{'append' if k % 2 else 'hw_change'} by broker {1 + k % 2}")
                   for k in range(8))
    data = replace(kip101_like(), violations=(ViolationMark(18.0, "acked_write_lost", "error", 1, 1, events[:5]),
                                              ViolationMark(19.0, "inconsistent_offsets", "error", 1, 1, events[3:])))
    texts = render_partition(data).axes[0].texts
    far = [t for t in texts if t.get_text()[:1].isdigit() and abs(t.xyann[1]) > EVIDENCE_TIE_POINTS]
    ties = [t for t in texts if t.get_text() == "" and t.arrow_patch is not None]
    assert far, "the crowd pushes some labels beyond their first two steps"
    assert sorted((t.xy, t.xyann) for t in ties) == sorted((t.xy, t.xyann) for t in far)
