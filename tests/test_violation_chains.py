"""Violations linked by shared events (`jobs.violation_chains`) and how a report section shows them."""

from __future__ import annotations

import html
from dataclasses import replace

from jobs.report_document import (
    STREAK_NOTE,
    Evidence,
    PartitionSection,
    ReportDocument,
    ViolationRow,
    chain_hub,
    html_page,
    markdown,
)
from jobs.violation_chains import linked_groups


def test_groups_join_items_sharing_an_id_transitively_and_drop_singletons() -> None:
    # 0-2 share 7, 2-4 share 9 (so 0, 2, 4 are one group though 0 and 4 share nothing); 1-3 share 5; 5 alone.
    events = [{7, 1}, {5}, {7, 9}, {5, 30}, {9}, {100}]
    assert linked_groups(events) == [[0, 2, 4], [1, 3]]


def test_groups_are_ordered_by_their_first_index_even_when_a_later_link_joins_two() -> None:
    # 3 links group {1, 2} (via 4) with group {0} (via 8): one group, its members in input order.
    assert linked_groups([{8}, {4}, {4, 6}, {6, 8}]) == [[0, 1, 2, 3]]
    assert linked_groups([]) == [] and linked_groups([{1}, {2}]) == []


def _row(invariant: str, replica: int, time_s: float, event_id: int, evidence: tuple[int, ...],
         severity: str = "error", described: dict[int, tuple[float, str]] | None = None) -> ViolationRow:
    known = described or {}
    return ViolationRow("run-1", invariant, severity, "t", 0, replica, time_s, event_id, 1, 2, 1,
                        tuple(Evidence(e, *known[e]) if e in known else Evidence(e) for e in evidence),
                        f"{invariant} <b>at</b> {time_s}")


# KIP-101's four errors as the report lists them (severity, then time), and an unrelated warning.
KIP101 = (
    _row("truncation_safety", 1, 7.002, 62, (50, 53, 62)),
    _row("truncation_safety", 2, 16.002, 75, (48, 53, 75), described={48: (6.001, "append by broker 2")}),
    _row("inconsistent_offsets", 1, 18.003, 94, (48, 53, 89, 94)),
    # Found at the end of the run, dated at the loss: the append of another record at its offset (event 89).
    _row("acked_write_lost", 1, 18.003, -1, (48, 54, 62, 89)),
    _row("hw_monotonic_leader", 3, 3.5, 20, (11,), severity="warning"),
)


def _doc(*violations: ViolationRow, naming: tuple[tuple[int, int], ...] = ()) -> ReportDocument:
    section = PartitionSection("run-1", "t", 0, 4, 1, 0, violations, naming=naming)
    return ReportDocument(generated_at="x", lake="/lake", audit_id="a", audit_started_at="x", bronze_version=1,
                          runs=("run-1",), invariants=(), not_evaluated=(), verdicts={}, incidents=(),
                          incidents_total=0, flagged_total=1, max_partitions=20, sections=(section,))


def test_a_sections_linked_violations_are_one_chain_in_time_order_with_a_line_naming_them() -> None:
    # The end-of-run check (event -1) sorts after the event found at its instant although listed before it; the
    # warning is alone.
    section = _doc(*KIP101).sections[0]
    assert [v.invariant for chain in section.chains for v in chain] == [
        "truncation_safety", "truncation_safety", "inconsistent_offsets", "acked_write_lost"]
    md = markdown(_doc(*KIP101))
    assert "| chain | invariant | severity |" in md
    assert "| 1 | truncation_safety | error | 1 | 7.002 | 62 |" in md
    assert "| – | hw_monotonic_leader | warning | 3 | 3.500 | 20 |" in md
    # Events 48 (the lost record's append) and 53 (the HW move that committed it) are named by three each: the
    # lower id, with what it was where the evidence says.
    line = ("chain 1 (4 errors) through event 48 (append by broker 2 at 6.001 s), named by 3: truncation_safety x2 "
            "(brokers 1, 2; 7.002-16.002 s), inconsistent_offsets (broker 1; 18.003 s), acked_write_lost (broker 1; "
            "18.003 s, found at the end of the run).")
    assert f"- {line}" in md
    page = html_page(_doc(*KIP101))
    assert f"<li>{html.escape(line)}</li>" in page and "<th>chain</th>" in page


def test_no_chain_column_or_line_when_no_two_violations_share_an_event() -> None:
    alone = (KIP101[0], KIP101[4])
    md, page = markdown(_doc(*alone)), html_page(_doc(*alone))
    assert "| invariant | severity |" in md and "chain" not in md
    assert "chain" not in page


def test_a_long_chain_counts_its_violations_per_invariant_and_by_severity() -> None:
    # Ten violations, all naming event 48 (an unclean election's, say); only the first names 62 as well.
    rows = (*(_row("acked_write_lost", 1, 20.0 + i, -1, (48, 1000 + i)) for i in range(8)),
            _row("acks1_write_lost", 1, 24.5, -1, (48,), severity="info"),
            _row("truncation_safety", 2, 7.0, 62, (48, 62)))
    line = next(x for x in markdown(_doc(*rows)).splitlines() if x.startswith("- chain 1"))
    assert line == ("- chain 1 (9 errors, 1 info) through event 48, named by 10: truncation_safety (broker 2; "
                    "7.000 s), acked_write_lost x8 (broker 1; 20.000-27.000 s, found at the end of the run), "
                    "acks1_write_lost (broker 1; 24.500 s, found at the end of the run).")


def test_a_brokers_settings_or_a_leaders_start_links_no_chain() -> None:
    """Two hw_frozen_under_min_isr episodes 40 s apart name only their broker's broker_config event, and two HW
    findings of one tenure its become_leader: context, not a step of one fault. A shared truncation still links."""
    config, tenure = Evidence(3, 0.0, "broker_config by broker 1", None, "broker_config"), Evidence(
        4, 0.1, "leadership_change become_leader by broker 1", None, "leadership_change")
    truncation = Evidence(9, 7.0, "truncation by broker 2", None, "truncation")
    rows = (
        ViolationRow("run-1", "hw_frozen_under_min_isr", "error", "t", 0, 1, 5.0, 50, 3, 2, 3, (config,), "a"),
        ViolationRow("run-1", "hw_frozen_under_min_isr", "error", "t", 0, 1, 45.0, 450, 3, 2, 3, (config,), "b"),
        ViolationRow("run-1", "hw_monotonic_leader", "error", "t", 0, 1, 8.0, 80, 3, 5, 4, (tenure, truncation), "c"),
        ViolationRow("run-1", "hw_monotonic_leader", "error", "t", 0, 1, 9.0, 90, 3, 5, 4, (tenure,), "d"),
        ViolationRow("run-1", "truncation_safety", "error", "t", 0, 2, 7.0, 9, 1, 3, 1, (truncation,), "e"),
    )
    section = _doc(*rows).sections[0]
    assert [[v.message for v in chain] for chain in section.chains] == [["e", "c"]]
    line = next(x for x in markdown(_doc(*rows)).splitlines() if x.startswith("- chain"))
    assert line.startswith("- chain 1 (2 errors) through event 9 (truncation by broker 2 at 7.000 s), named by 2:")


def test_a_chain_says_how_many_of_all_the_partitions_violations_name_its_event_when_more_than_the_listed() -> None:
    # Of KIP101's four errors, three name event 48; the audit found 1,200 violations naming it in all.
    md = markdown(_doc(*KIP101, naming=((48, 1200), (53, 3))))
    assert "through event 48 (append by broker 2 at 6.001 s), named by 3 listed (1,200 of all the partition's " \
           "violations name it): " in md
    assert "named by 3: " in markdown(_doc(*KIP101, naming=((48, 3),)))


def test_a_section_opens_with_the_event_most_of_its_violations_name_as_their_likely_common_cause() -> None:
    """1,200 of the partition's 1,202 violations name event 48 (listed or not): said under the counts, before the
    table; where fewer than half name any one event, nothing is said."""
    doc = _doc(*KIP101, naming=((48, 1200), (53, 3)))
    section = doc.sections[0]
    many = ReportDocument(**{**doc.__dict__, "sections": (PartitionSection(
        "run-1", "t", 0, 1200, 2, 0, section.violations, naming=section.naming),)})
    line = ("1,200 of the 1,202 violations name one event, most likely their common cause: event 48 (append by "
            "broker 2 at 6.001 s) (chain 1 below).")
    md = markdown(many)
    assert md.index(line) < md.index("| chain |")
    assert f"<p>{html.escape(line)}</p>" in html_page(many)
    every = ReportDocument(**{**doc.__dict__, "sections": (PartitionSection(
        "run-1", "t", 0, 1200, 0, 0, section.violations, naming=section.naming),)})
    assert "All 1,200 violations name one event, most likely their common cause: event 48" in markdown(every)
    few = ReportDocument(**{**doc.__dict__, "sections": (PartitionSection(
        "run-1", "t", 0, 3000, 0, 0, section.violations, naming=section.naming),)})
    assert "name one event" not in markdown(few)


def test_a_streak_row_shows_its_offsets_count_and_times_and_its_chain_counts_its_violations() -> None:
    """An unclean election's 17 lost writes (754..770, found at the end of the run, dated 29.110-29.946 s) and 16
    committed_prefix_agreement findings (98..113, 35.000-35.007 s, the earliest being 100's) as two streak rows
    naming election event 2488: the table gives each row's range and count, the note says what a range means, the
    chain counts 33 violations in 2 listed rows, and the cap note counts the violations the rows stand for."""
    election = Evidence(2488, 34.5, "leader_election unclean by controller 1000", None, "leader_election")
    lost = replace(_row("acked_write_lost", 2, 29.110, -1, (), severity="warning"), evidence=(election,),
                   offset=754, count=17, offsets=(754, 770), last_time_s=29.946)
    differ = replace(_row("committed_prefix_agreement", 2, 35.0, 2493, (), severity="warning"), evidence=(election,),
                     offset=100, count=16, offsets=(98, 113), last_time_s=35.007)
    section = PartitionSection("run-1", "t", 0, 0, 40, 0, (lost, differ), naming=((2488, 40),))
    doc = replace(_doc(), sections=(section,))
    md = markdown(doc)
    assert ("| 1 | acked_write_lost | warning | 2 | 29.110-29.946 (found at the end of the run) | – | "
            "754..770 (17 violations) |") in md
    assert "| 1 | committed_prefix_agreement | warning | 2 | 35.000-35.007 | 2493 | 98..113 (16 violations, " \
           "first found at 100) |" in md
    assert STREAK_NOTE in md and html.escape(STREAK_NOTE) in html_page(doc)
    # The message is the earliest's, and says so.
    assert "| the earliest of 17: acked_write_lost <b>at</b> 29.11 |" in md
    # Fewer violations than offsets in the range: said in the cell.
    sparse = replace(section, violations=(replace(lost, offset=1138, count=60, offsets=(1138, 1313)),))
    assert "| 1138..1313 (60 violations over 176 offsets) |" in markdown(replace(doc, sections=(sparse,)))
    assert ("- chain 1 (33 warnings) through event 2488 (leader_election unclean by controller 1000 at 34.500 s), "
            "named by 2 listed rows (40 of all the partition's violations name it): acked_write_lost x17 (broker 2; "
            "29.110-29.946 s, found at the end of the run), committed_prefix_agreement x16 (broker 2; "
            "35.000-35.007 s).") in md
    assert "7 more violations not listed" in md
    many = replace(section, violations=(replace(lost, count=1_017, offsets=(754, 1770)),), warnings=1_017)
    assert "- chain" not in markdown(replace(doc, sections=(many,)))  # one row alone is no chain
    two = replace(section, violations=(replace(lost, count=1_017, offsets=(754, 1770)), differ), warnings=1_033)
    assert "- chain 1 (1,033 warnings) through event 2488" in markdown(replace(doc, sections=(two,)))
    # Rows standing for one violation each say nothing of streaks.
    assert STREAK_NOTE not in markdown(_doc(*KIP101))


def test_a_streak_weighs_its_count_when_the_chains_event_is_chosen() -> None:
    """A streak of 17 losses names election 2488; three single findings name truncation 777, one of them 2488 too. By
    rows 777 would win (3 against 2); by violations 2488 does (18 against 3), and the line says 2 rows name it."""
    election = Evidence(2488, 34.5, "leader_election unclean by controller 1000", None, "leader_election")
    truncation = Evidence(777, 30.0, "truncation by broker 1", None, "truncation")
    lost = replace(_row("acked_write_lost", 2, 29.110, -1, (), severity="warning"), evidence=(election,), count=17,
                   offsets=(754, 770), last_time_s=29.946)
    singles = tuple(replace(_row("truncation_safety", 1, 30.0 + k, 800 + k, (), severity="warning"),
                            evidence=(truncation, election) if k == 0 else (truncation,)) for k in range(3))
    section = PartitionSection("run-1", "t", 0, 0, 20, 0, (lost, *singles))
    assert chain_hub(section.chains[0]) == (2488, 2)
    line = next(x for x in markdown(replace(_doc(), sections=(section,))).splitlines() if x.startswith("- chain 1"))
    assert line.startswith("- chain 1 (20 warnings) through event 2488 (leader_election unclean by controller 1000 at "
                           "34.500 s), named by 2 listed rows: ")
