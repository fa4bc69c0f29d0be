"""RESP2/RESP3, sans-IO: the request reader, the reply encoder and the reply types."""

from .encoder import encode, encode_into, format_double
from .reader import ProtocolError, PureRequestParser, RequestReader, split_inline_args, string2ll
from .types import (
    NULL_ARRAY,
    OK,
    PONG,
    QUEUED,
    BigNumber,
    Bool,
    Double,
    ErrorReply,
    Map,
    Push,
    Raw,
    Replies,
    Reply,
    Set,
    SimpleString,
    Verbatim,
)

__all__ = [
    "NULL_ARRAY", "OK", "PONG", "QUEUED", "BigNumber", "Bool", "Double", "ErrorReply", "Map",
    "ProtocolError", "PureRequestParser", "Push", "Raw", "Replies", "Reply", "RequestReader", "Set",
    "SimpleString", "Verbatim", "encode", "encode_into", "format_double", "split_inline_args",
    "string2ll",
]
