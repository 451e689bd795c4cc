"""Java `String.hashCode` / `Utils.abs` / fetcher-id emulation, checked against Java-semantics arithmetic."""

from __future__ import annotations

import ctypes
import struct

import pytest

from replication_core.java_hash import fetcher_id, java_string_hash, kafka_utils_abs, to_int32


def java_hash_reference(text: str) -> int:
    """Independent Java-semantics model: c_int32 wrap on every step, UTF-16 units via struct."""
    raw = text.encode("utf-16-le", "surrogatepass")
    units = struct.unpack(f"<{len(raw) // 2}H", raw)
    h = ctypes.c_int32(0)
    for u in units:
        h = ctypes.c_int32(h.value * 31 + u)
    return h.value


def fetcher_id_reference(topic: str, partition: int, n: int) -> int:
    """Independent Java-semantics model of `getFetcherId`."""
    v = ctypes.c_int32(31 * java_hash_reference(topic) + partition).value
    return (0 if v == -(2**31) else abs(v)) % n


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),            # well-known Java value
    ("Hello World", -862545276),    # overflows to a negative int in Java
    ("polygenelubricants", -(2**31)),  # famous Integer.MIN_VALUE hash
])
def test_known_java_hash_codes(text: str, expected: int) -> None:
    """Values Java's `String.hashCode` returns."""
    assert java_string_hash(text) == expected
    assert java_hash_reference(text) == expected


def test_non_bmp_topic_hashes_utf16_surrogate_pair() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in Java: hash = 0xD83D * 31 + 0xDE00.
    """A non-BMP character hashes as its two UTF-16 code units."""
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00 == 1772899
    # "t" + emoji: ((116 * 31 + 0xD83D) * 31 + 0xDE00)
    assert java_string_hash("t\U0001F600") == (116 * 31 + 0xD83D) * 31 + 0xDE00
    long_topic = "orders-\U0001F600-événements-日本-" * 5
    assert java_string_hash(long_topic) == java_hash_reference(long_topic)


def test_int32_wrap_and_utils_abs() -> None:
    """32-bit wrap and `Utils.abs(Integer.MIN_VALUE) == 0`."""
    assert to_int32(2**31) == -(2**31)
    assert to_int32(2**32 + 5) == 5
    assert kafka_utils_abs(-(2**31)) == 0
    assert kafka_utils_abs(-7) == 7


def test_fetcher_id_min_value_edge() -> None:
    # 31 * MIN_VALUE wraps to MIN_VALUE; Utils.abs(MIN_VALUE) == 0.
    """`31 * MIN_VALUE` wraps to MIN_VALUE, so the fetcher id is 0."""
    assert fetcher_id("polygenelubricants", 0, 7) == 0
    # MIN_VALUE + 1 -> abs = 2^31 - 1, and (2^31 - 1) % 7 == 1.
    assert fetcher_id("polygenelubricants", 1, 7) == 1


@pytest.mark.parametrize("topic", ["topic", "my-topic", "__consumer_offsets", "Hello World",
                                   "\U0001F680rocket", "emoji\U0001F600\U0001F601", "ü-topic"])
@pytest.mark.parametrize("n", [1, 3, 8, 50])
def test_fetcher_id_matches_reference(topic: str, n: int) -> None:
    """ASCII, accented and emoji topics agree with the reference model."""
    for p in range(0, 40):
        assert fetcher_id(topic, p, n) == fetcher_id_reference(topic, p, n)


def test_fetcher_id_rejects_non_positive_pool() -> None:
    """A pool needs at least one fetcher."""
    with pytest.raises(ValueError, match="positive"):
        fetcher_id("t", 0, 0)
