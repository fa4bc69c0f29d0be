"use strict";
/*
 * A BullMQ queue against a Redis-compatible server: every queue operation BullMQ makes is a
 * Lua script (EVALSHA of its bundled scripts, with hashes, sets, sorted sets, lists and a
 * stream of events). Usage: node queue.js PORT
 *
 * Checks, in order: a job added with Queue.add is completed by a Worker and its return value
 * comes back through QueueEvents (XREAD BLOCK on the events stream); a job that throws once is
 * retried (attempts: 2) and completes; the queue's counts say so; a job removed on completion
 * leaves nothing behind. Prints one JSON object ({ok, bullmq, checks}) and exits 1 if any check
 * failed. tests/integration/test_bullmq.py runs it against Sluice and the reference server.
 */

const assert = require("node:assert/strict");
const { Queue, Worker, QueueEvents } = require("bullmq");

const PORT = Number(process.argv[2]);
if (!Number.isInteger(PORT) || PORT <= 0) {
  console.error("usage: node queue.js PORT");
  process.exit(2);
}
const BULLMQ_VERSION = require("bullmq/package.json").version;
// maxRetriesPerRequest null is what BullMQ requires of a worker's connection.
const connection = { host: "127.0.0.1", port: PORT, maxRetriesPerRequest: null };
const NAME = `sluice-${process.pid}`;
const checks = [];

async function check(name, fn) {
  try {
    await fn();
    checks.push({ name, ok: true });
  } catch (err) {
    checks.push({ name, ok: false, error: String(err && err.stack ? err.stack : err) });
  }
}

async function main() {
  const queue = new Queue(NAME, { connection });
  const events = new QueueEvents(NAME, { connection });
  const tries = new Map();
  const worker = new Worker(NAME, async (job) => {
    const n = (tries.get(job.id) || 0) + 1;
    tries.set(job.id, n);
    if (job.name === "flaky" && n === 1) throw new Error("first try fails");
    return { doubled: job.data.n * 2, attempt: n };
  }, { connection });
  try {
    await Promise.all([queue.waitUntilReady(), events.waitUntilReady(), worker.waitUntilReady()]);

    await check("a job added is completed by a worker", async () => {
      const job = await queue.add("double", { n: 21 });
      const result = await job.waitUntilFinished(events, 20000);
      assert.deepEqual(result, { doubled: 42, attempt: 1 });
      const done = await queue.getJob(job.id);
      assert.equal(await done.getState(), "completed");
      assert.deepEqual(done.returnvalue, { doubled: 42, attempt: 1 });
    });

    await check("a failing job is retried and completes", async () => {
      const job = await queue.add("flaky", { n: 5 }, { attempts: 2 });
      const result = await job.waitUntilFinished(events, 20000);
      assert.deepEqual(result, { doubled: 10, attempt: 2 });
      const done = await queue.getJob(job.id);
      assert.equal(done.attemptsMade, 2);
    });

    await check("the queue counts what happened", async () => {
      const counts = await queue.getJobCounts("completed", "failed", "waiting", "active", "delayed");
      assert.deepEqual(counts, { completed: 2, failed: 0, waiting: 0, active: 0, delayed: 0 });
    });

    await check("a job removed on completion leaves nothing", async () => {
      const job = await queue.add("double", { n: 1 }, { removeOnComplete: true });
      assert.deepEqual(await job.waitUntilFinished(events, 20000), { doubled: 2, attempt: 1 });
      assert.equal(await queue.getJob(job.id), undefined);
    });
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => {});
    await Promise.all([queue.close(), events.close()]);
  }
  const ok = checks.length === 4 && checks.every((c) => c.ok);
  console.log(JSON.stringify({ ok, bullmq: BULLMQ_VERSION, checks }));
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  console.log(JSON.stringify({ ok: false, bullmq: BULLMQ_VERSION, checks,
                               error: String(err && err.stack ? err.stack : err) }));
  process.exit(1);
});
