"""Bytes other Redis releases write: real DUMP payloads and files from redis-server 7.0.15 and
8.6.3, and the opcodes only newer servers write (SLOT_INFO, KEY_META, module data).

The hex fixtures were produced by the servers named (``DUMP`` / ``SAVE``), so these tests pin
the formats without needing a redis-server at test time.
"""

from __future__ import annotations

import struct

import pytest

from sluice.storage import rdb
from sluice.storage.keyspace import Keyspace
from sluice.storage.rdb_codec import RdbError, RdbUnsupported, crc64, enc_len, enc_string

pytest.importorskip("sluice.storage.rdb_stream")

# redis-server 7.0.15: XADD s 1-1 f v; XADD s 2-0 f w g x; XADD s 3-0 f z; XDEL s 2-0;
# XGROUP CREATE s g 0; XREADGROUP GROUP g alice COUNT 1 STREAMS s >;
# XGROUP CREATECONSUMER s g bob; DUMP s  (type 19, version 10)
STREAM_7_0 = bytes.fromhex(
    "1301100000000000000001000000000000000140404000000018000201010101018166020001020100010001"
    "817602040101010101dfff020201816602817702816702817802080102010201dfff02817a020401ff020300"
    "0101020003010167010181ffffffffffffffff010000000000000001000000000000000163235a03a2010000"
    "010205616c69636563235a03a2010000010000000000000001000000000000000103626f6264235a03a20100"
    "00000a0096e4f31728de4568"
)

# redis-server 8.6.3: the same up to 2-0 (no 3-0), then XCFGSET s IDMP-DURATION 500
# IDMP-MAXSIZE 50; XADD s IDMP p1 i1 * f v; XADD s IDMP p1 i2 * f v2; XADD s IDMP p0 i1 * f v3;
# XADD s IDMP p1 i1 * f v (a duplicate); DUMP s  (type 26, version 13)
STREAM_8_6 = bytes.fromhex(
    "1a011000000000000000010000000000000001c3405840710771000000220004014000078166020001020100"
    "200102817602801303dfff020240180981770281670281780208202109f4e2235a03a201000009201e602a20"
    "1300e3e002130382763203e00514040001827633201300ff0481000001a2035a23e4010101020005010167010"
    "181ffffffffffffffff0100000000000000010000000000000001e3235a03a2010000010205616c696365e323"
    "5a03a2010000e3235a03a2010000010000000000000001000000000000000103626f62e3235a03a2010000ff"
    "ffffffffffffff0041f432020270300102693181000001a2035a23e40102703102026931810000"
    "01a2035a23e30002693281000001a2035a23e40003010d00e0457ad910633e17"
)
STREAM_8_6_IDS = [(1795352568803 << 64), (1795352568804 << 64), (1795352568804 << 64) | 1]

# redis-server 8.6.3: HSET h a 1; HPEXPIRE h 100000 FIELDS 1 a; DUMP h  (type 25)
HASH_FIELD_TTL_8_6 = bytes.fromhex(
    "1984aa5b03a2010000161600000003008161020101f484aa5b03a201000009ff0d0018681cbedf84e83b"
)
# redis-server 8.6.3: VADD vs VALUES 2 1 2 el1; DUMP vs  (a module value: type 7)
VECTOR_SET_8_6 = bytes.fromhex(
    "0781bde72da2bb1eb4000202020102500102000503656c3105023f7f0206020102800100000002000220020002"
    "813f64f92e400f1bbd000d007c5812abff450cea"
)
# redis-server 8.6.3: SADD set m; DUMP set  (type 20)
SET_8_6 = bytes.fromhex("140a0a0000000100816d02ff0d00dfa671f04259886a")

# redis-server 7.0.15: SET a 1; RPUSH l x y; SET t v; PEXPIREAT t 4102444800000; SELECT 2;
# SET z db2; SAVE  (version 10)
RDB_7_0 = bytes.fromhex(
    "524544495330303130fa0972656469732d76657206372e302e3135fa0a72656469732d62697473c040fa0563"
    "74696d65c242e9026bfa08757365642d6d656dc228381000fa08616f662d62617365c000fe00fb0301000161"
    "c00112016c01020d0d0000000200817802817902fffc00d8c32cbb0300000001740176fe02fb010000017a03"
    "646232ff3aff11f7863c449f"
)

# redis-server 8.6.3 with cluster-enabled yes and every slot: SET a 1; SET b 2 PX 100000;
# RPUSH l x y; SAVE. A cluster-asm-task AUX field, and SLOT_INFO before each slot's keys.
CLUSTER_RDB_8_6 = bytes.fromhex(
    "524544495330303133fa0972656469732d76657205382e362e33fa0a72656469732d62697473c040fa056374"
    "696d65c2a3e7026bfa08757365642d6d656dc2d8ad2400fa08616f662d62617365c000fa10636c7573746572"
    "2d61736d2d7461736b00fe00fb0301f44ce40101fc975e5a03a2010000000162c002f46d2a010012016c0102"
    "0d0d0000000200817802817902fff47c870100000161c001ff076ad68a6a6263a4"
)


def _payload(body: bytes, version: int = 13, checksum: bool = True) -> bytes:
    body += struct.pack("<H", version)
    return body + struct.pack("<Q", crc64(body) if checksum else 0)


def _file(body: bytes, version: int = 13) -> bytes:
    data = b"REDIS%04d" % version + body + b"\xff"
    return data + struct.pack("<Q", crc64(data))


_KEYMETA_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def _class_spec(name: str, version: int, flags: int) -> bytes:
    """A key-metadata class spec: 4 name chars of 6 bits, 5 version bits, 3 flag bits."""
    v = 0
    for ch in name:
        v = (v << 6) | _KEYMETA_CHARS.index(ch)
    return struct.pack("<I", (v << 8) | (version << 3) | flags)


def _key_meta(*classes: tuple[str, int]) -> bytes:
    """A KEY_META block; each class's value is a module-serialised int, string and double."""
    out = bytearray(bytes((rdb.OP_KEY_META,)) + enc_len(len(classes)))
    for name, flags in classes:
        out += _class_spec(name, 2, flags)
        out += enc_len(1) + enc_len(42)  # signed int
        out += enc_len(5) + enc_string(b"meta")  # string
        out += enc_len(4) + struct.pack("<d", 1.5)  # double
        out += enc_len(3) + struct.pack("<f", 0.5)  # float
        out += enc_len(0)  # EOF
    return bytes(out)


# -- streams ------------------------------------------------------------------------------------


def test_redis_7_0_stream_payload_loads() -> None:
    s = rdb.load_payload(STREAM_7_0)
    assert [sid for sid, _ in s.range(0, (1 << 128) - 1)] == [(1 << 64) | 1, 3 << 64]
    assert (s.length, s.last_id, s.max_deleted_entry_id, s.entries_added) == (
        2,
        3 << 64,
        2 << 64,
        3,
    )
    g = s.groups[b"g"]
    assert list(g.pel) == [(1 << 64) | 1] and g.pel[(1 << 64) | 1].consumer.name == b"alice"
    # Type 19 has no active time: Redis takes the seen time as the best estimate.
    assert all(c.active_time == c.seen_time for c in g.consumers.values())
    assert (s.idmp.duration, s.idmp.maxsize, s.idmp.producers) == (100, 100, {})


def _legacy_stream_payload() -> bytes:
    """A stream in Redis 6.2's layout (type 15: no first id, max deleted id or entries added,
    no group read counters), built here from XADD 1-0 .. 6-0, XDEL 3-0, XTRIM MAXLEN 2 and
    groups g1 at 5-0 and g2 at 0-0, with empty PELs; a zero checksum (not checked)."""
    from sluice.storage.rdb_stream import _id_len, _node_listpack
    from sluice.storage.stream import Stream

    s = Stream()
    for ms in range(1, 7):
        s.append((ms << 64, False), [b"data", b"abcdef"[ms - 1 : ms]], 0)
    s.delete([3 << 64])
    s.trim("MAXLEN", 2)
    nodes = list(s.iter_nodes())
    out = bytearray(b"\x0f") + enc_len(len(nodes))
    for node in nodes:
        out += enc_string(node.master_id.to_bytes(16, "big")) + enc_string(_node_listpack(node))
    out += enc_len(s.length) + _id_len(s.last_id) + enc_len(2)
    for name, last in ((b"g1", 5 << 64), (b"g2", 0)):
        out += enc_string(name) + _id_len(last) + enc_len(0) + enc_len(0)
    return bytes(out) + struct.pack("<H", 9) + bytes(8)


def test_redis_6_2_stream_groups_get_an_estimated_read_counter() -> None:
    """Redis's stream-cgroups unit, "Loading from legacy (Redis <= v6.2.x, rdb_ver < 10)":
    a group at the first entry has read 1 of the 2 added, one before it 0 (lags 1 and 2)."""
    s = rdb.load_payload(_legacy_stream_payload())
    assert (s.length, s.first_id, s.entries_added, s.max_deleted_entry_id) == (2, 5 << 64, 2, 0)
    g1, g2 = s.groups[b"g1"], s.groups[b"g2"]
    assert (g1.entries_read, s.group_lag(g1)) == (1, 1)
    assert (g2.entries_read, s.group_lag(g2)) == (0, 2)


def test_redis_8_6_stream_payload_loads_with_its_idmp_state() -> None:
    s = rdb.load_payload(STREAM_8_6)
    assert [sid for sid, _ in s.range(0, (1 << 128) - 1)] == [(1 << 64) | 1, *STREAM_8_6_IDS]
    consumers = s.groups[b"g"].consumers
    assert consumers[b"alice"].active_time == consumers[b"alice"].seen_time > 0
    assert consumers[b"bob"].active_time == -1  # created, never read
    idmp = s.idmp
    assert (idmp.duration, idmp.maxsize, idmp.iids_added, idmp.iids_duplicates) == (500, 50, 3, 1)
    a, b, c = STREAM_8_6_IDS
    assert {pid: list(h.items()) for pid, h in idmp.producers.items()} == {
        b"p0": [(b"i1", (c, c >> 64))],
        b"p1": [(b"i1", (a, a >> 64)), (b"i2", (b, b >> 64))],
    }
    assert idmp.find(b"p1", b"i2", a >> 64) == b  # a retried XADD gets the original ID back
    again = rdb.load_payload(rdb.dump_payload(s))
    assert again.range(0, (1 << 128) - 1) == s.range(0, (1 << 128) - 1)
    assert again.idmp.producers == idmp.producers


def test_dump_payloads_carry_redis_8_6_version() -> None:
    payload = rdb.dump_payload(b"x")
    assert payload[-10:-8] == struct.pack("<H", 13)
    assert rdb.dump_payload(rdb.load_payload(STREAM_8_6))[0] == 26


def test_stream_idmp_settings_out_of_range_are_refused() -> None:
    body = bytearray(STREAM_8_6[:-10])
    at = body.index(bytes.fromhex("41f432"))  # duration 500, maxsize 50
    for bad, what in ((b"\x00\x32", "duration 0"), (b"\x41\xf4\x00", "max size 0")):
        with pytest.raises(RdbError, match=what):
            rdb.load_payload(_payload(bytes(body[:at]) + bad + bytes(body[at + 3 :])))


def test_duplicate_group_in_a_stream_is_a_format_error() -> None:
    s = rdb.load_payload(STREAM_8_6)
    s.create_group(b"h", 0, -1)
    payload = bytearray(rdb.dump_payload(s, compress=False)[:-10])
    payload[payload.index(b"\x01h") + 1] = ord("g")  # rename "h" to "g"
    with pytest.raises(RdbError, match="duplicate consumer group"):
        rdb.load_payload(_payload(bytes(payload)))


# -- payload footers ------------------------------------------------------------------------------


def test_payload_versions_up_to_13_are_taken_newer_refused() -> None:
    body = b"\x00" + enc_string(b"hello")
    for version in (6, 10, 11, 12, 13):
        assert rdb.load_payload(_payload(body, version)) == b"hello"
    with pytest.raises(RdbError, match="unsupported RDB version"):
        rdb.load_payload(_payload(body, 14))


def test_payload_with_zero_checksum_is_not_checked() -> None:
    # verifyDumpPayload (8.6): a zero CRC-64 means "written without a checksum".
    assert rdb.load_payload(_payload(b"\x00" + enc_string(b"hello"), checksum=False)) == b"hello"
    with pytest.raises(RdbError, match="bad checksum"):
        rdb.load_payload(_payload(b"\x00" + enc_string(b"hello"))[:-1] + b"\x01")


# -- types Sluice does not have ----------------------------------------------------------------


@pytest.mark.parametrize(
    "payload, message",
    [
        (VECTOR_SET_8_6, r"type 7 \(module type 'vectorset'\) is not supported"),
        (_payload(b"\x06" + enc_len(1)), r"type 6 \(pre-release module value\)"),
    ],
)
def test_unsupported_types_are_named(payload: bytes, message: str) -> None:
    with pytest.raises(RdbUnsupported, match=message):  # RESTORE words these "Bad data format: ..."
        rdb.load_payload(payload)


def test_hash_with_field_ttl_from_redis_8_6_loads() -> None:
    """The listpack-ex payload redis-server 8.6.3 wrote (type 25): the field, its value and
    its deadline (the soonest one, written before the listpack, is the same)."""
    h = rdb.load_payload(HASH_FIELD_TTL_8_6)
    h.refit(512, 64)
    assert h.encoding() == b"listpackex"
    assert h.d == {b"a": b"1"}
    assert h.expire_time(b"a") == int.from_bytes(bytes.fromhex("84aa5b03a2010000"), "little")


def test_a_set_dumped_by_redis_8_6_loads_as_its_listpack() -> None:
    from sluice.storage.sets import SetValue

    value = rdb.load_payload(SET_8_6)
    assert type(value) is SetValue
    assert value.encoding() == b"listpack"
    assert list(value) == [b"m"]


@pytest.mark.parametrize(
    "payload, message",
    [
        (_payload(b"\x08" + enc_string(b"x")), "unknown RDB value type or opcode 8"),
        (_payload(b"\xfe\x00"), "unknown RDB value type or opcode 254"),
    ],
)
def test_unknown_types_are_format_errors(payload: bytes, message: str) -> None:
    with pytest.raises(RdbError, match=message) as e:
        rdb.load_payload(payload)
    assert not isinstance(e.value, RdbUnsupported)


def test_module_aux_data_in_a_file_is_refused_by_module_name() -> None:
    module_id = 0xBDE72DA2BB1EB400  # "vectorset", encoding version 0
    body = bytes((rdb.OP_MODULE_AUX,)) + b"\x81" + struct.pack(">Q", module_id) + b"\x02\x02"
    with pytest.raises(RdbUnsupported, match="AUX data of module type 'vectorset'"):
        rdb.load_into(_file(body), Keyspace(16), 0)


# -- opcodes of newer servers ---------------------------------------------------------------------


def test_redis_7_0_file_loads() -> None:
    ks = Keyspace(16)
    assert rdb.load_into(RDB_7_0, ks, 0) == len(RDB_7_0)
    assert ks[0].data[b"a"] == b"1" and list(ks[0].data[b"l"]) == [b"x", b"y"]
    assert ks[0].expires == {b"t": 4102444800000} and ks[2].data == {b"z": b"db2"}


def test_cluster_node_rdb_with_slot_info_loads() -> None:
    ks = Keyspace(16)
    stats = rdb.LoadStats()
    assert rdb.load_into(CLUSTER_RDB_8_6, ks, 0, stats) == len(CLUSTER_RDB_8_6)
    assert stats.aux[b"redis-ver"] == b"8.6.3" and stats.aux[b"cluster-asm-task"] == b""
    assert ks[0].data[b"a"] == b"1" and ks[0].data[b"b"] == b"2"
    assert list(ks[0].data[b"l"]) == [b"x", b"y"]
    assert list(ks[0].expires) == [b"b"]
    traced: list[str] = []
    rdb.parse(CLUSTER_RDB_8_6, None, trace=lambda off, what: traced.append(what))
    assert (
        traced.count("Slot info for slot 3300") == 1
        and len([t for t in traced if t.startswith("Slot info")]) == 3
    )


def test_key_metadata_that_may_be_ignored_is_skipped() -> None:
    meta = _key_meta(("KMT1", 1), ("Ab_-", 1))
    payload = _payload(meta + b"\x00" + enc_string(b"hello"))
    assert rdb.load_payload(payload) == b"hello"
    key = b"\xfc" + struct.pack("<q", 10**13) + meta + b"\x00" + enc_string(b"k")
    ks = Keyspace(16)
    rdb.load_into(
        _file(
            b"\xfe\x00" + key + enc_string(b"v") + b"\x00" + enc_string(b"k2") + enc_string(b"v2")
        ),
        ks,
        0,
    )
    assert ks[0].data == {b"k": b"v", b"k2": b"v2"}
    assert ks[0].expires == {b"k": 10**13}  # the expire before the metadata still applies


def test_key_metadata_that_must_be_loaded_is_refused() -> None:
    with pytest.raises(RdbUnsupported, match="key metadata of class 'K_2-' .* cannot be loaded"):
        rdb.load_payload(_payload(_key_meta(("KMT1", 1), ("K_2-", 0)) + b"\x00" + enc_string(b"x")))


def test_key_metadata_must_be_followed_by_a_value_type() -> None:
    with pytest.raises(RdbError, match="unknown RDB value type or opcode 252"):
        rdb.load_payload(_payload(_key_meta(("KMT1", 1)) + b"\xfc" + b"\x00" * 8))
    too_many = bytes((rdb.OP_KEY_META,)) + enc_len(8)
    with pytest.raises(RdbError, match="Too many key metadata classes"):
        rdb.load_payload(_payload(too_many + b"\x00" + enc_string(b"x")))


def test_file_versions_up_to_13_load_newer_refused() -> None:
    body = b"\xfe\x00" + b"\x00" + enc_string(b"k") + enc_string(b"v")
    for version in (9, 10, 11, 12, 13):
        ks = Keyspace(16)
        rdb.load_into(_file(body, version), ks, 0)
        assert ks[0].data == {b"k": b"v"}
    with pytest.raises(RdbError, match="Can't handle RDB format version 14"):
        rdb.load_into(_file(body, 14), Keyspace(16), 0)
