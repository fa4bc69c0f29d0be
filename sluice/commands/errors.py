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


class ConfigError(Exception):
    """A bad configuration value or directive (the config file, the command line, CONFIG SET);
    the text is what Redis would say after ``ERR``. Here, below both layers, so that CONFIG
    handlers can catch what ``server/config.py`` raises."""


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
UNBLOCKED_ERROR = ErrorReply(UNBLOCKED.encode())  # CLIENT UNBLOCK ... ERROR's reply
MAX_CLIENTS = "ERR max number of clients reached"

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
# ACL check results (ACLCheckAllUserCommandPerm's), ordered as Redis orders them (the larger
# wins); ACL_OK means allowed.
ACL_OK, DENIED_CMD, DENIED_KEY, DENIED_AUTH, DENIED_CHANNEL = 0, 1, 2, 3, 4
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
INVALID_FIRST_DB = "ERR invalid first DB index"
INVALID_SECOND_DB = "ERR invalid second DB index"
LFU_NOT_SELECTED = (
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time to "
    "adjust."
)
LCS_NOT_STRINGS = "ERR The specified keys must contain string values"
# Redis 8.4 string additions (checked against redis-server 8.6.3)
DIGEST_LENGTH = "ERR must be exactly 16 hexadecimal characters"
DELEX_NOT_STRING = "ERR Key should be of string type if conditions are specified"
DELEX_CONDITION = "ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE"
MSETEX_NUMKEYS = "ERR invalid numkeys value"
MSETEX_PAIRS = "ERR wrong number of key-value pairs"
LCS_LEN_AND_IDX = "ERR If you want both the length and indexes, please just use IDX."
LCS_TOO_BIG = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
INT_OUT_OF_RANGE = "ERR value is out of range, value must between -2147483648 and 2147483647"


def unknown_command(argv: list[bytes]) -> CommandError:
    """``ERR unknown command 'x', with args beginning with: 'a' 'b' `` as Redis 8 words it:
    no argument list without arguments; arguments are echoed while fewer than 128 bytes are,
    the last one cut to what is left of the 128."""
    name = _shown(argv[0], 128)
    if len(argv) < 2:
        return CommandError(f"ERR unknown command '{name}'")
    shown = b""
    for arg in argv[1:]:
        if len(shown) >= 128:
            break
        shown += b"'" + arg[: 128 - len(shown)].split(b"\0", 1)[0] + b"' "
    return CommandError(f"ERR unknown command '{name}', with args beginning with: "
                        + _shown(shown, len(shown)))


def unknown_subcommand(sub: bytes, parent: str) -> CommandError:
    return CommandError(
        f"ERR unknown subcommand '{_shown(sub, 128)}'. Try {parent.upper()} HELP."
    )


def denial_message(res: int, user: bytes, cmd: str, obj: bytes | None) -> bytes:
    """``getAclErrorMessage`` with the ``NOPERM`` code, for a ``DENIED_*`` result of ``user``
    running ``cmd``; verbose (naming ``obj``, the key or channel) for ACL DRYRUN."""
    if res == DENIED_CMD:
        return NOPERM_CMD % (user, cmd.encode())
    if obj is not None:
        what = b"key" if res == DENIED_KEY else b"channel"
        return b"NOPERM User %s has no permissions to access the '%s' %s" % (user, obj, what)
    return NOPERM_KEY if res == DENIED_KEY else NOPERM_CHANNEL


def wrong_arity(name: str) -> CommandError:
    return CommandError(f"ERR wrong number of arguments for '{name}' command")


def pubsub_context(name: str) -> CommandError:
    """A RESP2 connection with subscriptions ran a command other than those it may run."""
    return CommandError(f"ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
                        "PING / QUIT / RESET are allowed in this context")


def _shown(arg: bytes, limit: int) -> str:
    text = arg[:limit].decode("utf-8", "replace")
    # Redis sanitises the echoed text so the error stays one line.
    return text.replace("\r", " ").replace("\n", " ")

# Introspection, administration and CLIENT (commands/introspection.py, admin.py,
# connection.py), checked against redis-server 7.0.15
INVALID_COMMAND = "ERR Invalid command specified"
NO_KEY_ARGUMENTS = "ERR The command has no key arguments"
INVALID_NUMBER_OF_ARGUMENTS = "ERR Invalid number of arguments specified for command"
INVALID_ARGUMENTS = "ERR Invalid arguments specified for command"
CONFIG_NO_FILE = "ERR The server is running without a config file"
SLOWLOG_COUNT = "ERR count should be greater than or equal to -1"
NO_SHUTDOWN = "ERR No shutdown in progress."
SHUTDOWN_FAILED = "ERR Errors trying to SHUTDOWN. Check logs."
LATENCY_NO_SAMPLES = "ERR No samples available for event '%s'"
DEBUG_PROTOCOL_TYPE = (
    "ERR Wrong protocol type name. Please use one of the following: "
    "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"
)
RESP2_UNSUPPORTED = "ERR RESP2 is not supported by this command"
DEBUG_NOT_ALLOWED = (
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server."
)
SCRIPT_FLUSH_MODE = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
FUNCTION_FLUSH_MODE = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
MONITOR_IN_MULTI = "ERR MONITOR isn't allowed for DENY BLOCKING client"
NO_SUCH_CLIENT = "ERR No such client"
CLIENT_ID_POSITIVE = "ERR client-id should be greater than 0"
MAXAGE_NOT_INTEGER = "ERR maxage is not an integer or out of range"
MAXAGE_POSITIVE = "ERR maxage should be greater than 0"
INVALID_CLIENT_ID = "ERR Invalid client ID"
UNKNOWN_CLIENT_TYPE = "ERR Unknown client type '%s'"
NO_SUCH_USER = "ERR No such user '%s'"
CLIENT_NAME_CHARS = "ERR Client names cannot contain spaces, newlines or special characters."
PAUSE_MODE = "ERR CLIENT PAUSE mode must be WRITE or ALL"
TIMEOUT_NOT_INTEGER = "ERR timeout is not an integer or out of range"
UNBLOCK_REASON = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
CACHING_NEEDS_TRACKING = (
    "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
    "OPTOUT mode enabled"
)


def subcommand_syntax(sub: bytes, parent: str) -> CommandError:
    """``ERR unknown subcommand or wrong number of arguments for 'x'. Try PARENT HELP.``"""
    return CommandError(
        f"ERR unknown subcommand or wrong number of arguments for '{_shown(sub, 128)}'. "
        f"Try {parent.upper()} HELP."
    )


# Consumer groups (commands/stream_groups.py, stream_readgroup.py, stream_claims.py), checked
# against redis-server 7.0.15; texts that changed since follow the current Redis source.
# The NOGROUP ones name a key and a group (arbitrary bytes), so they are bytes templates.
NOGROUP_XGROUP = b"NOGROUP No such consumer group '%s' for key name '%s'"
NOGROUP_KEY_OR_GROUP = b"NOGROUP No such key '%s' or consumer group '%s'"
NOGROUP_XREADGROUP = (
    b"NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option"
)
XGROUP_KEY_REQUIRED = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
    "to use the MKSTREAM option to create an empty stream automatically."
)
ENTRIESREAD_RANGE = "ERR value for ENTRIESREAD must be positive or -1"
XREADGROUP_MISSING_GROUP = "ERR Missing GROUP option for XREADGROUP"
XREADGROUP_DOLLAR = (
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history "
    "of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ "
    "ID would just return an empty result set."
)
# 7.4+ (7.0 parses "+" as an ID and answers "Invalid stream ID").
XREADGROUP_PLUS = (
    "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history "
    "of this consumer by specifying a proper ID, or use the > ID to get new messages. The + "
    "ID would just return an empty result set."
)
XCLAIM_MIN_IDLE = "ERR Invalid min-idle-time argument for XCLAIM"
XCLAIM_IDLE = "ERR Invalid IDLE option argument for XCLAIM"
XCLAIM_TIME = "ERR Invalid TIME option argument for XCLAIM"
XCLAIM_RETRYCOUNT = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
XCLAIM_UNKNOWN_OPTION = b"ERR Unrecognized XCLAIM option '%s'"
XAUTOCLAIM_MIN_IDLE = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
XAUTOCLAIM_COUNT = "ERR COUNT must be > 0"
# (XREADGROUP_UNBALANCED, TIMEOUT_NOT_INTEGER and the IDS block's NUMIDS_* / IDS_REQUIRED are
# shared with XREAD / XDELEX and defined with them.)


# Streams (commands/streams.py, stream_info.py, stream_common.py), checked against
# redis-server 7.0.15; the 8.x texts (IDMP, XDELEX, XCFGSET) follow Redis's own test suite
# (tests/unit/type/stream.tcl) and the redis.io docs, and are marked so.
STREAM_MAXLEN_NEGATIVE = "ERR The MAXLEN argument must be >= 0."
STREAM_LIMIT_NEGATIVE = "ERR The LIMIT argument must be >= 0."
STREAM_MAXLEN_AND_MINID = (
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
)
STREAM_LIMIT_WITHOUT_STRATEGY = (
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
)
STREAM_LIMIT_WITHOUT_APPROX = "ERR syntax error, LIMIT cannot be used without the special ~ option"
XTRIM_WITHOUT_STRATEGY = "ERR syntax error, XTRIM must be called with a trimming strategy"
STREAM_INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
# 8.6 IDMP / IDMPAUTO and XCFGSET (checked against redis-server 8.6.3)
IDMP_TWICE = "ERR syntax error, IDMP/IDMPAUTO specified multiple times"
IDMP_EXPLICIT_ID = "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"
IDMP_EMPTY_PID = "ERR syntax error, IDMP requires a non-empty producer ID"
IDMP_EMPTY_IID = "ERR syntax error, IDMP requires a non-empty idempotent ID"
IDMPAUTO_EMPTY_PID = "ERR syntax error, IDMPAUTO requires a non-empty producer ID"
XCFGSET_NO_PARAMETER = "ERR At least one parameter must be specified"
IDMP_DURATION_TWICE = "ERR IDMP-DURATION specified multiple times"
IDMP_MAXSIZE_TWICE = "ERR IDMP-MAXSIZE specified multiple times"
XIDMPRECORD_EMPTY_PID = "ERR producer ID must be non-empty"
XIDMPRECORD_EMPTY_IID = "ERR idempotent ID must be non-empty"
XIDMPRECORD_NO_ENTRY = "ERR No such message in stream"
XIDMPRECORD_OTHER_ENTRY = "ERR IID already exists for this producer with a different stream ID"
CLAIM_IDLE_NOT_INTEGER = "ERR min-idle-time is not an integer or out of range"
CLAIM_IDLE_NEGATIVE = "ERR min-idle-time must be a positive integer"
IDMP_DURATION_RANGE = "ERR IDMP-DURATION must be between 1 and 86400 seconds"
IDMP_MAXSIZE_RANGE = "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"
# 8.2 XDELEX / XACKDEL
NUMIDS_NOT_POSITIVE = "ERR Number of IDs must be a positive integer"
NUMIDS_MISMATCH = "ERR The `numids` parameter must match the number of arguments"
IDS_REQUIRED = "ERR IDS option is required"
# XSETID
ENTRIES_ADDED_NEGATIVE = "ERR entries_added must be positive"
XSETID_BELOW_GIVEN_MAXDELETED = (
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
)
# XREAD (the Unbalanced text is 7.2+'s; 7.0 said "Unbalanced XREAD list of streams: for each
# stream key an ID or '$' must be specified.")
XREAD_UNBALANCED = (
    "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be "
    "specified."
)
XREADGROUP_UNBALANCED = (
    "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be "
    "specified."
)
XREAD_GROUP_OPTION = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
XREAD_NOACK_OPTION = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
XREAD_CLAIM_OPTION = "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead."
XREAD_GT_ID = (
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    "<consumer> option."
)
# addReplySubcommandSyntaxError: the subcommand as typed, the command upper-cased (bytes).
SUBCOMMAND_SYNTAX = b"ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."


# Lists (checked against redis-server 7.0.15; LPOS_RANK_RANGE is 7.2+, 7.0 overflows instead)
INDEX_OUT_OF_RANGE = "ERR index out of range"
LIST_COUNT_NOT_POSITIVE = "ERR value is out of range, must be positive"
LMPOP_NUMKEYS = "ERR numkeys should be greater than 0"
LMPOP_COUNT = "ERR count should be greater than 0"
LPOS_RANK_ZERO = (
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "
    "negative to start from the end of the list"
)
LPOS_RANK_RANGE = (
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)
LPOS_COUNT_NEGATIVE = "ERR COUNT can't be negative"
LPOS_MAXLEN_NEGATIVE = "ERR MAXLEN can't be negative"


# Hashes (commands/hashes.py, hash_expire.py), checked against redis-server 8.6.3
HASH_NOT_INTEGER = "ERR hash value is not an integer"
HASH_NOT_FLOAT = "ERR hash value is not a float"
INCR_NAN_OR_INFINITY = "ERR value is NaN or Infinity"
VALUE_OUT_OF_RANGE = "ERR value is out of range"
LONG_OUT_OF_RANGE = (
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)
NOVALUES_ONLY_HSCAN = "ERR NOVALUES option can only be used in HSCAN"
HFE_NEGATIVE_TIME = "ERR invalid expire time, must be >= 0"
HFE_NUMFIELDS_GT0 = "ERR Parameter `numFields` should be greater than 0"
HFE_WRONG_ARGS = "ERR wrong number of arguments"
HFE_MULTIPLE_CONDITIONS = "ERR Multiple condition flags specified"
HFE_UNKNOWN_ARGUMENT = b"ERR unknown argument: %s"
HFE_FIELDS_TWICE = "ERR FIELDS keyword specified multiple times"
HFE_FIELDS_TOO_FEW = "ERR FIELDS requires at least numfields and one field argument"
HFE_MISSING_FIELDS = "ERR missing FIELDS argument"
HFE_FIELDS_MISSING = "ERR Mandatory argument FIELDS is missing or not at the right position"
HFE_NUMFIELDS_POSITIVE = "ERR Number of fields must be a positive integer"
HFE_NUMFIELDS_MISMATCH = "ERR The `numfields` parameter must match the number of arguments"
HFE_INVALID_NUMFIELDS = "ERR invalid number of fields"
HSETEX_ONE_EXPIRATION = "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"
HGETEX_ONE_EXPIRATION = "ERR Only one of EX, PX, EXAT, PXAT or PERSIST arguments can be specified"
HFE_MISSING_EXPIRE = "ERR missing expire time"
HSETEX_ONE_CONDITION = "ERR Only one of FXX or FNX arguments can be specified"
HFE_UNKNOWN = "ERR unknown argument"


# Streams past 8.6 (issue 23). No 8.8/8.10 server was available: the XNACK mode text is the
# one Redis's XNACK pull request (redis/redis#14797) shows; the MAXCOUNT text is the one its
# MAXCOUNT/MAXSIZE pull request's tests match (redis/redis#15282); the others follow them and
# are not confirmed against a real server.
XNACK_MODE = "ERR mode must be SILENT, FAIL, or FATAL"
XNACK_RETRYCOUNT = "ERR Invalid RETRYCOUNT option argument for XNACK"
MAXCOUNT_NOT_POSITIVE = "ERR MAXCOUNT must be a positive integer"
MAXSIZE_NOT_POSITIVE = "ERR MAXSIZE must be a positive integer"
MAXCOUNT_BELOW_COUNT = "ERR MAXCOUNT must be greater than or equal to COUNT"

# SLUICE.XPOLICY (Sluice's own command: our texts)
XPOLICY_MAX_DELIVERIES = "ERR MAXDELIVERIES must be a positive integer"
XPOLICY_MAXAGE = "ERR MAXAGE must be a positive integer (milliseconds)"
XPOLICY_SAME_KEY = "ERR the dead-letter stream must be another key than the stream"
XPOLICY_NO_STREAM = b"ERR no such stream '%s'"

# Sets and sorted sets
NUMKEYS_POSITIVE = "ERR numkeys should be greater than 0"
NUMKEYS_TOO_MANY = "ERR Number of keys can't be greater than number of args"
LIMIT_NEGATIVE = "ERR LIMIT can't be negative"
ZADD_NX_XX = "ERR XX and NX options at the same time are not compatible"
ZADD_GT_LT_NX = "ERR GT, LT, and/or NX options at the same time are not compatible"
ZADD_INCR_PAIRS = "ERR INCR option supports a single increment-element pair"
ZSCORE_NAN = "ERR resulting score is not a number (NaN)"
MIN_MAX_NOT_FLOAT = "ERR min or max is not a float"
MIN_MAX_NOT_LEX = "ERR min or max not valid string range item"
ZRANGE_LIMIT_RANK = (
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
)
ZRANGE_WITHSCORES_BYLEX = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
ZSETOP_NO_KEYS = "ERR at least 1 input key is needed for '%s' command"
WEIGHT_NOT_FLOAT = "ERR weight value is not a float"
COUNT_POSITIVE = "ERR count should be greater than 0"
RANGE_LONG = "ERR value is out of range, value must between %d and %d"
# Bitmaps (bitops.c, checked against redis-server 8.6.3)
BIT_OFFSET = "ERR bit offset is not an integer or out of range"
BIT_VALUE = "ERR bit is not an integer or out of range"
BITPOS_BIT = "ERR The bit argument must be 1 or 0."
BITOP_NOT_ONE_KEY = "ERR BITOP NOT must be called with a single source key."
BITOP_TWO_KEYS = "ERR BITOP %s must be called with at least two source keys."
BITFIELD_TYPE = (
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported "
    "but i64 is."
)
BITFIELD_OVERFLOW_TYPE = "ERR Invalid OVERFLOW type specified"
BITFIELD_RO_GET_ONLY = "ERR BITFIELD_RO only supports the GET subcommand"

# HyperLogLog (hyperloglog.c, checked against redis-server 8.6.3)
HLL_INVALID = "WRONGTYPE Key is not a valid HyperLogLog string value."
HLL_CORRUPT = "INVALIDOBJ Corrupted HLL object detected"
PFDEBUG_NO_KEY = "ERR The specified key does not exist"
PFDEBUG_NOT_SPARSE = "ERR HLL encoding is not sparse"
PFDEBUG_UNKNOWN = "ERR Unknown PFDEBUG subcommand '%s'"
PFDEBUG_ON_OFF = "ERR Argument must be ON or OFF"
PFSELFTEST_FAILED = "ERR TESTFAILED %s"

# GEO (geo.c, checked against redis-server 8.6.3)
GEO_INVALID_PAIR = "ERR invalid longitude,latitude pair %f,%f"
GEO_UNIT = "ERR unsupported unit provided. please use M, KM, FT, MI"
GEO_NEED_RADIUS = "ERR need numeric radius"
GEO_NEED_WIDTH = "ERR need numeric width"
GEO_NEED_HEIGHT = "ERR need numeric height"
GEO_NEGATIVE_RADIUS = "ERR radius cannot be negative"
GEO_NEGATIVE_SIZE = "ERR height or width cannot be negative"
GEO_BAD_MEMBER = "ERR could not decode requested zset member"
GEO_COUNT_POSITIVE = "ERR COUNT must be > 0"
GEO_STORE_WITH_OPTIONS = "ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
GEO_EXACTLY_ONE_FROM = "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %s"
GEO_EXACTLY_ONE_SHAPE = "ERR exactly one of BYRADIUS and BYBOX can be specified for %s"
GEO_ANY_WITHOUT_COUNT = "ERR the ANY argument requires COUNT argument"

# SORT (sort.c, checked against redis-server 8.6.3)
SORT_BY_ACL = "ERR BY option of SORT denied due to insufficient ACL permissions."
SORT_GET_ACL = "ERR GET option of SORT denied due to insufficient ACL permissions."
SORT_NOT_DOUBLE = "ERR One or more scores can't be converted into double"

# Scripting (eval.c, functions.c, script.c of redis-server 8.6.3; commands/scripting.py and
# sluice/scripting/)
NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."
NUMKEYS_TOO_BIG = "ERR Number of keys can't be greater than number of args"
NUMKEYS_NEGATIVE = "ERR Number of keys can't be negative"
FCALL_NUMKEYS = "ERR Bad number of keys provided"
RO_WITH_WRITE_FLAG = "ERR Can not execute a script with write flag using *_ro command."
FUNCTION_NOT_FOUND = "ERR Function not found"
SCRIPT_MISCONF = (
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
    "to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts."
)
BUSY_EVAL = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
BUSY_FUNCTION = (
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)
NOTBUSY = "NOTBUSY No scripts in execution right now."
UNKILLABLE = (
    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can "
    "either wait the script termination or kill the server in a hard way using the SHUTDOWN "
    "NOSAVE command."
)
SCRIPT_DEBUG_TLS = "ERR SCRIPT DEBUG is not supported over TLS by Sluice"  # our own wording
SCRIPT_DEBUG_FORK = "ERR Fork() failed: can't run EVAL in debugging mode"
SCRIPT_DEBUG_EVALSHA = "ERR Please use EVAL instead of EVALSHA for debugging"
SCRIPT_DEBUG_MODE = "ERR Use SCRIPT DEBUG YES/SYNC/NO"
FUNCTION_CODE_MISSING = "ERR Function code is missing"
FUNCTION_UNKNOWN_OPTION = "ERR Unknown option given: %s"
FUNCTION_LIST_NO_NAME = "ERR library name argument was not given"
FUNCTION_LIST_UNKNOWN = "ERR Unknown argument %s"
RESTORE_POLICY = (
    "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
)
# What redis.call refuses (scriptCall); the script sees them as error replies.
SCRIPT_UNKNOWN_COMMAND = b"Unknown Redis command called from script"
SCRIPT_WRONG_ARITY = b"ERR Wrong number of args calling Redis command from script"
SCRIPT_NOSCRIPT = b"ERR This Redis command is not allowed from script"
SCRIPT_READ_ONLY = b"ERR Write commands are not allowed from read-only scripts."
SCRIPT_ACL_FAILURE = b"ERR ACL failure in script: "

# Memory, eviction, client-side caching (issue 20)
OOM = "OOM command not allowed when used memory > 'maxmemory'."
LRU_NOT_SELECTED = (
    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
    "switching between policies at runtime LRU and LFU data will take some time to adjust."
)
TRACKING_REDIRECT_TWICE = "ERR A client can only redirect to a single other client"
TRACKING_NO_SUCH_CLIENT = "ERR The client ID you want redirect to does not exist"
TRACKING_PREFIX_NEEDS_BCAST = "ERR PREFIX option requires BCAST mode to be enabled"
TRACKING_SWITCH_BCAST = (
    "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
    "then re-enabling it with a different mode."
)
TRACKING_OPT_BCAST = "ERR OPTIN and OPTOUT are not compatible with BCAST"
TRACKING_OPTIN_AND_OPTOUT = "ERR You can't specify both OPTIN mode and OPTOUT mode"
TRACKING_SWITCH_OPT = (
    "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
    "then re-enabling it with a different mode."
)
TRACKING_PREFIX_OVERLAP = (
    b"ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client "
    b"must not overlap."
)
TRACKING_PREFIX_OVERLAP_ARGS = (
    b"ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single "
    b"client must not overlap."
)
CACHING_YES_NOT_OPTIN = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
CACHING_NO_NOT_OPTOUT = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."

# WAIT / WAITAOF and min-replicas-to-write (replication.c, server.c's shared.noreplicaserr).
WAITAOF_APPENDONLY_OFF = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."
WAITAOF_NUMLOCAL_RANGE = "ERR value is out of range, value must between 0 and 1"
NOREPLICAS = "NOREPLICAS Not enough good replicas to write."

# CLUSTER, READONLY, READWRITE, ASKING, TRIMSLOTS, MIGRATE (cluster.c, cluster_asm.c of
# redis-server 8.6.3; commands/cluster.py), checked against redis-server 8.6.3
CLUSTER_DISABLED = "ERR This instance has cluster support disabled"
MIGRATE_KEYS_NEED_EMPTY_KEY = (
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
)
# The two IOERR texts keep Redis's own wording ("the client" is the target, in Redis too).
MIGRATE_IOERR_CONNECT = "IOERR error or timeout connecting to the client"
MIGRATE_IOERR = "IOERR error or timeout %s to target instance"  # writing | reading
MIGRATE_TARGET_ERROR = b"ERR Target instance replied with error: %s"

# MODULE (module.c of redis-server 8.6.3; commands/admin.py)
MODULE_LOAD_FAILED = "ERR Error loading the extension. Please check the server logs."
MODULE_UNLOAD_FAILED = "ERR Error unloading module: %s"
MODULE_NO_SUCH_MODULE = "no such module with that name"

# HOTKEYS (Redis 8.6's hotkeysCommand)
HOTKEYS_IN_PROGRESS = "ERR hotkey tracking session already in progress"
HOTKEYS_STOP_FIRST = "ERR hotkey tracking session in progress, stop tracking first"
HOTKEYS_METRICS_REQUIRED = "ERR METRICS parameter is required"
HOTKEYS_METRICS_COUNT = "ERR METRICS count must be > 0 and <= 2"
HOTKEYS_METRIC_TWICE = "ERR METRICS %s defined more than once!"
HOTKEYS_METRICS_MISMATCH = "ERR METRICS count does not match number of metric types provided"
HOTKEYS_NO_VALID_METRICS = "ERR METRICS no valid metrics passed. Supported: CPU|NET"
HOTKEYS_COUNT_RANGE = "ERR COUNT must be between 1 and 64"
HOTKEYS_DURATION_RANGE = "ERR DURATION must be between 1 and 1000000"
HOTKEYS_SAMPLE_RANGE = "ERR SAMPLE ratio must be positive"
HOTKEYS_SLOTS_STANDALONE = "ERR SLOTS parameter cannot be used in non-cluster mode"
