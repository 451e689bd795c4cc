"""The one schema source of replog: pyarrow schemas, from which Spark and JSON Schema forms derive."""
