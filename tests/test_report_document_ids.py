"""`jobs.report_document`, without Spark: identifiers print as `replog check` and the messages print them (no
thousands separators, so they can be searched for), counts and durations keep theirs, and an end-of-run check's
event (-1 in `gold/invariant_violations`) is a dash."""

from __future__ import annotations

from jobs.report_document import (
    Evidence,
    FetchErrorRow,
    IncidentRow,
    InvariantCount,
    PartitionSection,
    ReportDocument,
    ViolationRow,
    html_page,
    markdown,
)

ACKED = 1682153688901572302
FINAL = 2092789425003139053


def _doc() -> ReportDocument:
    lost = ViolationRow("run-1", "acked_write_lost", "error", "t", 0, 1001, 24.529, -1, 1234567, ACKED, FINAL,
                        (Evidence(48, 6.001, "append by broker 2"), Evidence(1048576)),
                        f"write acknowledged at 1234567..1234567 by broker 2 is not on final leader 1001 (checksum "
                        f"{ACKED})")
    twice = ViolationRow("run-1", "inconsistent_offsets", "error", "t", 0, 1001, 18.003, 2097152, 1234567, ACKED,
                         FINAL, (), "offset 1234567 committed twice")
    incident = IncidentRow("run-1", "t", 0, 1002, 1001, 12345, 8.0, None, 40_000, 12_000, 30_000, None, "missing")
    failed = (FetchErrorRow(1002, 1001, "NOT_LEADER_OR_FOLLOWER", 1_250, 4.5, 5.25),)
    section = PartitionSection("run-1", "t", 0, 2, 0, 1, (lost, twice), (incident,), None, (), 0, failed, 1)
    return ReportDocument(
        generated_at="2026-11-21 08:00:00 UTC", lake="/lake", audit_id="audit-1", audit_started_at="x",
        bronze_version=12345, runs=("run-1",), invariants=(InvariantCount("acked_write_lost", "error", True, 1, 0),),
        not_evaluated=(), verdicts={"missing": 1}, incidents=(incident,), incidents_total=1, flagged_total=1,
        sections=(section,), run_level=(lost,), run_level_total=1)


def test_identifiers_print_without_separators_and_an_end_of_run_event_as_a_dash() -> None:
    md = markdown(_doc())
    row = (f"| acked_write_lost | error | 1001 | 24.529 (found at the end of the run) | – | 1234567 | {ACKED} "
           f"| {FINAL} | 48 (append by broker 2 at ")
    assert md.count(row) == 2 and md.count("| run-1 " + row) == 1, "the partition's table and the run-level one"
    assert f"| inconsistent_offsets | error | 1001 | 18.003 | 2097152 | 1234567 | {ACKED} | {FINAL} |" in md
    assert "; 1048576 |" in md, "an evidence id not looked up"
    assert "| 1002 | 1001 | NOT_LEADER_OR_FOLLOWER | 1,250 | 4.500 | 5.250 |" in md, "a count keeps its separators"
    assert "| run-1 | t-0 | 1002 | 1001 (12345) | – | 8.000 | ongoing | 40,000 | 12,000 | 30,000 |" in md
    assert "bronze version 12345)" in md
    assert "| -1 |" not in md and "1,682" not in md and "1,234,567" not in md


def test_the_html_prints_them_the_same_way() -> None:
    page = html_page(_doc())
    cells = (f"<td>1001</td><td>24.529 (found at the end of the run)</td><td>–</td><td>1234567</td><td>{ACKED}</td>"
             f"<td>{FINAL}</td>")
    assert page.count(cells) == 2
    assert "<td>1002</td><td>1001</td><td>NOT_LEADER_OR_FOLLOWER</td><td>1,250</td>" in page
    assert "1,682" not in page and "<td>-1</td>" not in page
