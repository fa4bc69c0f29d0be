"""oom-score-adj: what is written to the process's oom_score_adj for each mode and class,
and the original value put back when Sluice stops adjusting it (server/oom_score.py)."""

from __future__ import annotations

from pathlib import Path

from sluice.server.oom_score import BGCHILD, MASTER, OomScore

VALUES = (0, 200, 800)


def _score(path: Path) -> int:
    return int(path.read_text())


def test_relative_adds_to_the_original_and_no_restores_it(tmp_path: Path) -> None:
    f = tmp_path / "oom_score_adj"
    f.write_text("100\n")
    oom = OomScore(str(f))
    assert oom.apply("no", VALUES)  # never adjusted: left alone
    assert _score(f) == 100
    assert oom.apply("yes", (10, 200, 800))
    assert _score(f) == 110
    f.write_text("999\n")  # whoever changed it meanwhile: the original stays 100
    assert oom.apply("relative", VALUES, BGCHILD)
    assert _score(f) == 900
    assert oom.apply("no", VALUES)
    assert _score(f) == 100


def test_absolute_writes_the_class_value_within_bounds(tmp_path: Path) -> None:
    f = tmp_path / "oom_score_adj"
    f.write_text("-50\n")
    oom = OomScore(str(f))
    assert oom.apply("absolute", (-2000, 0, 2000), MASTER)
    assert _score(f) == -1000
    assert oom.apply("absolute", (-2000, 0, 2000), BGCHILD)
    assert _score(f) == 1000


def test_an_unreadable_file_is_reported(tmp_path: Path) -> None:
    assert not OomScore(str(tmp_path / "missing")).apply("yes", VALUES)
