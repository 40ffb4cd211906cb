/**
 * Preload that records what a Node.js process allocates, on every thread (the kafkajs producer
 * thread too): V8's sampling heap profiler, keeping the samples of objects the garbage collector
 * has freed since, which `node --heap-prof` drops (it keeps only what is still alive at its end).
 * One `.heapprofile` per thread, written TRIBUTARY_ALLOC_PROFILE_MS (default 5000) after the
 * thread starts or when it exits, whichever comes first, into TRIBUTARY_ALLOC_PROFILE_DIR (default
 * the system's temporary directory). A worker thread that is terminated before then writes none
 * (a terminated thread runs no exit handler): give it a time within the run.
 * TRIBUTARY_ALLOC_PROFILE_MINOR=0 leaves out what scavenges freed: what remains is what
 * outlived the young generation (was promoted), the garbage that costs most.
 *
 *   TRIBUTARY_ALLOC_PROFILE_DIR=/tmp/alloc npx tsx bench/run.ts --only=tributary --runs=1 \
 *     --records=3000000 --heartbeat-seconds=0 --node-options="--require=$PWD/bench/lib/alloc-profile.cjs"
 *   npx tsx bench/lib/alloc-summary.ts /tmp/alloc/alloc-thread1-<pid>.heapprofile
 */
const inspector = require('node:inspector');
const { isMainThread, threadId } = require('node:worker_threads');
const { mkdirSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const dir = process.env.TRIBUTARY_ALLOC_PROFILE_DIR || tmpdir();
const ms = Number(process.env.TRIBUTARY_ALLOC_PROFILE_MS || 5000);
if (!(ms > 0)) {
  throw new Error(
    `alloc-profile: TRIBUTARY_ALLOC_PROFILE_MS must be a number of milliseconds > 0, got '${process.env.TRIBUTARY_ALLOC_PROFILE_MS}'`,
  );
}
const session = new inspector.Session();
session.connect();
const fail = (what, e) => process.stderr.write(`alloc-profile: ${what} failed: ${e}\n`);
session.post(
  'HeapProfiler.startSampling',
  {
    samplingInterval: 8192,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.TRIBUTARY_ALLOC_PROFILE_MINOR !== '0',
  },
  (e) => e && fail('HeapProfiler.startSampling', e),
);
let written = false;
/** Stops sampling and writes the profile, once. The session answers at once (it runs on this thread). */
const write = () => {
  if (written) return;
  written = true;
  session.post('HeapProfiler.stopSampling', (e, result) => {
    if (e) return fail('HeapProfiler.stopSampling', e);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `alloc-${isMainThread ? 'main' : `thread${threadId}`}-${process.pid}.heapprofile`);
    writeFileSync(file, JSON.stringify(result.profile));
    process.stderr.write(`alloc-profile: wrote ${file}\n`);
  });
};
setTimeout(write, ms).unref();
process.on('exit', write);
