"""Query buffers over a real socket, on both event loops: asyncio (the in-process server)
and uvloop (``python -m sluice.server``), which call ``get_buffer`` differently.

What a user sees: CLIENT LIST's ``qbuf``/``qbuf-free``, the memory INFO attributes to
clients, ``maxmemory-clients`` acting on it, and large values arriving intact however the
kernel splits them. The cron's idle trimming takes seconds of idleness; the Tcl querybuf
unit checks it through the conformance ratchet, and tests/unit/protocol/test_querybuf.py
checks the policy itself.
"""

from __future__ import annotations

import socket

import pytest
import redis

from tests.support import ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(60)

BIG = 1_000_000
HEADER = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n" % BIG


@pytest.fixture
def port(loop_port: int) -> int:
    return loop_port


def client_fields(r: redis.Redis, name: str) -> dict[str, str]:
    for line in r.execute_command("CLIENT", "LIST").decode().splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" "))
        if fields["name"] == name:
            return fields
    raise AssertionError(f"no client named {name}")


def named_socket(port: int, name: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$%d\r\n%s\r\n" % (len(name), name))
    assert s.recv(100) == b"+OK\r\n"
    return s


@pytest.mark.parametrize("protocol", [2, 3])
def test_a_big_value_lands_in_a_buffer_made_when_its_header_arrives(port: int,
                                                                    protocol: int) -> None:
    r = redis.Redis(port=port, protocol=protocol, socket_timeout=10)
    s = named_socket(port, b"writer")
    try:
        assert client_fields(r, "writer")["qbuf-free"] == "0"  # reads ended on boundaries
        s.sendall(HEADER)
        fields = wait_until(lambda: (f := client_fields(r, "writer"))["qbuf-free"] != "0" and f,
                            what="the header read")
        assert int(fields["qbuf"]) + int(fields["qbuf-free"]) >= BIG + 2
        assert int(fields["tot-mem"]) > BIG
        assert r.info("clients")["client_recent_max_input_buffer"] >= BIG + 2
        value = (bytes(range(256)) * (BIG // 256 + 1))[:BIG]
        for at in range(0, BIG, 300_000):  # the value in four writes
            s.sendall(value[at : at + 300_000])
        s.sendall(b"\r\n")
        assert s.recv(5) == b"+OK\r\n"
        assert r.get("big") == value
        after = client_fields(r, "writer")
        assert after["qbuf"] == "0"
        # As Redis: the buffer is kept for the next big value until the cron finds it idle.
        assert int(after["qbuf-free"]) >= BIG + 2
    finally:
        s.close()
        r.delete("big")
        r.close()


def test_a_read_that_ends_inside_a_request_keeps_a_buffer_for_the_rest(port: int) -> None:
    r = redis.Redis(port=port, socket_timeout=10)
    s = named_socket(port, b"partial")
    try:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv")
        fields = wait_until(lambda: (f := client_fields(r, "partial"))["qbuf"] != "0" and f,
                            what="the partial read")
        assert fields["qbuf"] == str(len(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv"))
        assert int(fields["qbuf"]) + int(fields["qbuf-free"]) == 16384
        s.sendall(b"v\r\n")
        assert s.recv(5) == b"+OK\r\n"
        assert r.get("k") == b"vv"
    finally:
        s.close()
        r.delete("k")
        r.close()


def test_maxmemory_clients_evicts_a_client_whose_announced_value_is_too_big() -> None:
    server = ThreadedServer(["maxmemory-clients 600kb"]).start()
    try:
        r = redis.Redis(port=server.port, socket_timeout=10)
        s = named_socket(server.port, b"greedy")
        s.sendall(HEADER)  # a 1 MB buffer is made for the value: more than the clients' share
        wait_until(lambda: "greedy" not in r.execute_command("CLIENT", "LIST").decode(),
                   what="the eviction")
        assert r.info("stats")["evicted_clients"] == 1
        assert r.ping()
        s.close()
        r.close()
    finally:
        server.stop()
