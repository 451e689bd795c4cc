"""A short run of the deep campaign shapes (`tests.sim.campaign --deep`) in the suite.

Replication factor 2 or 4, multi-record batches, small fetch size limits (partial fetches that stop at a batch
boundary), more message loss, acks=0 producers and a second topic with its own min ISR and unclean setting, on top
of the wide shapes' retention, unclean elections and larger clusters, all under the nemesis. Every run must show
no problem beyond the known, Kafka-faithful findings (`tests.sim.known_findings`); longer campaigns run outside
the suite (README, "The simulator").
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.sim.campaign import deep_scenario, problems

SEEDS = range(3000, 3040)
SHARDS = 2


@pytest.mark.parametrize("shard", range(SHARDS))
def test_deep_shapes_show_no_problem_beyond_the_known_findings(shard: int) -> None:
    """Every SHARDS-th seed of SEEDS; each shape the deep draw adds occurs in the shard."""
    shapes: Counter[str] = Counter()
    for seed in SEEDS[shard::SHARDS]:
        sc = deep_scenario(seed)
        found, _known = problems(sc)
        assert found == [], (seed, found)
        t = sc.topics[0]
        shapes[f"rf{t.replication_factor}"] += 1
        shapes["multi-record batches"] += any(p.records_per_batch > 1 for p in sc.producers)
        shapes["acks=0"] += any(p.acks == 0 for p in sc.producers)
        shapes["small fetch limits"] += (sc.broker_config.replica_fetch_max_bytes < 2000
                                         or sc.broker_config.replica_fetch_response_max_bytes < 5000)
    assert {"rf2", "rf3", "rf4"} <= set(shapes), shapes
    assert min(shapes["multi-record batches"], shapes["acks=0"], shapes["small fetch limits"]) > 0, shapes
