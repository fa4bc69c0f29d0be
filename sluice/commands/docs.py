"""COMMAND DOCS ``arguments``, generated from each command's ``syntax`` string.

Every table row carries its argument syntax as the Redis documentation prints it, e.g.
``key [NOMKSTREAM] [<MAXLEN | MINID> [= | ~] threshold [LIMIT count]] <* | id> field value
[field value ...]``. ``parse_syntax`` turns that text into the nested argument records Redis 7
reports in ``COMMAND DOCS`` (and from which redis-cli builds its typing hints):

* ``[ ... ]`` is optional, ``< ... >`` a required group, ``|`` separates alternatives (a group
  with alternatives is a ``oneof``, a group with several arguments a ``block``);
* ``x [x ...]`` (any sequence followed by an optional repetition of itself) is one argument
  with the ``multiple`` flag; when the repeated part starts with a keyword
  (``GET pattern [GET pattern ...]``) the argument also gets ``multiple_token``;
* an upper-case word (or a symbol such as ``=``, ``~``, ``*``, ``$``, ``""``) is a token: alone
  it is a ``pure-token``; followed by one value it becomes that value's ``token``; followed by
  several values it becomes the token of a block holding them (``LIMIT offset count``);
* the documentation writes a repeatable ``oneof`` by repeating its alternatives after the last
  one (``<a | b [a | b ...]>``, as in CLIENT KILL); that is folded back into one ``oneof``
  with ``multiple``.

The documented syntax does not say which values are integers, keys or patterns; types are
guessed from the value's name (``count`` -> integer, ``pattern`` -> pattern, key names ->
key with the index of the key spec they belong to). Names of groups are derived from their
members. Both only matter to tools that generate code from COMMAND DOCS; redis-cli displays
names and tokens only, and those come straight from the syntax.

Mirrors the argument records of Redis's ``src/commands/*.json`` and the reply shape of
``addReplyCommandArgList`` (server.c). Pure code: no server state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Union

from sluice.protocol import Map, Set, SimpleString

_TOKEN_RE = re.compile(r"\.\.\.|[\[\]<>|]|[^\s\[\]<>|]+")
_KEYWORD_RE = re.compile(r"^[A-Z][A-Z0-9_\-]*$")
_SYMBOL_NAMES = {"=": "equal", "~": "approximately", "*": "auto_id", "$": "new_id",
                 '""': "empty_string", "+": "plus", "-": "minus", ">": "new_entries"}
_KEY_NAMES = frozenset(("key", "newkey", "destination", "source", "destkey", "srckey",
                        "sourcekey", "keys"))
_INTEGER_NAMES = frozenset((
    "count", "numkeys", "milliseconds", "seconds", "db", "index", "offset", "client-id",
    "numreplicas", "limit", "len", "num-matches", "rank", "cursor", "port", "destination-db",
    "start", "stop", "end", "increment", "decrement", "replicationid", "maxlen", "numerator",
    "entries-read", "entries-added", "min-idle-time", "ms", "unix-time-milliseconds",
    "unix-time-seconds", "numfields",
    "retrycount", "maxage", "id-or-count", "bit", "value-bit", "numsamples", "position",
    "numlocal",
    "k", "ratio", "slot",
))
_DOUBLE_NAMES = frozenset(("score", "longitude", "latitude", "radius", "width", "height",
                           "weight", "min", "max"))


class SyntaxParseError(ValueError):
    """The syntax string is not well formed (unbalanced brackets, stray ``|``)."""


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument record of COMMAND DOCS."""

    name: str
    type: str  # string integer double key pattern unix-time pure-token oneof block
    token: str | None = None
    optional: bool = False
    multiple: bool = False
    multiple_token: bool = False
    args: tuple[Arg, ...] = ()
    key_spec_index: int = -1

    def display(self) -> str:
        """The hint text redis-cli builds from this record (used by tests and HELP)."""
        if self.type == "oneof":
            body = "|".join(a.display() for a in self.args)
        elif self.type == "block":
            body = " ".join(a.display() for a in self.args)
        elif self.type == "pure-token":
            body = ""
        else:
            body = self.name
        token = self.token or ""
        if token and self.type != "pure-token":
            token += " "
        text = token + body
        if self.multiple:
            text += " [" + (token if self.multiple_token else "") + body + " ...]"
        return f"[{text}]" if self.optional else text


# -- the syntax tree ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Word:
    text: str


@dataclass(frozen=True, slots=True)
class _Group:
    optional: bool
    alts: tuple[tuple[_Node, ...], ...]
    multiple: bool = False


@dataclass(frozen=True, slots=True)
class _Ellipsis:
    pass


@dataclass(frozen=True, slots=True)
class _Repeat:
    body: tuple[_Node, ...]
    optional: bool = False


_Node = Union[_Word, _Group, _Ellipsis, _Repeat]  # noqa: UP007 - a runtime alias
_ELLIPSIS = _Ellipsis()


def _is_token(node: _Node) -> bool:
    if not isinstance(node, _Word):
        return False
    text = node.text
    return bool(_KEYWORD_RE.match(text)) or text in _SYMBOL_NAMES


class _Parser:
    __slots__ = ("toks", "pos")

    def __init__(self, text: str) -> None:
        self.toks = _TOKEN_RE.findall(text)
        self.pos = 0

    def parse(self) -> tuple[_Node, ...]:
        seq = self.seq()
        if self.pos != len(self.toks):
            raise SyntaxParseError(f"unexpected {self.toks[self.pos]!r}")
        return seq

    def seq(self) -> tuple[_Node, ...]:
        out: list[_Node] = []
        toks = self.toks
        while self.pos < len(toks):
            tok = toks[self.pos]
            if tok in ("]", ">", "|"):
                break
            self.pos += 1
            if tok == "[":
                out.append(self.group(optional=True, close="]"))
            elif tok == "<":
                out.append(self.group(optional=False, close=">"))
            elif tok == "...":
                out.append(_ELLIPSIS)
            else:
                out.append(_Word(tok))
        return tuple(out)

    def group(self, optional: bool, close: str) -> _Group:
        alts = [self.seq()]
        while self.pos < len(self.toks) and self.toks[self.pos] == "|":
            self.pos += 1
            alts.append(self.seq())
        if self.pos >= len(self.toks) or self.toks[self.pos] != close:
            raise SyntaxParseError(f"missing {close!r}")
        self.pos += 1
        return _fold_repeated_oneof(_Group(optional, tuple(alts)))


def _fold_repeated_oneof(group: _Group) -> _Group:
    """``<a | b [a | b ...]>`` -> a oneof of a, b with the multiple flag."""
    if len(group.alts) < 2 or not group.alts[-1]:
        return group
    last = group.alts[-1][-1]
    if not (isinstance(last, _Group) and last.optional and len(last.alts) == len(group.alts)):
        return group
    rep_alts = list(last.alts)
    if not rep_alts[-1] or rep_alts[-1][-1] != _ELLIPSIS:
        return group
    rep_alts[-1] = rep_alts[-1][:-1]
    alts = list(group.alts)
    alts[-1] = alts[-1][:-1]
    if tuple(rep_alts) != tuple(alts):
        return group
    return _Group(group.optional, tuple(alts), multiple=True)


def _collapse_repeats(seq: tuple[_Node, ...]) -> list[_Node]:
    """Fold ``x y [x y ...]`` into a ``_Repeat`` of ``x y``."""
    out: list[_Node] = []
    for node in seq:
        if (isinstance(node, _Group) and node.optional and len(node.alts) == 1
                and node.alts[0] and node.alts[0][-1] == _ELLIPSIS):
            body = node.alts[0][:-1]
            k = len(body)
            if k and len(out) >= k and tuple(out[-k:]) == body:
                del out[-k:]
                out.append(_Repeat(body))
            else:  # ``[x ...]`` with no leading x: zero or more
                out.append(_Repeat(body, optional=True))
            continue
        out.append(node)
    return out


# -- from the tree to argument records ---------------------------------------------------------


class _Builder:
    """Turns the syntax tree into ``Arg`` records; numbers key arguments as it goes."""

    __slots__ = ("key_specs", "keys_seen", "blocking")

    def __init__(self, key_specs: int, blocking: bool) -> None:
        self.key_specs = key_specs
        self.keys_seen = 0
        self.blocking = blocking

    def seq(self, nodes: tuple[_Node, ...]) -> list[Arg]:
        items = _collapse_repeats(nodes)
        out: list[Arg] = []
        i = 0
        while i < len(items):
            node = items[i]
            i += 1
            if _is_token(node):
                # A keyword owns the values that follow it, up to the next keyword or option.
                owned: list[_Node] = []
                while i < len(items) and self._is_value(items[i]):
                    owned.append(items[i])
                    i += 1
                out.append(self._tokened(node.text, owned))  # type: ignore[union-attr]
            else:
                out.append(self.node(node))
        return out

    @staticmethod
    def _is_value(node: _Node) -> bool:
        if isinstance(node, _Word):
            return not _is_token(node)
        if isinstance(node, _Repeat):
            return not node.optional and not _is_token(node.body[0])
        if isinstance(node, _Group):
            return not node.optional
        return False

    def _tokened(self, token: str, owned: list[_Node]) -> Arg:
        if not owned:
            return Arg(_token_name(token), "pure-token", token=token)
        args = [self.node(n) for n in owned]
        if len(args) == 1 and args[0].token is None:
            return replace(args[0], token=token)
        return Arg(_token_name(token), "block", token=token, args=tuple(args))

    def node(self, node: _Node) -> Arg:
        if isinstance(node, _Word):
            if _is_token(node):
                return Arg(_token_name(node.text), "pure-token", token=node.text)
            return self.value(node.text)
        if isinstance(node, _Repeat):
            inner = self.seq(node.body)
            if len(inner) == 1:
                arg = inner[0]
                return replace(arg, multiple=True, optional=node.optional or arg.optional,
                               multiple_token=arg.token is not None and _is_token(node.body[0])
                               and arg.type != "pure-token")
            return Arg(_joined(inner), "block", args=tuple(inner), multiple=True,
                       optional=node.optional)
        if isinstance(node, _Group):
            return self.group(node)
        raise SyntaxParseError("'...' without anything to repeat")

    def group(self, group: _Group) -> Arg:
        choices: list[Arg] = []
        for alt in group.alts:
            args = self.seq(alt)
            if not args:
                raise SyntaxParseError("empty alternative")
            choices.append(args[0] if len(args) == 1 else
                           Arg(_joined(args), "block", args=tuple(args)))
        if len(choices) == 1:
            arg = choices[0]
            if group.optional:
                arg = replace(arg, optional=True)
            return replace(arg, multiple=True) if group.multiple else arg
        return Arg("_".join(a.name for a in choices), "oneof", args=tuple(choices), optional=group.optional,
                   multiple=group.multiple)

    def value(self, name: str) -> Arg:
        lname = name.lower()
        if self.key_specs and (lname in _KEY_NAMES or (lname.endswith("key") and "-" not in lname)):
            index = min(self.keys_seen, self.key_specs - 1)
            self.keys_seen += 1
            return Arg(name, "key", key_spec_index=index)
        if "pattern" in lname:
            kind = "pattern"
        elif lname.startswith("unix-time"):
            kind = "unix-time"
        elif lname == "timeout":
            kind = "double" if self.blocking else "integer"
        elif lname in _DOUBLE_NAMES:
            kind = "double"
        elif lname in _INTEGER_NAMES:
            kind = "integer"
        else:
            kind = "string"
        return Arg(name, kind)


def _token_name(token: str) -> str:
    return _SYMBOL_NAMES.get(token) or token.lower()


def _joined(args: list[Arg]) -> str:
    """A group's name from its members: ``field_value``, ``on_off_skip``, ``count_block``."""
    if len(args) <= 2 or all(a.type == "pure-token" for a in args):
        return "_".join(a.name for a in args)
    return args[0].name + "_block"


def parse_syntax(syntax: str, key_specs: int = 0, blocking: bool = False) -> tuple[Arg, ...]:
    """The argument records for ``syntax``; ``key_specs`` is how many key specs the command
    has (key arguments are numbered against them), ``blocking`` types a ``timeout`` as a
    double (blocking commands take fractional seconds)."""
    if not syntax.strip():
        return ()
    tree = _Parser(syntax).parse()
    return tuple(_Builder(key_specs, blocking).seq(tree))


def display(args: tuple[Arg, ...]) -> str:
    """The whole hint line redis-cli shows for these arguments."""
    return " ".join(a.display() for a in args)


# -- replies ----------------------------------------------------------------------------------

_FLAG_REPLIES = {name: SimpleString(name.encode())
                 for name in ("optional", "multiple", "multiple_token")}


def arg_reply(arg: Arg) -> Map:
    """One argument as COMMAND DOCS sends it (fields in Redis's order)."""
    out = Map()
    out[b"name"] = arg.name.encode()
    out[b"type"] = arg.type.encode()
    if arg.key_spec_index >= 0:
        out[b"key_spec_index"] = arg.key_spec_index
    if arg.token is not None:
        out[b"token"] = arg.token.encode()
    flags = [name for name, on in (("optional", arg.optional), ("multiple", arg.multiple),
                                   ("multiple_token", arg.multiple_token)) if on]
    if flags:
        out[b"flags"] = Set(_FLAG_REPLIES[f] for f in flags)
    if arg.type in ("oneof", "block"):
        out[b"arguments"] = [arg_reply(a) for a in arg.args]
    return out
