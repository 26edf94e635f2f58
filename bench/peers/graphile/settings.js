"use strict";
// The "fast settings" of graphile-worker's performance page
// (worker.graphile.org/docs/performance) and of the perfTest it quotes
// (perfTest/graphile.config.js and run.js in its repository): each worker
// process runs 24 jobs at once with a pool of 25 connections, a local
// queue of 500 jobs fetched in one statement (refetching after 10 ms when
// a fetch comes back short) and batched completions
// (completeJobBatchDelay 0: the jobs completed in one tick of the event
// loop are deleted in one statement). Prepared statements are on (the
// default) and success logging off (NO_LOG_SUCCESS), as in perfTest.
//
// perfTest runs 4 such processes on its machine. On two cores shared with
// the database, 4 drained slower than 1 or 2 (docs/benchmarks.md), so the
// default is one process per core, as Node programs are deployed.

/** Worker processes started by a drain: one per core (perfTest: 4). */
const defaultProcesses = require("node:os").availableParallelism();
/** Jobs each process runs at once (perfTest's CONCURRENCY). */
const defaultConcurrency = 24;

/** tuning is the worker options of one process with concurrency jobs at once. */
function tuning(concurrency) {
  return {
    concurrentJobs: concurrency,
    maxPoolSize: concurrency + 1,
    localQueue: { size: 500, refetchDelay: { durationMs: 10 } },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    preparedStatements: true,
    gracefulShutdownAbortTimeout: 2500,
  };
}

/**
 * preset returns the graphile-config preset of one worker process.
 * @param {{url: string, schema: string, concurrency: number}} o
 * @param {import("events").EventEmitter} events receives the worker events
 * @param {import("graphile-worker").Logger} logger
 */
function preset(o, events, logger) {
  return { worker: { connectionString: o.url, schema: o.schema, ...tuning(o.concurrency), events, logger } };
}

/** settings describes the settings in the JSON line. */
function settings(o) {
  return { processes: o.processes, ...tuning(o.concurrency), NO_LOG_SUCCESS: true };
}

module.exports = { defaultProcesses, defaultConcurrency, preset, settings };
