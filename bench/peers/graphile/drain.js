#!/usr/bin/env node
"use strict";
// drain.js drains no-op jobs with graphile-worker on PostgreSQL, for
// scripts/peerbench: the same work as leasehold's drain benchmark, done by
// a peer, on the same server. Each step is its own process so that the
// caller can read the server's counters between them:
//
//   node drain.js prepare --db URL --schema S --jobs N   # install, add N jobs
//   node drain.js drain   --db URL --schema S --jobs N   # time a drain
//   node drain.js drop    --db URL --schema S            # drop S
//
// drain starts the worker processes (each loads graphile-worker, then waits
// for the word to go), times from that word until every job's completion
// is written (the jobs table is empty: graphile-worker deletes a completed
// job), and prints one JSON line.

process.env.NO_LOG_SUCCESS = "1"; // read when graphile-worker loads

const { parseArgs } = require("node:util");
const { fork } = require("node:child_process");
const { Client } = require("pg");
const settings = require("./settings.js");

/** Jobs per addJobs call. */
const addChunk = 10_000;
/** How often the parent checks the table once every job has run, ms. */
const emptyPollMs = 2;
/** Bound on one drain, ms. */
const drainTimeoutMs = 10 * 60 * 1000;
/** The job's task identifier. */
const task = "peerbench_noop";
/**
 * Marks the harness's own statements so that the statement count leaves
 * them out.
 */
const probe = "/* peerbench-probe */";

function options(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      db: { type: "string" },
      schema: { type: "string", default: "peerbench_graphile" },
      jobs: { type: "string", default: "100000" },
      processes: { type: "string", default: String(settings.defaultProcesses) },
      concurrency: { type: "string", default: String(settings.defaultConcurrency) },
    },
  });
  const o = {
    step: positionals[0],
    url: values.db,
    schema: values.schema,
    jobs: Number(values.jobs),
    processes: Number(values.processes),
    concurrency: Number(values.concurrency),
  };
  if (!o.url || positionals.length !== 1) {
    throw new Error("usage: drain.js prepare|drain|drop --db URL [--schema S] [--jobs N] [--processes P] [--concurrency C]");
  }
  for (const k of ["jobs", "processes", "concurrency"]) {
    if (!(Number.isInteger(o[k]) && o[k] > 0)) throw new Error(`--${k} must be a positive integer`);
  }
  return o;
}

function quiet() {
  const { Logger } = require("graphile-worker");
  return new Logger(() => (level, message) => {
    if (level === "error") console.error(message);
  });
}

async function prepare(o) {
  const { runMigrations, makeWorkerUtils } = require("graphile-worker");
  const logger = quiet();
  await runMigrations({ connectionString: o.url, schema: o.schema, logger });
  const utils = await makeWorkerUtils({ connectionString: o.url, schema: o.schema, logger });
  try {
    const chunk = Array.from({ length: Math.min(o.jobs, addChunk) }, () => ({ identifier: task, payload: {} }));
    for (let left = o.jobs; left > 0; left -= chunk.length) {
      await utils.addJobs(chunk.slice(0, Math.min(left, chunk.length)));
    }
  } finally {
    await utils.release();
  }
}

async function withClient(o, fn) {
  const c = new Client({ connectionString: o.url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function drop(o) {
  await withClient(o, (c) => c.query(`DROP SCHEMA IF EXISTS "${o.schema.replace(/"/g, '""')}" CASCADE`));
}

/** worker is one worker process: it reports its completed jobs to the parent. */
async function worker(o) {
  const { run } = require("graphile-worker");
  const { EventEmitter } = require("node:events");
  const events = new EventEmitter();
  let done = 0;
  let failed = 0;
  events.on("job:success", () => done++);
  events.on("job:error", () => failed++);
  const report = setInterval(() => process.send({ done, failed }), 5);
  await new Promise((resolve) => process.once("message", resolve)); // go
  const runner = await run({
    preset: settings.preset(o, events, quiet()),
    taskList: { [task]: async () => {} },
    noHandleSignals: true,
  });
  await new Promise((resolve) => process.once("message", resolve)); // stop
  await runner.stop();
  clearInterval(report);
  process.send({ done, failed, stopped: true });
  process.disconnect();
}

function startWorkers(o) {
  return Array.from({ length: o.processes }, () => {
    const child = fork(__filename, ["worker", ...process.argv.slice(3)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    child.report = { done: 0, failed: 0 };
    child.on("message", (m) => (child.report = m));
    child.exited = new Promise((resolve, reject) =>
      child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`worker exited with ${code}`)))),
    );
    return child;
  });
}

/** graphileVersion is the installed graphile-worker's version. */
function graphileVersion() {
  const path = require("node:path");
  const file = path.join(path.dirname(require.resolve("graphile-worker")), "..", "package.json");
  return JSON.parse(require("node:fs").readFileSync(file, "utf8")).version;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** waitAll waits until the workers report want jobs run and the table is empty. */
async function waitAll(o, children, c, deadline) {
  const table = `"${o.schema.replace(/"/g, '""')}"._private_jobs`;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`timed out after ${drainTimeoutMs} ms`);
    const done = children.reduce((n, ch) => n + ch.report.done, 0);
    const failed = children.reduce((n, ch) => n + ch.report.failed, 0);
    if (failed > 0) throw new Error(`${failed} jobs failed`);
    if (done >= o.jobs) {
      const r = await c.query(`${probe} SELECT NOT EXISTS (SELECT FROM ${table}) AS empty`);
      if (r.rows[0].empty) return;
    }
    await sleep(done >= o.jobs ? emptyPollMs : 5);
  }
}

async function drain(o) {
  const children = startWorkers(o);
  await Promise.all(children.map((ch) => new Promise((resolve) => ch.once("message", resolve)))); // loaded
  await withClient(o, async (c) => {
    const start = process.hrtime.bigint();
    children.forEach((ch) => ch.send("go"));
    await waitAll(o, children, c, Date.now() + drainTimeoutMs);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    children.forEach((ch) => ch.send("stop"));
    await Promise.all(children.map((ch) => ch.exited));
    const version = graphileVersion();
    console.log(JSON.stringify({
      peer: "graphile-worker", version, jobs: o.jobs, seconds,
      jobs_per_sec: o.jobs / seconds, settings: settings.settings(o),
    }));
  });
}

const steps = { prepare, drain, drop, worker };

async function main() {
  const o = options(process.argv.slice(2));
  const step = steps[o.step];
  if (!step) throw new Error(`unknown step ${o.step} (want prepare, drain or drop)`);
  await step(o);
}

main().catch((e) => {
  console.error("graphile:", e.message || e);
  process.exit(1);
});
