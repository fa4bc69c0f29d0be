"""``failOnDataLoss``: a checkpointed offset whose history was trimmed away.

The pure rule (``sluice.pipeline.dataloss``) is tested without Spark; the ``spark`` tests
run a checkpointed query, trim past its checkpoint (as retention or XTRIM would), and check
that the default fails naming the stream and the offsets, and that ``false`` goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.pipeline.client import StreamBounds
from sluice.pipeline.dataloss import check_data_loss
from sluice.pipeline.ids import MIN_ID, StreamID
from sluice.pipeline.options import ReadOptions
from tests.pipeline.conftest import ServerHandle, produce


def bounds(first: str | None, last_generated: str, length: int = 1) -> StreamBounds:
    return StreamBounds(length=length if first else 0,
                        first=StreamID.parse(first) if first else None,
                        last=StreamID.parse(first) if first else None,
                        last_generated=StreamID.parse(last_generated), entries_added=None)


def test_rule() -> None:
    s = StreamID.parse("100-5")
    assert check_data_loss("o", s, bounds("100-5", "200-0")) is None  # checkpoint still there
    assert check_data_loss("o", s, bounds("50-0", "200-0")) is None  # older history kept
    message = check_data_loss("o", s, bounds("150-0", "200-0"))
    assert message is not None and "'o'" in message and "100-5" in message and "150-0" in message
    emptied = check_data_loss("o", s, bounds(None, "200-0"))
    assert emptied is not None and "200-0" in emptied
    assert check_data_loss("o", s, bounds(None, "100-5")) is None  # nothing added after it
    assert check_data_loss("o", MIN_ID, bounds("150-0", "200-0")) is None  # earliest
    assert check_data_loss("o", s, None) is None  # no such stream (yet)


def test_option_default_and_spelling() -> None:
    base = {"streams": "a"}
    assert ReadOptions.from_options(base).fail_on_data_loss is True
    assert ReadOptions.from_options({**base, "FAILONDATALOSS": "false"}).fail_on_data_loss \
        is False
    with pytest.raises(ValueError, match="failOnDataLoss"):
        ReadOptions.from_options({**base, "failOnDataLoss": "maybe"})


def _run(spark: Any, server: ServerHandle, stream: str, tmp: Path, **options: str) -> Any:
    reader = (spark.readStream.format("sluice").option("url", server.url)
              .option("streams", stream))
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (reader.load().writeStream.format("parquet").option("path", str(tmp / "out"))
             .option("checkpointLocation", str(tmp / "ckpt")).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    except Exception:  # noqa: BLE001 - a failed query raises here; q.exception() has it
        pass
    assert not query.isActive
    return query


@pytest.mark.spark
def test_trimmed_checkpoint_fails_by_default_and_is_skipped_on_request(
        spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path) -> None:
    first = produce(r, key, 100)
    q = _run(spark, server, key, tmp_path)
    assert q.exception() is None
    later = produce(r, key, 50, start_ms=2_000_000)
    # the checkpoint (first[-1]) and 20 unread entries go, as retention or XTRIM would do
    assert r.xtrim(key, minid=later[20], approximate=False) == 120
    q = _run(spark, server, key, tmp_path)
    error = str(q.exception())
    assert "DataLossError" in error or "checkpointed offset" in error
    assert f"'{key}'" in error and first[-1] in error and later[20] in error
    assert "failOnDataLoss=false" in error
    q = _run(spark, server, key, tmp_path, failOnDataLoss="false")
    assert q.exception() is None
    ids = {row.id for row in spark.read.parquet(str(tmp_path / "out")).collect()}
    assert ids == set(first) | set(later[20:])  # what was left was read, nothing twice
