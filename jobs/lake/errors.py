"""Exceptions of the Delta table layer."""

from __future__ import annotations


class LakeError(RuntimeError):
    """Base class of table-layer failures."""


class TableNotFoundError(LakeError):
    """The table does not exist at the expected path."""


class UnsupportedTableProtocolError(LakeError):
    """The table needs reader features that the embedded reader cannot honour."""


class SchemaMismatchError(LakeError):
    """Files about to be committed do not have the table's schema."""


class ConcurrentCommitError(LakeError):
    """Another writer committed part of the same idempotent batch while this one was writing."""
