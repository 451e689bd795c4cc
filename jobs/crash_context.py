"""The lines of files an earlier batch read that date a crash this batch's files tell of.

An hourly ingest of rolled broker logs splits a crash across batches: the crashed process's last lines end one
hour's file, read by one batch, and the next process's unclean-start line (`UNCLEAN_LITERAL`) opens the next
hour's, read by the next. `jobs.broker_logs._with_crash_lines` dates the crash from the lines of both, so the new
file's predecessor in its log (`jobs.log_tails.files_rolled_before`) comes along as context, only where the new
file tells of a crash, and only the lines the dating reads: the stamped ones of its last `TAIL_LINES`, and, from
before them, the start lines (each with the stamped line before it) and milestones from the last process that loaded
its logs on, which decide which process crashed, when, and whether it had shut down in order. Read on the driver in
bounded memory; rare, so cheap overall. A late older file of the same batch does not carry across the earlier file
(`_with_crash_lines` cuts its windows there)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from jobs.broker_log_patterns import LOAD_MILESTONES, PROCESS_FIRST_LINES, PROCESS_MILESTONES
from jobs.broker_logs import LINE_PREFIX, START_REACH, TAIL_LINES, UNCLEAN_LITERAL
from jobs.log_tails import files_rolled_before, scan, text
from jobs.session import sql_conf

HEAD_BYTES = 64 << 20
"""How far into a run of new files the unclean-start line is looked for while a process is starting: a KRaft broker
loads its logs only once it has caught up with the metadata log, which DEBUG lines can make megabytes later than its
first line."""
QUIET_BYTES = 1 << 20
"""How far into a run of new files a process start is looked for: a file that opens without one is the serving
process's, whose crash, if any, its own lines date."""
LINE_BYTES = 4096
"""How much of each line is kept: its timestamp and the literals that matter come first."""

_STAMPED = re.compile(LINE_PREFIX)
_STARTED = [re.compile(regex) for literal, regex in PROCESS_MILESTONES if literal in ("started", "STARTED")]
_LOADED = [re.compile(regex) for literal, regex in PROCESS_MILESTONES if literal in LOAD_MILESTONES]
_MILESTONES = [re.compile(regex) for _, regex in PROCESS_MILESTONES]
_START_BYTES = [s.encode() for s in PROCESS_FIRST_LINES]
_LIFE_BYTES = [*_START_BYTES, *(literal.encode() for literal, _ in PROCESS_MILESTONES)]


def _any(patterns: Iterable[re.Pattern[str]], line: str) -> bool:
    return any(p.search(line) for p in patterns)


def tells_of_a_crash(paths: Sequence[str]) -> bool:
    """Whether the run of log files `paths` (one log's, in roll order) holds an unclean start's line before a process
    that loaded its logs says it started: the crash it tells of may be dated only by the file rolled before the run.
    A start that fails before it loads its logs (KRaft's says STARTED as it gives up) goes on to the next one, in the
    same file or the next (Kubernetes writes each restart to a file of its own). Read no further than `QUIET_BYTES`
    without a start, nor than `HEAD_BYTES` in all."""
    starting = loaded = False
    read = 0
    for path in paths:
        done = read
        for lines, consumed in scan(path, LINE_BYTES):
            read = done + consumed
            blob = b"\n".join(lines)
            if any(literal in blob for literal in _LIFE_BYTES):
                for line in map(text, lines):
                    if UNCLEAN_LITERAL in line:
                        return True
                    if any(s in line for s in PROCESS_FIRST_LINES):
                        starting, loaded = True, False
                    elif _any(_LOADED, line):
                        loaded = True
                    elif loaded and _any(_STARTED, line):
                        return False
            if read >= HEAD_BYTES or (not starting and read >= QUIET_BYTES):
                return False
    return False


def _last_stamped(lines: Sequence[bytes], i: int, tail: deque[tuple[int, bytes]], pos: int,
                  reach: int) -> tuple[int, str] | None:
    """The last stamped line among the `reach` lines before `lines[i]` (at `pos + i` in its file), looking back into
    `tail`, which holds the lines before `lines`."""
    before = [(pos + k, lines[k]) for k in range(i - 1, max(i - reach, 0) - 1, -1)]
    before += [tail[k] for k in range(len(tail) - 1, max(len(tail) - (reach - i), 0) - 1, -1)] if i < reach else []
    for n, raw in before:
        line = text(raw)
        if _STAMPED.search(line):
            return n, line
    return None


def earlier_lines(path: str) -> list[tuple[int, str, bool]]:
    """(position, line, in the tail) of what `jobs.broker_logs._with_crash_lines` reads of the log file `path`
    before a later file: the stamped ones of its last `TAIL_LINES` lines, and before them its process starts (each
    with the last stamped line in the `START_REACH` lines before it: the last line of the process before) and
    milestones, from the last start of a process that loaded its logs on (or from its last load line, for a process
    that started in an earlier file). Unstamped lines (stack traces, config settings) date nothing."""
    tail: deque[tuple[int, bytes]] = deque(maxlen=max(TAIL_LINES, START_REACH))
    life: list[tuple[int, str]] = []
    start: int | None = None  # where in `life` the last process start is
    pos = 0
    for lines, _ in scan(path, LINE_BYTES):
        blob = b"\n".join(lines)
        if any(literal in blob for literal in _LIFE_BYTES):
            for i, raw in enumerate(lines):
                if not any(literal in raw for literal in _LIFE_BYTES):
                    continue
                n, line = pos + i, text(raw)
                if any(s in line for s in PROCESS_FIRST_LINES):
                    last = _last_stamped(lines, i, tail, pos, START_REACH)
                    if last is not None and (not life or last[0] > life[-1][0]):
                        life.append(last)
                    start = len(life)
                    life.append((n, line))
                elif _any(_LOADED, line):
                    # A process loaded its logs: what came before its start decides nothing after it.
                    life = [*life[start:], (n, line)] if start is not None else [(n, line)]
                    start = 0 if start is not None else None
                elif _any(_MILESTONES, line):
                    life.append((n, line))
        tail.extend(zip(range(pos, pos + len(lines)), lines, strict=True))
        pos += len(lines)
    first = max(pos - TAIL_LINES, 0)
    stamped = [(n, line, True) for n, line in ((n, text(raw)) for n, raw in tail if n >= first)
               if _STAMPED.search(line)]
    return [(n, line, False) for n, line in life if n < first] + stamped


def earlier_context(spark: SparkSession, paths: Sequence[str], earlier: Sequence[str], landed: Sequence[str],
                    log: Callable[[str], None] = print) -> DataFrame | None:
    """The `earlier_lines` of each file of `earlier` (read by an earlier batch) rolled just before a run of files of
    `paths` that `tells_of_a_crash`, as `read_broker_logs`' `earlier` (`_path`, `pos`, `line`, `_in_tail`); None
    where there are none. A file the driver cannot read gives none (said in `log`): its crash stays undated, as
    without it."""
    rows: list[tuple[str, int, str, bool]] = []
    for before, run in files_rolled_before(spark, paths, earlier, landed):
        try:
            if not tells_of_a_crash(run):
                continue
        except Exception as e:  # whatever the reader raised is the file's fault; Spark's read reports it again
            log(f"ingest: the first lines of {', '.join(run)} are unreadable, so a crash they may tell of is not dated "
                f"from {before}: {type(e).__name__}: {str(e).strip()[:200]}")
            continue
        try:
            rows += [(before, *line) for line in earlier_lines(before)]
        except Exception as e:  # as above
            log(f"ingest: the last lines of {before} are unreadable, so a crash {run[0]} may tell of is not dated "
                f"from them: {type(e).__name__}: {str(e).strip()[:200]}")
            continue
        log(f"ingest: read the last lines of {before}: {run[0]} tells of a crash they may date")
    if not rows:
        return None
    frame = pd.DataFrame(rows, columns=["_path", "pos", "line", "_in_tail"])
    # Arrow hands the rows over in batches: a tuple at a time costs seconds for a few crashes' tails.
    with sql_conf(spark, {"spark.sql.execution.arrow.pyspark.enabled": "true"}):
        return spark.createDataFrame(frame, "_path string, pos long, line string, _in_tail boolean")
