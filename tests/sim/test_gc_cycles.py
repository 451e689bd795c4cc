"""The simulator's hot paths leave no reference cycles behind, and `simulate` restores the GC thresholds.

`replog simulate` runs with a large young-generation GC threshold (`sim.cli._fewer_gc_passes`) on the
grounds that a fetch round frees its objects by reference counting alone; a cycle there (as the
fetcher's reply closure that named itself once was) would keep every finished round alive until a
collection.
"""

from __future__ import annotations

import gc
from pathlib import Path

from replication_core.sim.cli import simulate
from replication_core.sim.cluster import Cluster, ListSink
from tests.sim.helpers import scenario


def test_a_steady_run_leaves_no_cyclic_garbage() -> None:
    """Nothing a fault-free run allocates needs the cyclic collector to be freed."""
    cluster = Cluster(scenario("steady-state", duration_ms=5000))
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        cluster.run(ListSink(), batch_events=4096)
        found = gc.collect()
    finally:
        if was_enabled:
            gc.enable()
    assert found == 0


def test_simulate_restores_the_gc_thresholds(tmp_path: Path) -> None:
    """The larger threshold holds during the run only."""
    before = gc.get_threshold()
    simulate(scenario("steady-state", duration_ms=2000), tmp_path)
    assert gc.get_threshold() == before
