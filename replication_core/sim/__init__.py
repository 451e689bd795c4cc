"""The deterministic discrete-event simulator that drives the replication engine.

One virtual clock (`clock.EventQueue`), one seeded `random.Random` passed in from the scenario, and
the engine's state machines (`ReplicaManager`, `FetcherManager`, `ReplicaFetcherThread`) wired to a
simulated network, disks, a controller, producers and faults. `writer.py` is the only module that
writes files; `cli.py` is the `replog simulate` entry point.
"""
