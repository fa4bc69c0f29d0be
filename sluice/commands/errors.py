"""Every error reply Sluice sends, with Redis's exact code and text.

Handlers ``raise CommandError(TEXT)`` (or a subclass); dispatch turns it into a ``-`` reply and
counts it in INFO errorstats under its code (the first word). Tests import these constants
instead of retyping the strings.
"""

from __future__ import annotations

from sluice.protocol import ErrorReply


class CommandError(Exception):
    """An error reply. ``message`` is the whole text, code included: ``ERR syntax error``."""

    __slots__ = ("message",)

    def __init__(self, message: str | bytes) -> None:
        self.message = message.encode() if isinstance(message, str) else message
        super().__init__(self.message)

    @property
    def reply(self) -> ErrorReply:
        return ErrorReply(self.message)


# Generic
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_FLOAT = "ERR value is not a valid float"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NO_SUCH_KEY = "ERR no such key"
INCR_OVERFLOW = "ERR increment or decrement would overflow"
NOT_POSITIVE_TIMEOUT = "ERR timeout is negative"
TIMEOUT_NOT_FLOAT = "ERR timeout is not a float or out of range"
TIMEOUT_OUT_OF_RANGE = "ERR timeout is out of range"
INVALID_EXPIRE = "ERR invalid expire time in '%s' command"
DB_INDEX_OUT_OF_RANGE = "ERR DB index is out of range"
SAME_OBJECT = "ERR source and destination objects are the same"
STRING_TOO_LONG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
NOT_ALLOWED_IN_MULTI = "ERR %s inside MULTI is not allowed"
MULTI_NESTED = "ERR MULTI calls can not be nested"
EXEC_WITHOUT_MULTI = "ERR EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "ERR DISCARD without MULTI"
WATCH_IN_MULTI = "ERR WATCH inside MULTI is not allowed"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
AUTH_NOT_CONFIGURED = (
    "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?"
)
NOPROTO = "NOPROTO unsupported protocol version"
UNBLOCKED = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
MAX_CLIENTS = "ERR max number of clients reached"
SCRIPTING_UNAVAILABLE = "ERR scripting is not available in this version of Sluice yet"

# ACL (Redis 7.2+ wording, the newest documented; 7.0 said "this user has no permissions...").
# The bytes ones are formatted with user names, which are arbitrary bytes.
NOPERM_CMD = b"NOPERM User %s has no permissions to run the '%s' command"
NOPERM_KEY = b"NOPERM No permissions to access a key"
NOPERM_CHANNEL = b"NOPERM No permissions to access a channel"
NOPERM_EXEC = (
    "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
    "call. This command is no longer allowed for the following reason: %s"
)
NOPERM_EXEC_REASONS = {
    1: "no permission to execute the command or subcommand",
    2: "no permission to touch the specified keys",
    4: "no permission to access one of the channels used as arguments",
}
ACL_USERNAME_SPACES = "ERR Usernames can't contain spaces or null characters"
ACL_DEFAULT_UNDELETABLE = "ERR The 'default' user cannot be removed"
ACL_NO_FILE = (
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "Redis configuration file set) in order to store users in the Redis configuration."
)
ACL_SAVE_FAILED = (
    "ERR There was an error trying to save the ACLs. Please check the server logs for more "
    "information"
)
ACL_GENPASS_BITS = (
    "ERR ACL GENPASS argument must be the number of bits for the output password, a positive "
    "number up to 4096"
)
PROTECTED_COMMAND = (
    "ERR %s command not allowed. If the %s option is set to \"local\", you can run it from a "
    "local connection, otherwise you need to set this option in the configuration file, and "
    "then restart the server."
)

# persistence (commands/persistence.py), checked against redis-server 7.0.15
BUSYKEY = "BUSYKEY Target key name already exists."
DUMP_PAYLOAD_INVALID = "ERR DUMP payload version or checksum are wrong"
BAD_DATA_FORMAT = "ERR Bad data format"
INVALID_TTL = "ERR Invalid TTL value, must be >= 0"
INVALID_IDLETIME = "ERR Invalid IDLETIME value, must be >= 0"
INVALID_FREQ = "ERR Invalid FREQ value, must be >= 0 and <= 255"


# Keyspace, strings and transactions (checked against redis-server 7.0.15)
UNSUPPORTED_OPTION = "ERR Unsupported option %s"
EXPIRE_NX_CONFLICT = "ERR NX and XX, GT or LT options at the same time are not compatible"
EXPIRE_GT_LT_CONFLICT = "ERR GT and LT options at the same time are not compatible"
DECR_OVERFLOW = "ERR decrement would overflow"
OFFSET_OUT_OF_RANGE = "ERR offset is out of range"
INCR_NAN = "ERR increment would produce NaN or Infinity"
INVALID_CURSOR = "ERR invalid cursor"
UNKNOWN_TYPE_NAME = "ERR unknown type name '%s'"
INVALID_FIRST_DB = "ERR invalid first DB index"
INVALID_SECOND_DB = "ERR invalid second DB index"
LFU_NOT_SELECTED = (
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time to "
    "adjust."
)
LCS_NOT_STRINGS = "ERR The specified keys must contain string values"
LCS_LEN_AND_IDX = "ERR If you want both the length and indexes, please just use IDX."
LCS_TOO_BIG = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"


def unknown_command(argv: list[bytes]) -> CommandError:
    """``ERR unknown command 'x', with args beginning with: 'a' 'b' `` as Redis words it."""
    name = _shown(argv[0], 128)
    shown = "".join(f"'{_shown(a, 128)}' " for a in argv[1:])
    if len(shown) > 128:  # Redis caps the argument list it echoes back
        shown = shown[:128]
    return CommandError(f"ERR unknown command '{name}', with args beginning with: {shown}")


def unknown_subcommand(sub: bytes, parent: str) -> CommandError:
    return CommandError(
        f"ERR unknown subcommand '{_shown(sub, 128)}'. Try {parent.upper()} HELP."
    )


def wrong_arity(name: str) -> CommandError:
    return CommandError(f"ERR wrong number of arguments for '{name}' command")


def _shown(arg: bytes, limit: int) -> str:
    text = arg[:limit].decode("utf-8", "replace")
    # Redis sanitises the echoed text so the error stays one line.
    return text.replace("\r", " ").replace("\n", " ")
