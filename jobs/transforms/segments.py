"""Running values "since the last set" along a window's order, with no window per segment (no sort of its own)."""

from __future__ import annotations

from pyspark.sql import Column, WindowSpec
from pyspark.sql import functions as F


def lowest_in_segment(low: Column, segment: Column, frame: WindowSpec) -> Column:
    """The smallest non-null `low` over the rows of `frame` whose `segment` (a running count along the frame's
    order, already a column) is the current row's; null when that segment has none so far.

    The largest (segment, -low) over the frame is the smallest value of the latest segment that has one, so a
    value "since the last set" needs no window per segment and no sort of its own."""
    latest = F.max(F.when(low.isNotNull(), F.struct(segment.alias("seg"), (-low).alias("neg")))).over(frame)
    return F.when(latest["seg"] == segment, -latest["neg"])
