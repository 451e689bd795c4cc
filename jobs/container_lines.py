"""A container's log as a container runtime writes it (the CRI format of containerd and CRI-O): each line of the
container's output after the runtime's own time, the stream and a tag, `2024-05-14T12:00:00.123456789Z stdout F `.
The tag is F for a whole line or the last part of one, P for a part with more to come: containerd writes a line
longer than `max_container_log_line_size` (16 KiB by default) as several lines, P ones and then an F one, and CRI-O's
conmon tags P what it has read when its 8 KiB read buffer ends inside a line, so that there even a short line may come
in two parts. The cuts fall anywhere. A broker's 'Added fetcher' line for a few hundred partitions is over 16 KiB.

`part_chains` finds the parts of each long line so that `jobs.landing.numbered_lines` can give the container's line
back whole, at the number of its first part. The parts of one line are taken to be written one after the other: a
line of the other stream written between two of them (the JVM writing to stderr while log4j writes a long line to
stdout) would be taken as the rest of the cut one. A broker's log4j lines, stack traces included, all go to stdout.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

CRI_PREFIX = r"^\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:?\d{2}) (?:stdout|stderr) [FP] "
"""What a container runtime writes before each line of a container's log: its own time, the stream, the tag."""
_PART = CRI_PREFIX.replace("[FP]", "P")


def _runtime_time(line: Column) -> Column:
    """The 'T' of the runtime's time: a cheap test that screens the other lines out before a pattern is tried."""
    return F.substring(line, 11, 1) == "T"


def is_part(line: Column) -> Column:
    """True for a line that is a part of a longer one, continued on the next line (tag P). The tag's place (after a
    time of 20 to 35 characters and the stream) is looked at before the pattern is tried: every line of a container's
    log has the runtime's time, few have a P."""
    tag = F.substring(line, 20, 26)
    return _runtime_time(line) & (tag.contains(" stdout P ") | tag.contains(" stderr P ")) & line.rlike(_PART)


def without_prefix(line: Column) -> Column:
    """The line as the container wrote it: the runtime's prefix cut (a line without one stays as it is)."""
    return F.when(_runtime_time(line), F.regexp_replace(line, CRI_PREFIX, "")).otherwise(line)


def part_chains(parts: DataFrame) -> DataFrame:
    """How to put the cut lines of some files back together, from their parts (`_uri`, `pos`: the 0-based line
    number, `line` without the runtime's prefix, `_lines`: the file's line count).

    The parts on consecutive lines are one line's, continued on the line after the last of them (its F part). That
    line, the chain's key, takes the parts' text before its own (`_prefix`) and the first part's number (`_start`);
    the parts go (`_drop`). A file that ends with parts has no rest of that line: its last part is the key.
    Rows: (`_uri`, `pos`, `_prefix`, `_start`, `_drop`), one per part and rest line.
    """
    in_file = Window.partitionBy("_uri").orderBy("pos")
    chains = (parts.withColumn("_run", F.col("pos") - F.row_number().over(in_file))
              .groupBy("_uri", "_run")
              .agg(F.min("pos").alias("_start"), F.max("pos").alias("_last_part"), F.max("_lines").alias("_lines"),
                   F.array_sort(F.collect_list(F.struct("pos", "line"))).alias("_texts")))
    has_rest = F.col("_last_part") + 1 < F.col("_lines")
    texts = F.transform("_texts", lambda t: t.getField("line"))
    keyed = chains.withColumns({
        "_key": F.when(has_rest, F.col("_last_part") + 1).otherwise(F.col("_last_part")),
        # Without a rest, the last part is the key's own text.
        "_prefix": F.array_join(F.when(has_rest, texts).otherwise(F.slice(texts, 1, F.size(texts) - 1)), "")})
    keys = keyed.select("_uri", F.col("_key").alias("pos"), "_prefix", "_start", F.lit(False).alias("_drop"))
    dropped = keyed.select("_uri", F.explode(F.filter(F.transform("_texts", lambda t: t.getField("pos")),
                                                      lambda p: p != F.col("_key"))).alias("pos"),
                           F.lit(None).cast("string").alias("_prefix"), F.lit(None).cast("long").alias("_start"),
                           F.lit(True).alias("_drop"))
    return keys.unionByName(dropped)
