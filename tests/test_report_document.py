"""`jobs.report_document`: the Markdown and HTML renderings of a report, without Spark."""

from __future__ import annotations

import html
import re
from dataclasses import replace

from jobs.report_document import (
    Evidence,
    FaultRow,
    FetchErrorRow,
    IncidentRow,
    InvariantCount,
    InvariantSpread,
    NumberedEvidence,
    OverviewSection,
    PartitionSection,
    ProduceRow,
    ReportDocument,
    ViolationRow,
    evidence_key_text,
    html_page,
    markdown,
)

NASTY = 'leader <script>alert("x")</script> | said & did'


def _violation(message: str = "write acknowledged at 1..1 is lost") -> ViolationRow:
    return ViolationRow("run-1", "acked_write_lost", "error", "t", 0, 1, 24.5, -1, 1, 7, 9,
                        (Evidence(48, 6.001, "append by broker 2"), Evidence(54)), message)


def _doc(**over) -> ReportDocument:  # type: ignore[no-untyped-def]
    incident = IncidentRow("run-1", "t", 0, 2, 1, 3, 8.0, None, 40_000, 12, 30_000, None, "missing")
    base = dict(
        generated_at="2026-11-21 08:00:00 UTC", lake="/lake", audit_id="audit-1", audit_started_at="x",
        bronze_version=3, runs=("run-1",),
        invariants=(InvariantCount("acked_write_lost", "error", True, 1, 0),
                    InvariantCount("truncation_safety", "error", False, 0, 0, "not implemented")),
        not_evaluated=("truncation_safety",), verdicts={"missing": 1}, incidents=(incident,), incidents_total=1,
        flagged_total=3, max_partitions=1,
        sections=(PartitionSection("run-1", "t", 0, 1, 0, 1, (_violation(NASTY),), (incident,), "p001-run-1-t-0.png",
                                   (("acked_write_lost", "Every acks=all write ...", "offset = first lost offset"),)),),
    )
    base.update(over)
    return ReportDocument(**base)


def test_markdown_has_the_summary_the_sections_and_the_cap() -> None:
    md = markdown(_doc())
    assert "| acked_write_lost | error | yes | 1 | 0 | 0 |" in md
    assert "| truncation_safety | error | no | – | – | – |" in md
    assert "Not evaluated by the Spark audit (1; run `replog check` for them): `truncation_safety`." in md
    assert "| missing | 1 |" in md
    assert re.findall(r"^### (.*)$", md, re.M) == ["t-0 (run run-1)"]
    assert "3 partition(s) have a violation, a lag incident or an unclean election; 1 plotted" in md
    assert "2 more flagged partition(s) not plotted (cap report.max_partitions = 1)" in md
    assert "![t-0 (run run-1)](p001-run-1-t-0.png)" in md
    assert "48 (append by broker 2 at 6.001 s); 54" in md
    # A pipe in a message is escaped, so the table keeps its columns.
    row = next(line for line in md.splitlines() if "alert" in line)
    assert "\\|" in row and row.count(" | ") == 9, "10 cells, none added by the message"


def test_html_escapes_table_text_and_links_the_png() -> None:
    page = html_page(_doc())
    assert "<script>" not in page
    assert "leader &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; | said &amp; did" in page
    assert '<img src="p001-run-1-t-0.png" alt="t-0 (run run-1)">' in page
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "http" not in page, "self-contained: no external resources"


def test_a_clean_lake_says_so() -> None:
    doc = _doc(verdicts={}, incidents=(), incidents_total=0, flagged_total=0, sections=(),
               invariants=(InvariantCount("acked_write_lost", "error", True, 0, 0),))
    md, page = markdown(doc), html_page(doc)
    for text in (md, page):
        assert "No violations, lag incidents or unclean elections in a partition: nothing to plot." in text
        assert "No lag incidents." in text
    assert "0 error(s), 0 warning(s) and 0 info (acks=1 writes lost" in md and "###" not in md and "<img" not in page


def test_a_sections_fetch_errors_are_one_row_per_follower_leader_and_error_with_the_cap() -> None:
    failed = (FetchErrorRow(2, 1, "NOT_LEADER_OR_FOLLOWER", 3, 4.5, 5.25), FetchErrorRow(3, None, "CORRUPT_MESSAGE",
                                                                                          1, 6.0, 6.0))
    section = PartitionSection("run-1", "t", 0, 0, 0, 1, (), (), None, (), 0, failed, 5)
    md, page = markdown(_doc(sections=(section,))), html_page(_doc(sections=(section,)))
    assert "| 2 | 1 | NOT_LEADER_OR_FOLLOWER | 3 | 4.500 | 5.250 |" in md
    assert "| 3 | – | CORRUPT_MESSAGE | 1 | 6.000 | 6.000 |" in md  # a 0.9 line names no leader
    assert "3 more fetch error groups not listed (cap report.max_rows; the earliest first)." in md
    assert "<td>CORRUPT_MESSAGE</td>" in page and "3 more fetch error groups not listed" in page
    assert "as the followers saw them" not in markdown(_doc()), "no table for a partition without any"


def test_the_overview_counts_fetch_and_produce_errors_per_error_the_most_frequent_first() -> None:
    doc = _doc(fetch_errors={"UNKNOWN_TOPIC_ID": (8, 8), "NOT_LEADER_OR_FOLLOWER": (1_250, 1)})
    line = ("Fetch responses with an error: NOT_LEADER_OR_FOLLOWER 1,250 (1 partition), UNKNOWN_TOPIC_ID 8 "
            "(8 partitions).")
    assert line in markdown(doc) and line in html_page(doc)
    assert "Fetch responses with an error: none." in markdown(_doc())
    doc = _doc(produce_errors={"REQUEST_TIMED_OUT": (411, 1), "NOT_ENOUGH_REPLICAS": (1_673, 2)})
    line = ("Produce answers with an error: NOT_ENOUGH_REPLICAS 1,673 (2 partitions), REQUEST_TIMED_OUT 411 "
            "(1 partition).")
    assert line in markdown(doc) and line in html_page(doc)
    assert "Produce answers with an error: none." in markdown(_doc())


def test_the_overview_caption_says_the_lanes_draw_the_broker_faults() -> None:
    doc = _doc(overviews=(OverviewSection("run-1", "overview-001-run-1.png"),))
    for text in (markdown(doc), html.unescape(html_page(doc))):
        assert "The faults the simulator injected into a broker (broker_fault events) are thin bars on its lane" in text
        assert "network partition" in text and "GC pause" in text and "disk stall" in text
        assert "faint bands of the same colours the faults' times" in text
        assert ("Which peers a partition cut off, and in which direction, is listed below each overview and with "
                "each flagged partition") in text
        assert "cannot show them" not in text
    # A run without faults has no table under its picture.
    assert "Faults the simulator held the run's brokers in" not in markdown(doc)


def test_an_overviews_faults_are_a_table_under_its_picture_with_a_note_when_capped() -> None:
    faults = (FaultRow(1, "network_partition", 0.5, 2.0, False, "2, controller 1000", "both"),
              FaultRow(2, "network_partition", 0.5, 2.0, False, "1", "both"))
    doc = _doc(overviews=(OverviewSection("run-1", "overview-001-run-1.png", faults, 2),
                          OverviewSection("run-2", "overview-002-run-2.png", faults[:1], 4)))
    md, page = markdown(doc), html_page(doc)
    first, second = md.index("![Cluster overview of run run-1]"), md.index("![Cluster overview of run run-2]")
    table = md.index("| broker | fault | start (s) | end (s) | lasted (ms) | cut off from | direction |", first)
    assert first < table < second  # under its own picture
    assert "| 1 | network partition | 0.500 | 2.000 | 1,500 | 2, controller 1000 | both |" in md[first:second]
    assert "| 2 | network partition | 0.500 | 2.000 | 1,500 | 1 | both |" in md[first:second]
    assert "not listed" not in md[first:second]
    assert "3 more faults not listed (cap report.max_rows; the earliest first)." in md[second:]
    assert html.unescape(page).count("Faults the simulator held the run's brokers in") == 2
    assert "<td>2, controller 1000</td>" in page and "3 more faults not listed" in page


def test_a_sections_faults_are_a_table_with_the_peers_and_a_note_when_capped() -> None:
    faults = (FaultRow(2, "gc_pause", 3.0, 3.5), FaultRow(1, "network_partition", 4.0, 9.25, True,
                                                           "2, controller 1000", "outbound"))
    section = PartitionSection("run-1", "t", 0, 0, 0, 1, (), (), None, (), 0, (), 0, faults, 5)
    doc = _doc(sections=(section,))
    md, page = markdown(doc), html_page(doc)
    assert "| broker | fault | start (s) | end (s) | lasted (ms) | cut off from | direction |" in md
    assert "| 2 | gc pause | 3.000 | 3.500 | 500 | – | – |" in md
    # Open: nothing healed it before the run's last event.
    assert "| 1 | network partition | 4.000 | 9.250 (run's end) | 5,250 | 2, controller 1000 | outbound |" in md
    assert "3 more faults not listed (cap report.max_rows; the earliest first)." in md
    assert "<td>2, controller 1000</td>" in page and "3 more faults not listed" in page
    assert "Faults the simulator held" not in markdown(_doc())


def test_an_incident_shows_its_shrinks_outcome_and_a_zombie_leaders_deposition_with_a_note() -> None:
    # Leader 1 of epoch 0 was deposed at 51 s, before the incident began at 54.972 s: a zombie's view.
    zombie = IncidentRow("run-1", "t", 0, 2, 1, 0, 54.972, 60.002, 15_030, 179, 10_000, 55.0, "on_time", 1,
                         ("NETWORK_EXCEPTION",), "pending", 51.0, caught_up_s=44.972, deadline_s=59.972)
    # The same epoch's earlier incident ended before the deposition: nothing to say of it.
    earlier = IncidentRow("run-1", "t", 0, 3, 1, 0, 19.97, 33.975, 24_005, 537, 10_000, 20.0, "on_time", 4,
                          ("NETWORK_EXCEPTION",), "committed", 51.0)
    doc = _doc(incidents=(zombie, earlier), incidents_total=2, verdicts={"on_time": 2})
    md, page = markdown(doc), html.unescape(html_page(doc))
    # When the follower last caught up and when the shrink was due, beside the incident's start and the shrink.
    assert ("| run-1 | t-0 | 2 | 1 (0), deposed at 51.000 | 44.972 | 54.972 | 60.002 | 15,030 | 179 | 10,000 | "
            "59.972 | 55.000 (pending) | on_time |") in md
    assert ("| run-1 | t-0 | 3 | 1 (0) | – | 19.970 | 33.975 | 24,005 | 537 | 10,000 | – | 20.000 (committed) | "
            "on_time |") in md
    for text in (md, page):
        assert 'A leader "deposed at" a time before its incident began was a zombie' in text
    assert zombie.zombie and not earlier.zombie
    assert "was a zombie" not in markdown(_doc(incidents=(earlier,), incidents_total=1, verdicts={"on_time": 1}))


def test_a_capped_violation_list_is_followed_by_every_invariants_count_and_offsets() -> None:
    spreads = (InvariantSpread("acked_write_lost", "warning", 560, 212, 771),
               InvariantSpread("committed_prefix_agreement", "warning", 1, 40, 40),
               InvariantSpread("isr_transition", "error", 2))
    capped = PartitionSection("run-1", "t", 0, 2, 561, 0, (_violation(),), (), None, per_invariant=spreads)
    line = ("All of them, per invariant: acked_write_lost (warning): 560 at offsets 212..771; "
            "committed_prefix_agreement (warning): 1 at offset 40; isr_transition (error): 2.")
    assert line in markdown(_doc(sections=(capped,))) and line in html.unescape(html_page(_doc(sections=(capped,))))
    # Every violation listed: the table says it all.
    whole = replace(capped, errors=1, warnings=0)
    assert "All of them, per invariant" not in markdown(_doc(sections=(whole,)))


def test_acks1_losses_are_counted_as_info_in_the_summary_the_overview_and_the_section() -> None:
    lost = ViolationRow("run-1", "acks1_write_lost", "info", "t", 0, 2, 79.974, -1, 1138, 7, 9, (Evidence(11473),),
                        "acks=1 write acknowledged at 1138..1138 by broker 1 is not on final leader 2 at 1138 "
                        "(1 offsets)")
    section = PartitionSection("run-1", "t", 0, 0, 0, 4, (lost,), (), None, infos=3)
    doc = _doc(invariants=(InvariantCount("acked_write_lost", "error", True, 0, 0),
                           InvariantCount("acks1_write_lost", "info", True, 0, 0, "info=3 (allowed loss)", 3)),
               sections=(section,))
    md, page = markdown(doc), html_page(doc)
    assert doc.infos == 3 and (doc.errors, doc.warnings) == (0, 0)
    assert "| invariant | severity | evaluated | errors | warnings | info |" in md
    assert "| acks1_write_lost | info | yes | 0 | 0 | 3 |" in md
    assert "| acked_write_lost | error | yes | 0 | 0 | 0 |" in md
    overview = ("0 error(s), 0 warning(s) and 3 info (acks=1 writes lost, which Kafka allows: counted, never a "
                "failure); lag incidents by verdict: missing 1.")
    assert overview in md and overview in page
    # The section names its info findings; a partition without any does not mention them.
    assert "0 error(s), 0 warning(s), 3 info, 4 lag incident(s)." in md
    assert "2 more violations not listed" in md, "one listed of three: the info findings are violations too"
    assert "info" not in PartitionSection("run-1", "t", 1, 1, 0, 0).counts
    # HTML: the summary row and the violation row take the info class, styled calmer than a warning.
    assert ('<tr class="info"><td>acks1_write_lost</td><td>info</td><td>yes</td><td>0</td><td>0</td><td>3</td></tr>'
            in page)
    assert '<tr class="info"><td>acks1_write_lost</td><td>info</td><td>2</td>' in page
    assert "tr.info td { background:" in page
    assert '<tr class=""' not in page and '<tr class="info"><td>acked_write_lost' not in page


def test_an_invariant_the_runs_source_cannot_show_reads_n_a_or_partly_never_a_clean_zero() -> None:
    na = "not applicable to the audited runs (kafka-log: their events cannot show it)"
    partly = "not applicable to 1 of the 2 audited runs (kafka-log: their events cannot show it); judged on the others"
    doc = _doc(invariants=(InvariantCount("acked_write_lost", "error", False, 0, 0, na),
                           InvariantCount("truncation_safety", "error", False, 0, 0, na),
                           InvariantCount("hw_within_log", "error", True, 2, 0, partly),
                           InvariantCount("isr_nonempty", "error", True, 0, 0)))
    md, page = markdown(doc), html.unescape(html_page(doc))
    assert "| acked_write_lost | error | n/a | – | – | – |" in md
    assert "| hw_within_log | error | partly | 2 | 0 | 0 |" in md
    assert "| isr_nonempty | error | yes | 0 | 0 | 0 |" in md
    for text in (md, page):
        assert f"n/a: {na} — acked_write_lost, truncation_safety." in text
        assert "partly: not applicable to 1 of the 2 audited runs (kafka-log: their events cannot show it) — " \
               "hw_within_log." in text
    assert "<td>acked_write_lost</td><td>error</td><td>n/a</td>" in page


def test_the_overview_says_when_each_run_began_and_counts_the_runs_past_the_first_five() -> None:
    """The report's times are seconds since a run's first event; the overview names that instant (UTC), so an
    operator can match them with broker logs, for the first `RUN_STARTS_SHOWN` runs."""
    from jobs.report_document import RUN_STARTS_SHOWN

    one = _doc(run_starts={"run-1": "2023-11-14 22:13:20 UTC"})
    for text in (markdown(one), html.unescape(html_page(one))):
        assert "Times are seconds since each run's first event: run-1 at 2023-11-14 22:13:20 UTC." in text
    many = _doc(run_starts={f"run-{i}": f"2023-11-14 22:13:{i:02d} UTC" for i in range(RUN_STARTS_SHOWN + 2)})
    assert "run-4 at 2023-11-14 22:13:04 UTC; 2 more run(s)." in markdown(many)
    assert "Times are seconds since" not in markdown(_doc())


def test_a_section_says_what_its_producers_were_answered_per_acks_setting() -> None:
    section = replace(_doc().sections[0], produce=(
        ProduceRow(1, "NOT_LEADER_OR_FOLLOWER", 5), ProduceRow(1, "NONE", 300),
        ProduceRow(-1, "REQUEST_TIMED_OUT", 3, first_s=20.5, last_s=33.97,
                   bursts=((20.5, 21.0, 2), (33.97, 33.97, 1)), burst_count=2),
        ProduceRow(-1, "NOT_ENOUGH_REPLICAS", 12, first_s=21.0, last_s=21.0),
        ProduceRow(-1, "NONE", 1204, 2, 9, 15_002, 31.25, 1200), ProduceRow(0, "NONE", 40)))
    doc = _doc(sections=(section,))
    # 4 acks=all writes' appends are not in the data (quarantined, say): the waits say over how many.
    lines = ["acks=all: 1,204 acknowledged (waited 2 ms median, 9 ms p99, 15,002 ms at most of the 1,200 whose "
             "append is in the data, that one acknowledged at 31.250 s); answers with an error: "
             "12 NOT_ENOUGH_REPLICAS (at 21.000 s), 3 REQUEST_TIMED_OUT (in 2 bursts: 2 in 20.500-21.000 s, 1 at "
             "33.970 s).",
             "acks=1: 300 acknowledged; answers with an error: 5 NOT_LEADER_OR_FOLLOWER.",
             "acks=0 (no answer sent): 40 appended."]
    md = markdown(doc)
    assert "\n".join(f"- {line}" for line in lines) in md
    assert "<ul>" + "".join(f"<li>{line}</li>" for line in lines) + "</ul>" in html_page(doc)
    # A section without produce answers: no such lines.
    assert "What the producers were answered" not in markdown(_doc())
    # Refusals read from a broker log whose error does not imply the acks come last, under their own name.
    logged = _doc(sections=(replace(section, produce=(*section.produce, ProduceRow(
        None, "OUT_OF_ORDER_SEQUENCE_NUMBER", 2, first_s=2.0, last_s=2.5))),))
    assert "\n".join(f"- {line}" for line in [*lines, "acks unknown (refusals read from broker logs): answers with "
                                                       "an error: 2 OUT_OF_ORDER_SEQUENCE_NUMBER (2.000-2.500 s)."]) \
        in markdown(logged)
    # The stretches without any answer follow, the longest first, counted where more than listed.
    quiet = _doc(sections=(replace(section, produce_silences=((30.0, 34.501, False), (50.25, 52.5, False)),
                                   produce_silence_count=3),))
    silence = ("No produce answer for 4.501 s (30.000-34.501 s), 2.250 s (50.250-52.500 s), and 1 more such "
               "stretch(es) (at least 2 s each, report.silence_ms; the longest first): the producers' requests were "
               "waiting (an acks=all write is answered when the HW covers it or its request times out), were lost "
               "with a leader that had died, or were held back while the partition had no leader.")
    assert "\n".join(f"- {line}" for line in [*lines, silence]) in markdown(quiet)
    assert f"<li>{html.escape(silence)}</li></ul>" in html_page(quiet)
    assert "No produce answer" not in md
    # A stretch that lasted to the run's end says so (a dead leader never replaced, or producers that stopped).
    ended = _doc(sections=(replace(section, produce_silences=((50.0, 60.0, True),), produce_silence_count=1),))
    assert ("No produce answer for 10.000 s (50.000-60.000 s, to the end of the run) (at least 2 s each, "
            "report.silence_ms; the longest first)") in markdown(ended)
    assert "no leader; or the producers had stopped." in markdown(ended)
    assert "or the producers had stopped" not in markdown(quiet)


def test_a_section_states_the_settings_that_judge_it() -> None:
    """Under the counts: the lag threshold, min ISR and unclean elections in force; nothing where the events have
    no broker_config."""
    section = replace(_doc().sections[0], settings=(("replica.lag.time.max.ms", "10000"),
                                                    ("min.insync.replicas", "1 (topic risky)")))
    line = ("Settings in force (broker_config events): replica.lag.time.max.ms 10000; min.insync.replicas 1 (topic "
            "risky).")
    doc = _doc(sections=(section,))
    assert f"{section.counts}\n\n{line}\n" in markdown(doc)
    assert f'<p class="note">{html.escape(line)}</p>' in html_page(doc)
    assert "Settings in force" not in markdown(_doc())


def test_a_pictures_numbered_evidence_is_listed_under_it_with_the_event_ids() -> None:
    """The picture's numbered rings (a crowded one may show a ring's number alone) as one line under the picture,
    escaped in HTML; none without rings."""
    key = (NumberedEvidence(1, 6.001, "append by broker 2", (48,)),
           NumberedEvidence(2, 7.5, "truncation by broker <1>", (54, 55)), NumberedEvidence(3, 9.0, "crash", ()))
    line = ("Numbered evidence in the picture: 1. append by broker 2 at 6.001 s, event 48; 2. truncation by broker <1> "
            "at 7.500 s, events 54, 55; 3. crash at 9.000 s.")
    assert evidence_key_text(key) == line and evidence_key_text(()) is None
    doc = _doc()
    doc = replace(doc, sections=(replace(doc.sections[0], evidence_key=key),))
    md = markdown(doc).splitlines()
    picture = md.index("![t-0 (run run-1)](p001-run-1-t-0.png)")
    assert md[picture + 2] == line
    assert f'<p class="note">{html.escape(line)}</p>' in html_page(doc)
    assert "Numbered evidence" not in markdown(_doc()) + html_page(_doc())


def test_the_overview_says_how_many_acknowledged_writes_were_lost() -> None:
    """The first question after a failure, in one sentence under the counts: the acks=all writes lost (the three
    excusable invariants' warnings are not all losses) and the acks=1 ones apart; not judged where the runs' events
    cannot show it."""
    lost = _doc(invariants=(InvariantCount("acked_write_lost", "error", True, 1, 560),
                            InvariantCount("inconsistent_offsets", "error", True, 0, 656),
                            InvariantCount("acks1_write_lost", "info", True, 0, 0, "info=3", 3)))
    line = ("Acknowledged writes lost: 561 acks=all write(s) (acked_write_lost: 1 error(s), 560 warning(s): a warning "
            "where an unclean election or a crash that lost unflushed data explains it) and 3 acks=1 write(s) (which "
            "Kafka allows), per produce acknowledgement.")
    assert line in markdown(lost) and line in html.unescape(html_page(lost))
    clean = _doc(invariants=(InvariantCount("acked_write_lost", "error", True, 0, 0),
                             InvariantCount("acks1_write_lost", "info", True, 0, 0)))
    assert ("Acknowledged writes lost: 0 acks=all write(s) and 0 acks=1 write(s) (which Kafka allows), per produce "
            "acknowledgement.") in markdown(clean)
    split = replace(lost, loss_causes={"crash_and_unclean_election": 18, "unclean_election": 540})
    assert ("(acked_write_lost: 1 error(s), 560 warning(s): 540 lost to an unclean election alone, 18 lost both "
            "with a crashed leader's unflushed tail and to an unclean election, 2 other) and 3 acks=1"
            ) in markdown(split)
    logs = _doc(invariants=(InvariantCount("acked_write_lost", "error", False, 0, 0, "not applicable to the audited "
                                           "runs (kafka-log: their events cannot show it)"),))
    assert ("Acknowledged writes lost: not judged (not applicable to the audited runs (kafka-log: their events cannot "
            "show it)).") in markdown(logs)
