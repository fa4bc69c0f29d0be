// node-redis's client-side cache against a server (Sluice, or redis-server for the
// differential run): reads are served from the local cache, and the server's invalidation
// pushes keep it right when another connection writes, flushes, or a key expires.
//
//   node exercise.js <port>
//
// Prints a JSON report {ok, version, checks: {name: "ok" | why}} and exits 1 on a failure.
// Waits are on state (the cache's size, the server's counters), never fixed sleeps.
"use strict";

const { createClient, BasicClientSideCache } = require("redis");

const port = Number(process.argv[2]);
const url = `redis://127.0.0.1:${port}`;
const checks = {};

function assert(cond, why) {
  if (!cond) throw new Error(why);
}

async function until(predicate, what, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function getCalls(writer) {
  const info = await writer.info("commandstats");
  const m = /cmdstat_get:calls=(\d+)/.exec(info);
  return m ? Number(m[1]) : 0;
}

async function check(name, fn) {
  try {
    await fn();
    checks[name] = "ok";
  } catch (e) {
    checks[name] = String(e && e.stack ? e.stack : e);
  }
}

async function main() {
  const cache = new BasicClientSideCache({ ttl: 0, maxEntries: 0, evictPolicy: "LRU" });
  const reader = createClient({ url, RESP: 3, clientSideCache: cache });
  const writer = createClient({ url });
  reader.on("error", () => {});
  writer.on("error", () => {});
  await reader.connect();
  await writer.connect();
  await writer.flushAll();
  await writer.configResetStat();

  await check("served_from_cache", async () => {
    await writer.set("k", "v1");
    const before = await getCalls(writer);
    assert((await reader.get("k")) === "v1", "first read");
    assert((await reader.get("k")) === "v1", "second read");
    assert((await reader.get("k")) === "v1", "third read");
    const after = await getCalls(writer);
    assert(after - before === 1, `the server saw ${after - before} GETs for three reads`);
    assert(cache.stats().hitCount >= 2, `cache hits: ${cache.stats().hitCount}`);
  });

  await check("invalidated_by_another_connection", async () => {
    assert(cache.size() === 1, `cache size ${cache.size()}`);
    await writer.set("k", "v2");
    await until(() => cache.size() === 0, "the invalidation of k");
    assert((await reader.get("k")) === "v2", "the new value after the invalidation");
  });

  await check("hashes_and_lists", async () => {
    await writer.hSet("h", "f", "1");
    await writer.rPush("l", ["a", "b"]);
    assert((await reader.hGet("h", "f")) === "1", "HGET");
    assert((await reader.lRange("l", 0, -1)).join() === "a,b", "LRANGE");
    await writer.hSet("h", "f", "2");
    await until(async () => (await reader.hGet("h", "f")) === "2", "HGET after HSET");
    await writer.rPush("l", "c");
    await until(async () => (await reader.lRange("l", 0, -1)).join() === "a,b,c",
      "LRANGE after RPUSH");
  });

  await check("flushall_invalidates_everything", async () => {
    await reader.get("k");
    assert(cache.size() > 0, "something cached");
    await writer.flushAll();
    await until(() => cache.size() === 0, "the null invalidation of FLUSHALL");
    assert((await reader.get("k")) === null, "k is gone");
  });

  await check("expiry_invalidates", async () => {
    cache.clear();
    await writer.set("e", "soon", { PX: 50 });
    assert((await reader.get("e")) === "soon", "read before the TTL");
    await until(() => cache.size() === 0, "the invalidation of the expired key (active expiry)");
    assert((await reader.get("e")) === null, "expired");
  });

  await reader.quit();
  await writer.quit();
}

main()
  .catch((e) => {
    checks.main = String(e && e.stack ? e.stack : e);
  })
  .finally(() => {
    const version = require("redis/package.json").version;
    const ok = Object.values(checks).every((v) => v === "ok");
    process.stdout.write(JSON.stringify({ ok, version, checks }) + "\n");
    process.exit(ok ? 0 : 1);
  });
