"""The wire between the Tcl suite's test server and its test clients, read from Python.

Redis's ``tests/test_helper.tcl`` runs as a *test server* that starts *test clients*
(``--client PORT``); a client connects back, says ``ready``, is sent ``run unit/X``, and
reports every test as a packet: a line with the payload's length, then the payload, a Tcl
list ``{status data elapsed}`` (``testing``, ``ok``, ``err``, ``skip``, ``ignore``,
``exception``, ``server-spawned``, ``done`` ...). The conformance runner plays the test
server itself, so each test's outcome arrives as it happens, named, with its error text, and
the test in progress is known when a unit has to be stopped.

Two Tcl channel habits shape the reader: a Tcl socket writes ``\\n`` as ``\\r\\n`` and the
reading side counts characters after translating line ends back (``-translation auto``), and
the channel is ``binary`` (one byte per character, hence latin-1).
"""

from __future__ import annotations

from collections.abc import Iterator

_SPACE = " \t\n\r\v\f"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_HEX = "0123456789abcdefABCDEF"


def _backslash(text: str, i: int) -> tuple[str, int]:
    """The substitution of the backslash sequence at ``text[i]`` and the index after it."""
    if i + 1 >= len(text):
        return "\\", i + 1
    c = text[i + 1]
    if c in _ESCAPES:
        return _ESCAPES[c], i + 2
    if c in "xuU":
        limit = {"x": 2, "u": 4, "U": 8}[c]
        j = i + 2
        while j < len(text) and j < i + 2 + limit and text[j] in _HEX:
            j += 1
        if j == i + 2:
            return c, i + 2
        return chr(int(text[i + 2:j], 16)), j
    if c in "01234567":
        j = i + 1
        while j < len(text) and j < i + 4 and text[j] in "01234567":
            j += 1
        return chr(int(text[i + 1:j], 8) & 0xFF), j
    if c == "\n":  # backslash-newline and the blanks after it: one space
        j = i + 2
        while j < len(text) and text[j] in " \t":
            j += 1
        return " ", j
    return c, i + 2


def split_list(text: str) -> list[str]:
    """The elements of a Tcl list, as ``lindex`` would return them."""
    out: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n:
            return out
        c = text[i]
        if c == "{":  # braced: literal up to the matching brace
            depth, j = 1, i + 1
            while j < n:
                ch = text[j]
                if ch == "\\":
                    j += 2
                    continue
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            else:
                raise ValueError("unmatched open brace in list")
            out.append(text[i + 1:j])
            i = j + 1
        else:  # quoted or bare: backslash substitution
            quoted = c == '"'
            j = i + 1 if quoted else i
            buf: list[str] = []
            while j < n:
                ch = text[j]
                if quoted and ch == '"':
                    break
                if not quoted and ch in _SPACE:
                    break
                if ch == "\\":
                    sub, j = _backslash(text, j)
                    buf.append(sub)
                else:
                    buf.append(ch)
                    j += 1
            if quoted:
                if j >= n:
                    raise ValueError("unmatched open quote in list")
                j += 1
            out.append("".join(buf))
            i = j
        if i < n and text[i] not in _SPACE:
            raise ValueError(f"list element followed by {text[i]!r} instead of space")


def quote(word: str) -> str:
    """``word`` as one Tcl list element (braced; only what Redis's test names need)."""
    if word and not any(ch in word for ch in _SPACE + '{}\\"[]$;'):
        return word
    if "{" in word or "}" in word or "\\" in word:
        return "".join("\\" + ch if ch in _SPACE + '{}\\"[]$;' else ch for ch in word)
    return "{" + word + "}"


def packet(*words: str) -> bytes:
    """A packet as the test server sends one: the length line, then the list."""
    payload = " ".join(quote(w) for w in words)
    return f"{len(payload)}\n{payload}".encode("latin-1")


class PacketReader:
    """Feed bytes from a test client, get ``(status, data, elapsed)`` packets back."""

    __slots__ = ("_text", "_cr")

    def __init__(self) -> None:
        self._text = ""
        self._cr = False  # a \r ended the last chunk: it may be half of \r\n

    def feed(self, data: bytes, eof: bool = False) -> Iterator[tuple[str, str, str]]:
        chunk = ("\r" if self._cr else "") + data.decode("latin-1")
        self._cr = chunk.endswith("\r") and not eof
        if self._cr:
            chunk = chunk[:-1]
        self._text += chunk.replace("\r\n", "\n").replace("\r", "\n")
        while True:
            nl = self._text.find("\n")
            if nl < 0:
                return
            head = self._text[:nl].strip()
            if not head.isdigit():
                raise ValueError(f"bad packet length line {head!r}")
            size = int(head)
            if len(self._text) - nl - 1 < size:
                return
            payload = self._text[nl + 1:nl + 1 + size]
            self._text = self._text[nl + 1 + size:]
            words = split_list(payload) + ["", "", ""]
            yield words[0], words[1], words[2]
