"""Large requests cost the reader linear work: no copy of the whole partial request per chunk.

A request larger than the reader's shadow threshold is parsed by the pure parser; each chunk
that arrives used to copy the whole partial request (to see whether hiredis could take it
back) before looking at its size, so a 64 MB SET took seconds (quadratic) where Redis takes
a fraction of one.
"""

from __future__ import annotations

from typing import Any

import pytest

from sluice.protocol import PureRequestParser, RequestReader


def encode(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def test_large_request_is_not_copied_once_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, copied = 0, 0
    original = PureRequestParser.partial_multibulk

    def counting(self: PureRequestParser, *args: Any) -> bytes | None:
        nonlocal calls, copied
        raw = original(self, *args)
        calls += 1
        copied += len(raw or b"")
        return raw

    monkeypatch.setattr(PureRequestParser, "partial_multibulk", counting)
    value = bytes(range(256)) * (16 * 1024)  # 4 MB
    request = encode(b"SET", b"k", value) + encode(b"GET", b"k")
    reader = RequestReader()
    got = []
    for at in range(0, len(request), 65536):  # as asyncio hands it over
        reader.feed(request[at : at + 65536])
        while batch := reader.take():
            got.extend(batch)
    assert got == [[b"SET", b"k", value], [b"GET", b"k"]]
    assert calls > 10  # the path under test ran for the chunks of the big request
    assert copied <= 128 * 1024, f"{copied} bytes copied for a {len(value)}-byte request"
