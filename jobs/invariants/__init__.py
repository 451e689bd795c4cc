"""The Spark side of the invariant catalogue: which catalogue invariants the audit evaluates, and how.

`replication_core.checker.catalogue.CATALOGUE` is the one catalogue (name, severity, § of the reference,
rule, offsets meaning, requires, sources); this package only maps names to Spark checks. Checks are
grouped by the scan (one window pass over bronze) they read, so invariants that share a window are
evaluated in one projection (`jobs.invariants.base.Scan`).

Every invariant is also a function `bronze_df -> violations_df` (the violation schema of
`schemas.audit`), e.g. `hw_monotonic_leader(bronze)`, for tests and notebooks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.invariants import epoch_cache as _epoch_cache
from jobs.invariants import fetch_rules as _fetch_rules
from jobs.invariants import final_log as _final_log
from jobs.invariants import leadership as _leadership
from jobs.invariants import log_content as _log_content
from jobs.invariants import replica_scan as _replica
from jobs.invariants import truncation_point as _truncation_point
from jobs.invariants.base import Scan, ScanInputs, checkpointed, empty_violations
from replication_core.checker.catalogue import BY_NAME, CATALOGUE

SCANS: tuple[Scan, ...] = (
    _replica.SCAN, _leadership.SCAN, _epoch_cache.SCAN, _final_log.SCAN, _fetch_rules.SCAN, _log_content.SCAN,
    _truncation_point.SCAN,
)
"""Every scan of the audit, in evaluation order."""

IMPLEMENTED: tuple[str, ...] = tuple(inv.name for inv in CATALOGUE if any(inv.name in s.checks for s in SCANS))
"""Catalogue invariants the Spark audit evaluates (catalogue order)."""

NOT_IMPLEMENTED: tuple[str, ...] = tuple(inv.name for inv in CATALOGUE if inv.name not in IMPLEMENTED)
"""Catalogue invariants the Spark audit does not evaluate yet: reported as not evaluated, never as passed."""


def _check_registry() -> None:
    # Keep the registry honest at import: every Spark check names a catalogue invariant.
    for scan in SCANS:
        unknown = [n for n in scan.checks if n not in BY_NAME]
        if unknown:
            raise AssertionError(f"scan {scan.name} checks invariants missing from the catalogue: {unknown}")


_check_registry()


def evaluate(bronze: DataFrame, invariants: Sequence[str] | None = None,
             log: Callable[[str], None] | None = None, sources: Mapping[str, str] | None = None) -> DataFrame:
    """Violations of `invariants` (default: all implemented) in `bronze`, each scan run once.

    `log`, if given, gets one line as each scan finishes (at 10 M events the scans take minutes); `sources`, the
    runs' sources (`run_sources`) where the caller has them already."""
    wanted = list(IMPLEMENTED if invariants is None else invariants)
    missing = [n for n in wanted if n not in IMPLEMENTED]
    if missing:
        raise ValueError(f"not evaluated by the Spark audit: {missing}")
    scans = [s for s in SCANS if any(n in s.checks for n in wanted)]
    # Frames several scans derive from bronze (the replica replay) are built once for all of them.
    inputs = ScanInputs(bronze, materialise=True)
    parts = []
    for i, scan in enumerate(scans, 1):
        t0 = time.perf_counter()
        # Each scan's violations (a handful of rows behind a large plan) are materialised before the
        # union: one plan holding every scan made the driver run out of heap analysing it. None (the usual
        # case) is then a frame the optimiser knows is empty.
        parts.append(checkpointed(scan.run(bronze, wanted, inputs)))
        if log is not None:
            log(f"  scan {i}/{len(scans)} {scan.name}: {time.perf_counter() - t0:.1f}s")
    if not parts:
        return empty_violations(bronze.sparkSession)
    return applicable(bronze, reduce(DataFrame.unionByName, parts), sources)


def applicable(bronze: DataFrame, violations: DataFrame, sources: Mapping[str, str] | None = None) -> DataFrame:
    """Keep the violations of invariants whose catalogue `sources` include the run's source (that of its
    first event), as the checker does: a replay finding on a `kafka-log` run (no append events) is an
    artefact of the missing events, not a violation. `sources`: the runs' sources, if known (else aggregated)."""
    spark = bronze.sparkSession
    allowed = spark.createDataFrame([(inv.name, src) for inv in CATALOGUE for src in inv.sources],
                                    "invariant string, _source string")
    runs = (run_sources(bronze) if sources is None
            else spark.createDataFrame(sorted(sources.items()), "run_id string, source string"))
    return violations.join(runs.withColumnRenamed("source", "_source"), "run_id").join(
        allowed, ["invariant", "_source"], "left_semi").select(*violations.columns)


def run_sources(bronze: DataFrame) -> DataFrame:
    """(run_id, source): each run's source, that of its first event, as the checker takes it (one small row per
    run)."""
    return bronze.groupBy("run_id").agg(F.min_by("source", "event_id").alias("source"))


def not_applicable(sources: Mapping[str, str]) -> dict[str, list[str]]:
    """Per implemented invariant, the runs of `sources` (run id -> source) it does not apply to: their source's
    events cannot show it (record-level invariants on broker logs), so nothing is judged there."""
    return {name: sorted(r for r, src in sources.items() if src not in BY_NAME[name].sources) for name in IMPLEMENTED}


def hw_monotonic_leader(bronze: DataFrame) -> DataFrame:
    """hw_monotonic_leader (§11.1, §2.3): a leader's HW never decreases within its tenure and epoch."""
    return evaluate(bronze, ["hw_monotonic_leader"])


def hw_within_log(bronze: DataFrame) -> DataFrame:
    """hw_within_log (§11.1, §2.7): every replica's HW lies in [log start offset, LEO]."""
    return evaluate(bronze, ["hw_within_log"])


def leader_no_truncation(bronze: DataFrame) -> DataFrame:
    """leader_no_truncation (Appendix A, §2.6): a leader never truncates its own log."""
    return evaluate(bronze, ["leader_no_truncation"])


def isr_single_inflight(bronze: DataFrame) -> DataFrame:
    """isr_single_inflight (§11.7, §2.5): at most one AlterPartition pending per partition leader."""
    return evaluate(bronze, ["isr_single_inflight"])


def isr_nonempty(bronze: DataFrame) -> DataFrame:
    """isr_nonempty (§11.7, §9.1 LeaderInIsr): a partition with a leader has a non-empty ISR containing it."""
    return evaluate(bronze, ["isr_nonempty"])


def leader_epoch_monotonic(bronze: DataFrame) -> DataFrame:
    """leader_epoch_monotonic (§11.8): epochs increase across elections; one leader per epoch; a replica's
    epoch never goes back."""
    return evaluate(bronze, ["leader_epoch_monotonic"])


def acked_write_lost(bronze: DataFrame) -> DataFrame:
    """acked_write_lost (§11.4): every acks=all write acknowledged NONE is on the final leader's log."""
    return evaluate(bronze, ["acked_write_lost"])


def acks1_write_lost(bronze: DataFrame) -> DataFrame:
    """acks1_write_lost (info): the acks=1 writes acknowledged NONE that are not on the final leader's log."""
    return evaluate(bronze, ["acks1_write_lost"])


def epoch_cache_monotonic(bronze: DataFrame) -> DataFrame:
    """epoch_cache_monotonic (§11.8, §2.7): batch epochs never decrease with offset; a leader stamps its own
    epoch on the batches it appends."""
    return evaluate(bronze, ["epoch_cache_monotonic"])


def hw_frozen_under_min_isr(bronze: DataFrame) -> DataFrame:
    """hw_frozen_under_min_isr (§11.2, §2.3): the leader HW does not advance while the committed ISR is
    below the effective min ISR."""
    return evaluate(bronze, ["hw_frozen_under_min_isr"])


def hw_bound_maximal_isr(bronze: DataFrame) -> DataFrame:
    """hw_bound_maximal_isr (§11.2, §2.3, §2.5): a leader HW advance stays at or below the leader's view of the
    LEO of the leader and every maximal-ISR follower."""
    return evaluate(bronze, ["hw_bound_maximal_isr"])


def isr_expand_legal(bronze: DataFrame) -> DataFrame:
    """isr_expand_legal (§11.7, §2.4): an expansion adds one assigned, eligible, caught-up replica."""
    return evaluate(bronze, ["isr_expand_legal"])


def isr_shrink_legal(bronze: DataFrame) -> DataFrame:
    """isr_shrink_legal (§11.7, §2.4): a shrink removes only out-of-sync followers, never the leader."""
    return evaluate(bronze, ["isr_shrink_legal"])


def fetch_epoch_fenced(bronze: DataFrame) -> DataFrame:
    """fetch_epoch_fenced (§11.8, §8.3 KIP-320): a fetch is answered NONE only by a leader of its epoch."""
    return evaluate(bronze, ["fetch_epoch_fenced"])


def delayed_fetch_bound(bronze: DataFrame) -> DataFrame:
    """delayed_fetch_bound (§11.11, §5): a follower fetch is answered within its bound."""
    return evaluate(bronze, ["delayed_fetch_bound"])


def quota_throttle_legal(bronze: DataFrame) -> DataFrame:
    """quota_throttle_legal (§11.10, §4): only out-of-sync throttled replicas are throttled, only over the bound."""
    return evaluate(bronze, ["quota_throttle_legal"])


def committed_prefix_agreement(bronze: DataFrame) -> DataFrame:
    """committed_prefix_agreement (§11.3 LogMatching): records below min(HW_a, HW_b) are identical on any two
    replicas."""
    return evaluate(bronze, ["committed_prefix_agreement"])


def inconsistent_offsets(bronze: DataFrame) -> DataFrame:
    """inconsistent_offsets (§11.5): one (partition, offset) never holds two different committed records."""
    return evaluate(bronze, ["inconsistent_offsets"])


def truncation_safety(bronze: DataFrame) -> DataFrame:
    """truncation_safety (§11.6): no follower truncation removes a committed record."""
    return evaluate(bronze, ["truncation_safety"])


def isr_holds_committed(bronze: DataFrame) -> DataFrame:
    """isr_holds_committed (§11.3 StrongIsr / WeakIsr): every record below a leader's HW is on every
    committed-ISR member."""
    return evaluate(bronze, ["isr_holds_committed"])


def truncation_point(bronze: DataFrame) -> DataFrame:
    """truncation_point (§11.9, §3.5): a follower truncates to getOffsetTruncationState's answer (rounded down to
    a batch start), a DivergingEpoch is the leader's epoch-cache answer, and one below the LEO is followed by a
    truncation."""
    return evaluate(bronze, ["truncation_point"])


def follower_log_matching(bronze: DataFrame) -> DataFrame:
    """follower_log_matching (§11.9, §8.1, §8.2): a follower only extends a prefix it shares with its leader."""
    return evaluate(bronze, ["follower_log_matching"])


def event_stream_consistent(bronze: DataFrame) -> DataFrame:
    """event_stream_consistent (events contract, schemas/README.md): the events agree with the replay."""
    return evaluate(bronze, ["event_stream_consistent"])
