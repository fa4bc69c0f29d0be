"""Helpers for testing applications against Sluice: the pytest plugin
(``sluice.testing.pytest_plugin``, loaded by pytest through the ``pytest11`` entry point)."""
