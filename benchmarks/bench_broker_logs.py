"""Broker-log ingest benchmark: lines/s of `replog ingest --source kafka-logs`, as a ratio to a plain Spark scan.

    python benchmarks/bench_broker_logs.py                       # 1,000,000 lines over 6 brokers' server.log
    python benchmarks/bench_broker_logs.py --lines 4000000 --replication-share 0.05
    python benchmarks/bench_broker_logs.py --gzip                # the same files gzip-compressed (server.log.1.gz)

What it does:
1. Writes synthetic broker logs (not measured): `--brokers` files of `--lines` lines in all, in Kafka's log4j
   layout. A `--replication-share` of the lines are replication messages in the forms `jobs.broker_log_patterns`
   reads (ISR shrink / expand / commit, leader and follower lines, fetcher additions, truncations), the rest
   ordinary broker chatter (ZooKeeper client, request handling, log segment rolls, ...), as real server.logs are.
2. In one SparkSession built from `conf/local.yaml`, after a warm-up on a small copy, times:
   - the plain scan: `spark.read.text(...)` + count of the lines holding 'ISR' (the reference of the ratios);
   - the read: `jobs.broker_logs.read_broker_logs` + validation into a noop sink (every line screened, the
     replication lines parsed, numbered and given ids);
   - the whole ingest: `jobs.ingest.run_ingest(..., logs=...)` into a fresh embedded lake, end to end;
   - the same files in two batches into another lake, as an hourly ingest lands them: the first half of the
     brokers' files, then the rest, whose lines (and ids) fall among the first batch's in time; the second batch
     is timed, and whether it was written a second time behind the exact duplicate check is reported.
3. Prints the table and writes the figures as JSON to `benchmarks/results/broker-logs-<date>.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

NOISE = (
    "[{ts}] INFO Session establishment complete on server zk-{n}:2181, session id = 0x{h}, negotiated timeout = "
    "18000 (org.apache.zookeeper.ClientCnxn)",
    "[{ts}] INFO [GroupCoordinator {b}]: Member consumer-{n}-{h} in group g-{n} has left, removing it from the group "
    "(kafka.coordinator.group.GroupCoordinator)",
    "[{ts}] INFO [ProducerStateManager partition=t-{p}] Wrote producer snapshot at offset {o} with 0 producer ids in "
    "12 ms. (kafka.log.ProducerStateManager)",
    "[{ts}] INFO [Log partition=t-{p}, dir=/var/lib/kafka/data] Rolled new log segment at offset {o} in 3 ms. "
    "(kafka.log.Log)",
    "[{ts}] INFO [SocketServer listenerType=ZK_BROKER, nodeId={b}] Failed authentication with /10.0.{n}.{p} "
    "(Unexpected Kafka request of type METADATA during SASL handshake.) (org.apache.kafka.common.network.Selector)",
    "[{ts}] WARN [ReplicaFetcher replicaId={b}, leaderId={n}, fetcherId=0] Error in response for fetch request "
    "(type=FetchRequest, replicaId={b}, maxWait=500, minBytes=1) (kafka.server.ReplicaFetcherThread)",
)
REPLICATION = (
    "[{ts}] INFO [Partition t-{p} broker={b}] Shrinking ISR from {b},{n},{m} to {b},{n}. Leader: (highWatermark: "
    "{o}, endOffset: {o2}). Out of sync replicas: (brokerId: {m}, endOffset: {o}). (kafka.cluster.Partition)",
    "[{ts}] INFO [Partition t-{p} broker={b}] Expanding ISR from {b},{n} to {b},{n},{m} (kafka.cluster.Partition)",
    "[{ts}] INFO [Partition t-{p} broker={b}] ISR updated to {b},{n}  and version updated to {v} "
    "(kafka.cluster.Partition)",
    "[{ts}] INFO [Broker id={b}] Leader t-{p} with topic id Some(AbCdEfGhIjKlMnOpQrStUv) starts at leader epoch {v} "
    "from offset {o2} with partition epoch {v}, high watermark {o}, ISR [{b},{n},{m}], adding replicas [] and "
    "removing replicas [] . Previous leader Some({n}) and previous leader epoch was {v}. (state.change.logger)",
    "[{ts}] INFO [ReplicaFetcherManager on broker {b}] Added fetcher to broker {n} for partitions Map(t-{p} -> "
    "InitialFetchState(Some(AbCdEfGhIjKlMnOpQrStUv),BrokerEndPoint(id={n}, host=kafka{n}:9092),{v},{o})) "
    "(kafka.server.ReplicaFetcherManager)",
    "[{ts}] INFO [UnifiedLog partition=t-{p}, dir=/var/lib/kafka/data] Truncating to offset {o} "
    "(kafka.log.UnifiedLog)",
)


def write_logs(folder: Path, lines: int, brokers: int, share: float, seed: int, gz: bool = False) -> int:
    """`lines` log lines over one server.log per broker (gzip-compressed with `gz`); returns how many are
    replication messages."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2024, 5, 14, tzinfo=dt.UTC)
    replication = 0
    per_broker = lines // brokers
    for b in range(1, brokers + 1):
        name = f"broker-{b}.server.log" + (".1.gz" if gz else "")
        with (gzip.open if gz else open)(folder / name, "wt", encoding="utf-8") as out:
            for i in range(per_broker):
                ts = (start + dt.timedelta(milliseconds=i * 7)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
                kind = REPLICATION if rng.random() < share else NOISE
                replication += kind is REPLICATION
                n, m = (b % brokers) + 1, ((b + 1) % brokers) + 1
                o = rng.randrange(1_000_000)
                out.write(rng.choice(kind).format(ts=ts, b=b, n=n, m=m, p=rng.randrange(200), o=o, o2=o + 40,
                                                  v=rng.randrange(1, 50), h=f"{rng.getrandbits(48):x}") + "\n")
    return replication


def timed(fn: Any) -> tuple[float, Any]:
    """Wall seconds of `fn()` and its result."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=6)
    ap.add_argument("--replication-share", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--gzip", action="store_true", help="write the logs gzip-compressed (one Spark task per file)")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/broker-logs-<date>.json)")
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from jobs.broker_logs import BrokerLogOptions, read_broker_logs
    from jobs.config import load_config
    from jobs.ingest import run_ingest
    from jobs.lake import EmbeddedLake
    from jobs.session import build_spark
    from jobs.validate import classify

    with tempfile.TemporaryDirectory(prefix="bench-broker-logs-") as tmp:
        root = Path(tmp)
        t_gen, replication = timed(lambda: write_logs(root / "logs", args.lines, args.brokers,
                                                       args.replication_share, args.seed, args.gzip))
        write_logs(root / "warm", 20_000, 2, args.replication_share, args.seed + 1)
        paths = sorted(str(p) for p in (root / "logs").iterdir())
        size = sum(os.path.getsize(p) for p in paths)
        packed = " gzipped" if args.gzip else ""
        print(f"wrote {args.lines:,} lines ({replication:,} replication messages, {size / 1e6:.0f} MB{packed}) "
              f"in {t_gen:.1f} s")

        spark = build_spark(load_config(None).spark)
        spark.sparkContext.setLogLevel("ERROR")
        options = BrokerLogOptions("bench")
        warm = sorted(str(p) for p in (root / "warm").iterdir())
        classify(read_broker_logs(spark, warm, options)).write.format("noop").mode("overwrite").save()
        spark.read.text(warm).where(F.col("value").contains("ISR")).count()

        t_scan, isr_lines = timed(lambda: spark.read.text(paths).where(F.col("value").contains("ISR")).count())
        t_read, _ = timed(lambda: classify(read_broker_logs(spark, paths, options))
                          .write.format("noop").mode("overwrite").save())
        lake = EmbeddedLake(spark, str(root / "lake"))
        t_ingest, result = timed(lambda: run_ingest(spark, lake, str(root / "logs"), log=lambda _m: None,
                                                    logs=options))
        # Two batches: the landing folder gains the second half of the files after the first is ingested.
        batches, split = root / "batches", len(paths) // 2
        batches.mkdir()
        for p in paths[:split]:
            os.link(p, batches / Path(p).name)
        lake2 = EmbeddedLake(spark, str(root / "lake-batches"))
        run_ingest(spark, lake2, str(batches), log=lambda _m: None, logs=options)
        for p in paths[split:]:
            os.link(p, batches / Path(p).name)
        said: list[str] = []
        t_second, second = timed(lambda: run_ingest(spark, lake2, str(batches), log=said.append, logs=options))
        written_again = any("writing again" in m for m in said)
        spark.stop()

    figures = {
        "benchmark": "broker-logs", "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "lines": args.lines, "brokers": args.brokers, "gzip": args.gzip, "replication_messages": replication,
        "bytes": size,
        "load_average": os.getloadavg(),
        "scan_s": round(t_scan, 2), "isr_lines": isr_lines, "read_s": round(t_read, 2),
        "ingest_s": round(t_ingest, 2),
        "read_over_scan": round(t_read / t_scan, 2), "ingest_over_scan": round(t_ingest / t_scan, 2),
        "lines_per_s_ingest": round(args.lines / t_ingest),
        "records_read": result.read, "kept": result.kept, "quarantined": result.quarantined,
        "reconciles": result.reconciles,
        "second_batch_files": len(paths) - split, "second_batch_s": round(t_second, 2),
        "second_batch_written_again": written_again, "second_batch_kept": second.kept,
        "second_batch_reconciles": second.reconciles,
    }
    print(f"plain scan (text + filter + count): {t_scan:6.1f} s   ({isr_lines:,} lines hold 'ISR')")
    print(f"read + validate (noop sink):        {t_read:6.1f} s   {t_read / t_scan:5.1f}x the scan")
    print(f"whole ingest (embedded lake):       {t_ingest:6.1f} s   {t_ingest / t_scan:5.1f}x the scan, "
          f"{args.lines / t_ingest:,.0f} lines/s")
    print(f"records read {result.read:,} = kept {result.kept:,} + quarantined {result.quarantined:,}"
          f"  [{'reconciled' if result.reconciles else 'NOT RECONCILED'}]")
    print(f"second batch ({len(paths) - split} of {len(paths)} files, after the others): {t_second:6.1f} s, "
          f"{'written twice (exact duplicate check)' if written_again else 'written once'}, kept {second.kept:,}"
          f"  [{'reconciled' if second.reconciles else 'NOT RECONCILED'}]")
    out = Path(args.out) if args.out else (Path(__file__).parent / "results" /
                                            f"broker-logs-{figures['date_utc']}.json")
    out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"figures: {out}")


if __name__ == "__main__":
    main()
