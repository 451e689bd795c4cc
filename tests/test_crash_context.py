"""What a file of an earlier batch gives a crash this batch tells of (`jobs.crash_context`): whether a new file tells
of a crash, and the lines of the file before it that the dating reads."""

from __future__ import annotations

import gzip
from pathlib import Path

from jobs.broker_logs import TAIL_LINES
from jobs.crash_context import earlier_lines, tells_of_a_crash

_MBEAN = "Registered kafka:type=kafka.Log4jController MBean (kafka.utils.Log4jControllerRegistration$)"


def _at(s: int, message: str) -> str:
    """A log4j line `s` seconds after 12:00 on 2024-05-14."""
    return f"[2024-05-14 {12 + s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d},000] INFO {message}"


def test_a_run_of_files_tells_of_a_crash_where_its_first_loading_process_finds_a_log_directory_unclean(
        tmp_path: Path) -> None:
    """The unclean line before a process that loaded its logs says it started (ZooKeeper or KRaft), past megabytes
    of DEBUG lines, past a KRaft start that gave up (it says STARTED as it does), in the run's next file (a
    Kubernetes restart); not after such a process started (a later crash is dated by the run's own lines), nor in a
    clean start, nor where the run opens without a start (the serving process's lines)."""
    unclean = _at(2, "Recovering 3 logs from /d1 since no clean shutdown file was found (kafka.log.LogManager)")
    debug = [_at(1, "DEBUG [MetadataLoader id=1] handleCommit " + "x" * 200)] * 20_000
    kraft_started = _at(3, "[BrokerServer id=1] Transition from STARTING to STARTED (kafka.server.BrokerServer)")
    loaded = _at(1, "Skipping recovery of 3 logs from /d1 since clean shutdown file was found (kafka.log.LogManager)")
    isr = _at(1, "[Partition t-0 broker=1] ISR updated to 1 and version updated to 2 (kafka.cluster.Partition)")
    files = {
        "zk.log": [_at(0, _MBEAN), unclean, _at(3, "[KafkaServer id=1] started (kafka.server.KafkaServer)")],
        "kraft.log.gz": [_at(0, _MBEAN), *debug, unclean, kraft_started],
        "gave-up.log": [_at(0, _MBEAN), kraft_started, _at(4, "[BrokerServer id=1] shut down completed (x)"),
                        _at(9, _MBEAN), unclean],
        "later.log": [_at(0, _MBEAN), loaded, _at(1, "[KafkaServer id=1] started (kafka.server.KafkaServer)"),
                      _at(9, _MBEAN), unclean],
        "clean.log": [_at(0, _MBEAN), loaded],
        "failed.log": [_at(0, _MBEAN), kraft_started],
        "restart.log": [_at(9, _MBEAN), unclean],
        "serving.log": [isr] * 10_000 + [_at(9, _MBEAN), unclean],
    }
    for name, lines in files.items():
        data = "".join(f"{line}\n" for line in lines).encode()
        (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    for run, crash in ((["zk.log"], True), (["kraft.log.gz"], True), (["gave-up.log"], True), (["later.log"], False),
                       (["clean.log"], False), (["failed.log", "restart.log"], True), (["serving.log"], False)):
        assert tells_of_a_crash([str(tmp_path / name) for name in run]) is crash, run


def test_the_lines_that_date_a_crash_are_the_last_stamped_ones_and_the_last_loaded_processs_life(
        tmp_path: Path) -> None:
    """The stamped ones of the last `TAIL_LINES` lines (a stack trace's frames date nothing), and, before them, the
    starts and milestones from the last process that loaded its logs on: its clean shutdown decides that a later
    start's unclean directory is no crash, though thousands of lines of failed starts come after it; and before each
    start the last stamped line, the last of the process before."""
    lines = [_at(0, _MBEAN),
             _at(1, "Skipping recovery of 1 logs from /d1 since clean shutdown file was found (kafka.log.LogManager)"),
             _at(2, "[KafkaServer id=1] started (kafka.server.KafkaServer)"), "\tsetting = 1",
             _at(3, _MBEAN),  # a start that failed before loading its logs: skipped by the next load
             _at(4, "Recovering 1 logs from /d1 since no clean shutdown file was found (kafka.log.LogManager)"),
             _at(5, "[KafkaServer id=1] started (kafka.server.KafkaServer)"),
             _at(6, "[KafkaServer id=1] shutting down (kafka.server.KafkaServer)"),
             _at(7, "[KafkaServer id=1] shut down completed (kafka.server.KafkaServer)")]
    for k in range(3000):  # failed starts, each two stamped lines and a trace
        lines += [_at(10 + k, _MBEAN), _at(10 + k, "ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)"),
                  "java.lang.RuntimeException: No readable meta.properties files found.", "\tat kafka.Kafka.main(x)"]
    path = tmp_path / "server.log.2024-05-14-12"
    path.write_text("".join(f"{line}\n" for line in lines))
    got = earlier_lines(str(path))
    tail = [(n, line) for n, line in enumerate(lines) if n >= len(lines) - TAIL_LINES and line.startswith("[")]
    # From the last start that loaded logs (line 4) on: its milestones (5-8), the failed starts' first lines and the
    # last stamped line before each (the failed start's before it).
    life = [(n, line, False) for n, line in enumerate(lines[:len(lines) - TAIL_LINES]) if n in (4, 5, 6, 7, 8) or
            (n > 8 and (_MBEAN in line or "Exiting" in line))]
    assert got == life + [(n, line, True) for n, line in tail]
    assert [n for n, _, _ in got[:8]] == [4, 5, 6, 7, 8, 9, 10, 13]
