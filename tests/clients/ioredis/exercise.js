"use strict";
/*
 * Drives a Redis-compatible server with ioredis, the way Node.js applications use it, and
 * checks every reply. Usage: node exercise.js PORT [ioredis|ioredis6]
 *
 * package.json installs ioredis 5 as "ioredis" (RESP2 only, no HELLO) and ioredis 6 as
 * "ioredis6" (RESP3 by default: it opens with a lowercase `hello 3`). The same checks run
 * with both: ioredis 6 turns RESP3 maps back into the arrays its API has always returned.
 *
 * Prints one JSON object ({ok, ioredis, handshake, checks}) and exits 1 if any check failed.
 * The expectations are redis-server's replies: tests/integration/test_ioredis.py also runs
 * this script against the reference redis-server (8.6), so a wrong expectation fails there.
 *
 * Blocking checks never sleep to synchronise: a second connection issues the blocking
 * command, and the control connection polls INFO clients until blocked_clients says the
 * server has parked it (the same wait as tests/support.py's wait_blocked).
 */

const assert = require("node:assert/strict");

const PORT = Number(process.argv[2]);
const PACKAGE = process.argv[3] || "ioredis";
if (!Number.isInteger(PORT) || PORT <= 0 || !["ioredis", "ioredis6"].includes(PACKAGE)) {
  console.error("usage: node exercise.js PORT [ioredis|ioredis6]");
  process.exit(2);
}
const Redis = require(PACKAGE);
const IOREDIS_VERSION = require(`${PACKAGE}/package.json`).version;
const MAJOR = Number(IOREDIS_VERSION.split(".")[0]);
const PROTOCOL = MAJOR >= 6 ? 3 : 2;  // what each major negotiates by default

const clients = [];
function connect(options = {}) {
  // maxRetriesPerRequest 0: a dropped connection fails the command instead of retrying it
  // 20 times, so a server bug shows up as a failed check, not as a hang.
  const client = new Redis({ port: PORT, host: "127.0.0.1", maxRetriesPerRequest: 0, ...options });
  clients.push(client);
  return client;
}

async function blockedClients(control) {
  const info = await control.info("clients");
  const match = /^blocked_clients:(\d+)/m.exec(info);
  assert.ok(match, `no blocked_clients in INFO clients: ${info}`);
  return Number(match[1]);
}

// Waits on server state (INFO clients), as the Python tests' wait_blocked does.
async function waitBlocked(control, n, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await blockedClients(control)) === n) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} blocked clients`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the command to fail");
}

function ready(client) {
  if (client.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    client.once("ready", resolve);
    client.once("error", reject);
  });
}

// ---------------------------------------------------------------------------------------------
// Checks. Each one uses its own keys, so one failure does not cascade into the next.

async function handshake(control, report) {
  // What ioredis sends on connect, seen through MONITOR: ioredis 6 opens with `hello 3`;
  // then SELECT and CLIENT SETNAME from the options, CLIENT SETINFO LIB-NAME and LIB-VER
  // (errors ignored, for servers older than 7.2), then INFO as the ready check (it waits while
  // loading:1). ioredis 5 has no RESP3 and never sends HELLO.
  const monitor = await control.monitor();
  clients.push(monitor);
  const seen = [];
  let sawPing = null;
  const pinged = new Promise((resolve) => { sawPing = resolve; });
  // Listen before the client connects: its handshake is fed to the monitor before "ready".
  monitor.on("monitor", (time, args, source) => {
    seen.push([source, args]);
    if (String(args[0]).toLowerCase() === "ping" && args[1] === "handshake-done") sawPing();
  });
  const client = connect({ connectionName: "sluice-ioredis", db: 3 });
  await ready(client);
  // MONITOR shows one connection's commands in order, so this ping is a fence after which
  // all of the handshake has been seen.
  await client.ping("handshake-done");
  await pinged;
  const local = `127.0.0.1:${client.stream.localPort}`;
  report.handshake = seen.filter(([source]) => source === local).map(([, args]) => args);
  await monitor.disconnect();
  // The SETNAME and SELECT from the options took effect.
  assert.equal(await client.client("GETNAME"), "sluice-ioredis");
  await client.set("hs:db3", "x");
  const info = await client.info("keyspace");
  assert.match(info, /^db3:keys=1,/m);
  assert.equal(await control.exists("hs:db3"), 0);
  const server = await client.info("server");
  assert.match(server, /^redis_version:\d+\.\d+\.\d+\r?$/m);
  await client.del("hs:db3");
  // The connection speaks the protocol this major negotiates.
  assert.match(await client.client("INFO"), new RegExp(`\\bresp=${PROTOCOL}\\b`));
}

async function handshakeOrder(report) {
  const names = (report.handshake || []).map((args) => args.map(String).join(" ").toLowerCase());
  const infoAt = names.indexOf("info");
  assert.ok(infoAt >= 0, `no INFO ready check in ${JSON.stringify(names)}`);
  // What the connect handler sends comes before the ready check.
  for (const setup of ["client setname sluice-ioredis", "select 3"]) {
    const at = names.indexOf(setup);
    assert.ok(at >= 0 && at < infoAt, `${setup} not before INFO in ${JSON.stringify(names)}`);
  }
  assert.equal(names[names.length - 1], "ping handshake-done");
  if (PROTOCOL === 3) {
    assert.equal(names[0], "hello 3", `ioredis ${MAJOR} should open with hello 3`);
  } else {
    assert.ok(!names.some((n) => n.startsWith("hello")), `ioredis ${MAJOR} sends no HELLO`);
  }
}

async function pipelines(r) {
  const res = await r.pipeline().set("p:a", "1").incr("p:a").get("p:a").incrby("p:b", 5).exec();
  assert.deepEqual(res, [[null, "OK"], [null, 2], [null, "2"], [null, 5]]);
  // An error inside a pipeline fails that command only.
  const mixed = await r.pipeline().set("p:c", "abc").incr("p:c").append("p:c", "d").exec();
  assert.equal(mixed[0][1], "OK");
  assert.equal(mixed[1][0].message, "ERR value is not an integer or out of range");
  assert.deepEqual(mixed[2], [null, 4]);
  // A large pipeline: replies stay in order.
  const big = r.pipeline();
  for (let i = 0; i < 1000; i++) big.rpush("p:list", `v${i}`);
  const bigRes = await big.exec();
  assert.deepEqual(bigRes[999], [null, 1000]);
  assert.equal(bigRes.filter(([err]) => err).length, 0);
  assert.deepEqual(await r.lrange("p:list", 998, -1), ["v998", "v999"]);
}

async function autoPipelining() {
  // enableAutoPipelining writes every command issued in one tick in a single packet.
  const r = connect({ enableAutoPipelining: true });
  const replies = await Promise.all(Array.from({ length: 500 }, () => r.incr("ap:n")));
  assert.deepEqual(replies, Array.from({ length: 500 }, (_, i) => i + 1));
  assert.equal(await r.get("ap:n"), "500");
}

async function transactions(r, other) {
  // ioredis's multi() is a pipeline wrapped in MULTI/EXEC; exec() unwraps the replies.
  assert.deepEqual(await r.multi().set("t:a", "1").incr("t:a").get("t:a").exec(),
    [[null, "OK"], [null, 2], [null, "2"]]);
  // A runtime error inside EXEC fails that command only.
  const res = await r.multi().set("t:b", "x").incr("t:b").exec();
  assert.deepEqual(res[0], [null, "OK"]);
  assert.equal(res[1][0].message, "ERR value is not an integer or out of range");
  // A queue-time error aborts the transaction: EXECABORT, with the cause as previousErrors.
  const err = await rejection(r.multi().set("t:c", "1").call("nosuchcommand", "x").exec());
  assert.equal(err.message, "EXECABORT Transaction discarded because of previous errors.");
  assert.match(err.previousErrors[0].message, /^ERR unknown command 'nosuchcommand'/);
  assert.equal(await r.exists("t:c"), 0);
  // WATCH: a write from another connection makes EXEC return null.
  await r.watch("t:w");
  await other.set("t:w", "changed");
  assert.equal(await r.multi().set("t:w", "mine").exec(), null);
  assert.equal(await r.get("t:w"), "changed");
  // multi({pipeline: false}) sends MULTI at once and each command answers QUEUED.
  assert.equal(await r.multi({ pipeline: false }), "OK");
  assert.equal(await r.set("t:q", "1"), "QUEUED");
  assert.equal(await r.incr("t:q"), "QUEUED");
  assert.deepEqual(await r.exec(), [[null, "OK"], [null, 2]]);
}

async function strings(r) {
  assert.equal(await r.set("s:a", "hello", "EX", 100), "OK");
  const ttl = await r.ttl("s:a");
  assert.ok(ttl > 0 && ttl <= 100, `ttl ${ttl}`);
  assert.equal(await r.set("s:a", "x", "NX"), null);
  assert.equal(await r.set("s:a", "world", "XX", "GET"), "hello");
  assert.equal(await r.append("s:a", "!"), 6);
  assert.equal(await r.getrange("s:a", 0, 4), "world");
  assert.equal(await r.setrange("s:a", 0, "W"), 6);
  assert.equal(await r.strlen("s:a"), 6);
  assert.equal(await r.getex("s:a", "PERSIST"), "World!");
  assert.equal(await r.ttl("s:a"), -1);
  assert.equal(await r.mset({ "s:m1": "1", "s:m2": "2" }), "OK");
  assert.deepEqual(await r.mget("s:m1", "s:m2", "s:none"), ["1", "2", null]);
  assert.equal(await r.incrbyfloat("s:m1", "2.5"), "3.5");
  assert.equal(await r.decrby("s:m2", 5), -3);
  assert.equal(await r.getdel("s:m2"), "-3");
  assert.equal(await r.exists("s:m2"), 0);
  // Binary values round-trip byte for byte.
  const blob = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  await r.set("s:bin", blob);
  assert.ok(blob.equals(await r.getBuffer("s:bin")));
  // A wrong-type error.
  await r.rpush("s:list", "x");
  const err = await rejection(r.get("s:list"));
  assert.equal(err.message, "WRONGTYPE Operation against a key holding the wrong kind of value");
}

async function scanStream(r) {
  const pipe = r.pipeline();
  for (let i = 0; i < 300; i++) pipe.set(`scan:${i}`, "v");
  pipe.set("other:1", "v");
  await pipe.exec();
  const found = new Set();
  await new Promise((resolve, reject) => {
    const stream = r.scanStream({ match: "scan:*", count: 50 });
    stream.on("data", (keys) => keys.forEach((k) => found.add(k)));
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  assert.equal(found.size, 300);
  assert.ok(!found.has("other:1"));
}

async function lists(r, control) {
  assert.equal(await r.rpush("l:a", "a", "b", "c"), 3);
  assert.equal(await r.lpush("l:a", "z"), 4);
  assert.deepEqual(await r.lrange("l:a", 0, -1), ["z", "a", "b", "c"]);
  assert.deepEqual(await r.lpop("l:a", 2), ["z", "a"]);
  assert.equal(await r.lmove("l:a", "l:b", "RIGHT", "LEFT"), "c");
  assert.equal(await r.llen("l:a"), 1);

  // BLPOP across two connections: each blocker is parked before the next one blocks, so the
  // FIFO order of service is known; one RPUSH of two elements serves both in that order.
  const b1 = connect();
  const b2 = connect();
  await Promise.all([ready(b1), ready(b2)]);
  const first = b1.blpop("l:q", 0);
  await waitBlocked(control, 1);
  const second = b2.blpop("l:other", "l:q", 0);
  await waitBlocked(control, 2);
  assert.equal(await r.rpush("l:q", "one", "two"), 2);
  assert.deepEqual(await first, ["l:q", "one"]);
  assert.deepEqual(await second, ["l:q", "two"]);
  await waitBlocked(control, 0);
  assert.equal(await r.exists("l:q"), 0);

  // BRPOP with a timeout on an empty list returns null (a fractional timeout in seconds).
  assert.equal(await b1.brpop("l:empty", 0.05), null);

  // BLMOVE is woken by a push too.
  const moved = b1.blmove("l:src", "l:dst", "LEFT", "RIGHT", 0);
  await waitBlocked(control, 1);
  await r.lpush("l:src", "m");
  assert.equal(await moved, "m");
  assert.deepEqual(await r.lrange("l:dst", 0, -1), ["m"]);
}

async function streams(r, control) {
  const id1 = await r.xadd("x:s", "*", "sensor", "1", "temp", "19.8");
  assert.match(id1, /^\d+-\d+$/);
  assert.equal(await r.xadd("x:s", "9999999999999-0", "sensor", "2"), "9999999999999-0");
  const err = await rejection(r.xadd("x:s", "1-1", "f", "v"));
  assert.equal(err.message,
    "ERR The ID specified in XADD is equal or smaller than the target stream top item");
  assert.deepEqual(await r.xrange("x:s", "-", "+"),
    [[id1, ["sensor", "1", "temp", "19.8"]], ["9999999999999-0", ["sensor", "2"]]]);
  assert.deepEqual(await r.xrevrange("x:s", "+", "-", "COUNT", 1),
    [["9999999999999-0", ["sensor", "2"]]]);
  assert.equal(await r.xlen("x:s"), 2);
  assert.equal(await r.xadd("x:none", "NOMKSTREAM", "*", "f", "v"), null);

  // XREAD BLOCK from a second connection: `$` means entries added after it blocked.
  const reader = connect();
  await ready(reader);
  const read = reader.xread("COUNT", 10, "BLOCK", 0, "STREAMS", "x:live", "$");
  await waitBlocked(control, 1);
  const liveId = await r.xadd("x:live", "*", "n", "1");
  assert.deepEqual(await read, [["x:live", [[liveId, ["n", "1"]]]]]);
  // A BLOCK that times out replies null.
  assert.equal(await reader.xread("BLOCK", 30, "STREAMS", "x:live", "$"), null);
  // Reading from an ID returns what is after it, without blocking.
  assert.deepEqual(await reader.xread("STREAMS", "x:live", "0-0"),
    [["x:live", [[liveId, ["n", "1"]]]]]);
}

async function consumerGroups(r, control) {
  assert.equal(await r.xgroup("CREATE", "g:s", "workers", "$", "MKSTREAM"), "OK");
  const dup = await rejection(r.xgroup("CREATE", "g:s", "workers", "$"));
  assert.equal(dup.message, "BUSYGROUP Consumer Group name already exists");
  const ids = [];
  for (let i = 1; i <= 5; i++) ids.push(await r.xadd("g:s", `${i}-0`, "job", String(i)));

  // Two consumers share the entries.
  const a = await r.xreadgroup("GROUP", "workers", "alice", "COUNT", 2, "STREAMS", "g:s", ">");
  assert.deepEqual(a, [["g:s", [["1-0", ["job", "1"]], ["2-0", ["job", "2"]]]]]);
  const b = await r.xreadgroup("GROUP", "workers", "bob", "STREAMS", "g:s", ">");
  assert.deepEqual(b[0][1].map(([id]) => id), ["3-0", "4-0", "5-0"]);
  assert.equal(await r.xack("g:s", "workers", "1-0", "3-0", "3-0"), 2);

  // XPENDING summary: per-consumer counts are strings, as Redis sends them.
  assert.deepEqual(await r.xpending("g:s", "workers"),
    [3, "2-0", "5-0", [["alice", "1"], ["bob", "2"]]]);
  const ext = await r.xpending("g:s", "workers", "-", "+", 10);
  assert.deepEqual(ext.map(([id, consumer, , count]) => [id, consumer, count]),
    [["2-0", "alice", 1], ["4-0", "bob", 1], ["5-0", "bob", 1]]);
  assert.ok(ext.every(([, , idle]) => Number.isInteger(idle) && idle >= 0));
  const bobOnly = await r.xpending("g:s", "workers", "IDLE", 0, "-", "+", 10, "bob");
  assert.deepEqual(bobOnly.map(([id]) => id), ["4-0", "5-0"]);

  // History read: a consumer re-reads its own pending entries from an ID.
  const history = await r.xreadgroup("GROUP", "workers", "alice", "STREAMS", "g:s", "0");
  assert.deepEqual(history, [["g:s", [["2-0", ["job", "2"]]]]]);

  // XREADGROUP BLOCK from a second connection, woken by an XADD.
  const worker = connect();
  await ready(worker);
  const pending = worker.xreadgroup("GROUP", "workers", "carol", "BLOCK", 0, "STREAMS", "g:s", ">");
  await waitBlocked(control, 1);
  await r.xadd("g:s", "6-0", "job", "6");
  assert.deepEqual(await pending, [["g:s", [["6-0", ["job", "6"]]]]]);

  // XAUTOCLAIM: carol takes over everything pending (min-idle 0); an entry deleted from the
  // stream is dropped from the PEL and listed in the third element.
  assert.equal(await r.xdel("g:s", "4-0"), 1);
  const claimed = await r.xautoclaim("g:s", "workers", "carol", 0, "0-0", "COUNT", 10);
  assert.deepEqual(claimed, ["0-0",
    [["2-0", ["job", "2"]], ["5-0", ["job", "5"]], ["6-0", ["job", "6"]]], ["4-0"]]);
  const justId = await r.xautoclaim("g:s", "workers", "alice", 0, "0-0", "COUNT", 1, "JUSTID");
  assert.deepEqual(justId, ["5-0", ["2-0"], []]);
  const after = await r.xpending("g:s", "workers", "-", "+", 10);
  assert.deepEqual(after.map(([id, consumer, , count]) => [id, consumer, count]),
    [["2-0", "alice", 3], ["5-0", "carol", 2], ["6-0", "carol", 2]]);
  assert.equal(await r.xack("g:s", "workers", "2-0", "5-0", "6-0"), 3);
  assert.deepEqual(await r.xpending("g:s", "workers"), [0, null, null, null]);

  // XINFO GROUPS: a flat field/value array (ioredis 6 flattens the RESP3 map).
  const [group] = await r.xinfo("GROUPS", "g:s");
  const fields = Object.fromEntries(group.reduce((acc, v, i, arr) =>
    (i % 2 === 0 ? [...acc, [v, arr[i + 1]]] : acc), []));
  assert.equal(fields.name, "workers");
  assert.equal(fields.consumers, 3);
  assert.equal(fields.pending, 0);
  assert.equal(fields["last-delivered-id"], "6-0");

  const nogroup = await rejection(r.xreadgroup("GROUP", "nope", "c", "STREAMS", "g:s", ">"));
  assert.match(nogroup.message, /^NOGROUP No such key 'g:s' or consumer group 'nope'/);
}

async function clientUnblock(r, control) {
  const blocked = connect();
  await ready(blocked);
  const id = await blocked.client("ID");
  assert.ok(Number.isInteger(id) && id > 0);
  assert.equal(await control.client("UNBLOCK", id), 0);  // not blocked: 0

  // TIMEOUT (the default): the blocked command returns as if it had timed out.
  const read = blocked.xread("BLOCK", 0, "STREAMS", "u:s", "$");
  await waitBlocked(control, 1);
  assert.equal(await control.client("UNBLOCK", id), 1);
  assert.equal(await read, null);

  // ERROR: the blocked command fails with -UNBLOCKED.
  // The rejection may arrive before the UNBLOCK reply: handle it from the start.
  const pop = rejection(blocked.brpop("u:l", 0));
  await waitBlocked(control, 1);
  assert.equal(await control.client("UNBLOCK", id, "ERROR"), 1);
  const err = await pop;
  assert.equal(err.message, "UNBLOCKED client unblocked via CLIENT UNBLOCK");

  // The connection is still usable and still the same client.
  assert.equal(await blocked.client("ID"), id);
  await waitBlocked(control, 0);
}

async function reconnect(r, control) {
  // A killed connection is re-established by ioredis (handshake again) without the caller
  // noticing anything but a new CLIENT ID.
  const c = connect({ maxRetriesPerRequest: 5 });
  await ready(c);
  const before = await c.client("ID");
  const reconnected = new Promise((resolve) => c.once("ready", resolve));
  assert.equal(await control.client("KILL", "ID", before), 1);
  await reconnected;
  const afterId = await c.client("ID");
  assert.notEqual(afterId, before);
  assert.equal(await c.ping(), "PONG");
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const report = {
    ok: true, ioredis: IOREDIS_VERSION, protocol: PROTOCOL, handshake: null, checks: {},
  };
  const control = connect();
  const r = connect();
  const other = connect();
  await Promise.all([ready(control), ready(r), ready(other)]);
  await control.flushall();

  const checks = [
    ["handshake", () => handshake(connect(), report)],
    ["handshake_order", () => handshakeOrder(report)],
    ["pipelines", () => pipelines(r)],
    ["auto_pipelining", () => autoPipelining()],
    ["transactions", () => transactions(r, other)],
    ["strings", () => strings(r)],
    ["scan_stream", () => scanStream(r)],
    ["lists", () => lists(r, control)],
    ["streams", () => streams(r, control)],
    ["consumer_groups", () => consumerGroups(r, control)],
    ["client_unblock", () => clientUnblock(r, control)],
    ["reconnect", () => reconnect(r, control)],
  ];
  for (const [name, fn] of checks) {
    try {
      await fn();
      report.checks[name] = "ok";
    } catch (err) {
      report.ok = false;
      report.checks[name] = String(err && err.stack ? err.stack : err);
      // A failed blocking check may leave a client parked: release it for the next check.
      try {
        const list = await control.client("LIST");
        for (const line of list.split("\n")) {
          const m = /^id=(\d+) .*flags=\S*b/.exec(line);
          if (m) await control.client("UNBLOCK", m[1]);
        }
      } catch (ignored) { /* best effort */ }
    }
  }
  await control.flushall();
  for (const c of clients) c.disconnect();
  process.stdout.write(JSON.stringify(report, null, 1) + "\n");
  return report.ok ? 0 : 1;
}

main().then((code) => process.exit(code), (err) => {
  process.stdout.write(JSON.stringify({ ok: false, fatal: String(err && err.stack) }) + "\n");
  process.exit(1);
});
