"""The sizes HOTKEYS' NET metric counts (``server/hotkeys.reply_size``): the encoder's."""

from __future__ import annotations

import pytest

from sluice.protocol import OK, Map, SimpleString, Verbatim, encode
from sluice.server.hotkeys import reply_size


@pytest.mark.parametrize("reply", [
    OK, SimpleString(b"QUEUED"), b"", b"x", b"x" * 9, b"x" * 10, b"x" * 99, b"x" * 100,
    b"x" * 12345, 0, -12, None, [b"a", 1], Map({b"k": b"v"}), Verbatim(b"txt"),
])
@pytest.mark.parametrize("resp3", [False, True])
def test_reply_size_is_the_encoded_length(reply: object, resp3: bool) -> None:
    assert reply_size(reply, resp3) == len(encode(reply, resp3))  # type: ignore[arg-type]
