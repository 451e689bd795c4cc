"""Java integer and string hashing, bit-exact, for Kafka's fetcher-id assignment.

Kafka assigns a partition to a fetcher thread with `Utils.abs(31 * topic.hashCode + partition) %
numFetchers` (`AbstractFetcherManager.getFetcherId`). Reproducing the same thread assignment in
Python needs three Java details: `String.hashCode` iterates over UTF-16 code units (a non-BMP
character such as an emoji counts twice, as a surrogate pair), `int` arithmetic wraps at 32 bits,
and `Utils.abs(Integer.MIN_VALUE)` is 0 (not `Integer.MIN_VALUE` as in `Math.abs`).
"""

from __future__ import annotations

_MASK32 = 0xFFFFFFFF
INT_MIN = -(2**31)


def to_int32(value: int) -> int:
    """Wrap an unbounded Python int to a signed 32-bit Java `int` (two's complement overflow)."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def utf16_code_units(text: str) -> list[int]:
    """The UTF-16 code units of `text`, as Java's `String.charAt` would return them."""
    raw = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]


def java_string_hash(text: str) -> int:
    """Java `String.hashCode`: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as a signed int."""
    h = 0
    for unit in utf16_code_units(text):
        h = (31 * h + unit) & _MASK32
    return to_int32(h)


def kafka_utils_abs(value: int) -> int:
    """Kafka `Utils.abs(int)`: absolute value, except `Integer.MIN_VALUE` maps to 0."""
    return 0 if value == INT_MIN else abs(value)


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """`AbstractFetcherManager.getFetcherId`: `Utils.abs(31 * topic.hashCode + partition) % num_fetchers`."""
    if num_fetchers <= 0:
        raise ValueError(f"num_fetchers must be positive, got {num_fetchers}")
    mixed = to_int32(31 * java_string_hash(topic) + partition)
    return kafka_utils_abs(mixed) % num_fetchers
