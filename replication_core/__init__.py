"""Kafka's replica management as sans-I/O state machines (`kafka.cluster.Partition`,
`kafka.server.ReplicaManager`, `ReplicaFetcherThread`, ...), plus the simulator (`sim/`) and the
reference checker (`checker/`).

The engine and simulator modules may run mypyc-compiled (see `setup.py`); importing the package
first checks that no compiled extension is older than the source next to it (`_native_guard`).
"""

from replication_core._native_guard import check_compiled_build

check_compiled_build()
