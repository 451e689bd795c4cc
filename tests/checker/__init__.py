"""Tests of the reference checker (replication_core/checker)."""
