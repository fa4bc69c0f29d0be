"""``SluiceDataSource``: the entry point Spark sees (short name ``sluice``).

Register once per session, then use it for batch and streaming reads and writes::

    from sluice.pipeline import SluiceDataSource
    spark.dataSource.register(SluiceDataSource)
    df = spark.read.format("sluice").option("url", url).option("streams", "a,b").load()

This class only parses options (case-insensitively, see :mod:`sluice.pipeline.options`) and
hands them to the reader and writer classes; it opens no connection. Bad options fail here, on
the driver, with the option named in the message.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from sluice.pipeline.options import ReadOptions, WriteOptions
from sluice.pipeline.reader import SluiceBatchReader
from sluice.pipeline.schema import fixed_schema
from sluice.pipeline.stream_reader import SluiceStreamReader
from sluice.pipeline.writer import SluiceBatchWriter, SluiceStreamWriter


class SluiceDataSource(DataSource):
    """Redis/Sluice streams as a Spark data source (batch, streaming, sink)."""

    @classmethod
    def name(cls) -> str:
        return "sluice"

    def schema(self) -> StructType:
        return fixed_schema()

    def reader(self, schema: StructType) -> SluiceBatchReader:
        return SluiceBatchReader(ReadOptions.from_options(self.options), schema)

    def streamReader(self, schema: StructType) -> SluiceStreamReader:
        return SluiceStreamReader(ReadOptions.from_options(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> SluiceBatchWriter:
        if overwrite:
            raise ValueError("the sluice sink only appends: use mode('append')")
        return SluiceBatchWriter(WriteOptions.from_options(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> SluiceStreamWriter:
        return SluiceStreamWriter(WriteOptions.from_options(self.options))
