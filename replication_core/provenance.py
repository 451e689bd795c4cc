"""Which code produced a result: replog's version plus a digest of the sources that decide it.

The simulator stamps its runs with it (`run.json`'s `code_version`) and the audit its verdicts
(`jobs.audit_watermarks.audit_signature`). Sources are read through `importlib.resources`, so the
digest is the same whether a package is imported from the checkout, an installed tree (compiled
modules keep their `.py` next to the extension) or the `--py-files` zip that spark-submit ships.
Not a Kafka class: build plumbing only (this module is interpreted).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from importlib import resources
from importlib.abc import Traversable

DISTRIBUTION = "replog"


def package_version() -> str:
    """replog's installed version, or `0+unknown` where it is not installed (a zip on a cluster's driver)."""
    try:
        from importlib.metadata import version

        return version(DISTRIBUTION)
    except Exception:  # not installed: the digest still names the code
        return "0+unknown"


def _python_sources(node: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for child in node.iterdir():
        if child.is_dir():
            if child.name != "__pycache__":
                yield from _python_sources(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".py"):
            yield prefix + child.name, child


def source_digest(sources: Sequence[tuple[str, str | None]]) -> str:
    """sha256 (12 hex digits) over `(package, file)` pairs: the named `.py` file of the package, or with `file`
    None every `.py` file below the package; each file's path within its package and its bytes, in path order.

    Raises `FileNotFoundError` naming the package when one has no such file (never a digest of nothing).
    """
    digest = hashlib.sha256()
    for package, name in sources:
        root = resources.files(package)
        found = sorted(_python_sources(root, "")) if name is None else [(name, root / name)]
        if not found or not all(f.is_file() for _, f in found):
            raise FileNotFoundError(f"no Python source {name or '*.py'} in package {package} to digest "
                                    f"(found under {root})")
        for rel, f in found:
            digest.update(f"{package}/{rel}".encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


def code_version(sources: Sequence[tuple[str, str | None]]) -> str:
    """`<replog version>+<source_digest(sources)>`."""
    return f"{package_version()}+{source_digest(sources)}"
