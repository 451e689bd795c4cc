"""`replog sample`: the sample landing files, and a bad `--out` refused with one line (no Spark involved)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs import cli


def test_sample_writes_its_landing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "landing" / "sample"
    assert cli.main(["sample", "--out", str(out)]) == 0
    written = sorted(p.name for p in out.iterdir())
    assert written and all(name.endswith((".jsonl", ".parquet")) for name in written)
    assert capsys.readouterr().out == f"wrote {len(written)} sample landing files to {out}\n"


def test_an_out_that_is_no_folder_is_named_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-file").write_text("x")
    cases = [(tmp_path / "a-file", f"expected a directory for the sample landing files, but {tmp_path / 'a-file'} "
                                   "is an existing file"),
             (tmp_path / "a-file" / "below", f"expected a directory for the sample landing files, but "
                                             f"{tmp_path / 'a-file'} is an existing file, not a directory")]
    for out, why in cases:
        assert cli.main(["sample", "--out", str(out)]) == 2
        assert capsys.readouterr().err == f"replog sample: failed: --out {out}: {why}\n"
