"""Command-line tools: ``sluice-check-aof`` and ``sluice-check-rdb``."""
