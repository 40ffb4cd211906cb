import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { splitThreadCpu, threadCpuTimes } from '../../bench/lib/proc.js';

describe("the benchmark's CPU by thread", () => {
  it('splits a process into its main thread, its busiest other thread and the rest', () => {
    const times = new Map([
      [200, 0.5],
      [100, 3.25],
      [201, 2.0],
      [202, 0.25],
    ]);
    expect(splitThreadCpu(100, times)).toEqual({ mainS: 3.25, busiestOtherS: 2, restS: 0.75 });
    expect(splitThreadCpu(100, new Map([[100, 1]]))).toEqual({ mainS: 1, busiestOtherS: 0, restS: 0 });
  });

  it("reads every thread's CPU from /proc: a thread that spins shows it", async () => {
    const before = threadCpuTimes(process.pid);
    expect(before.has(process.pid)).toBe(true);
    // A worker thread that spins for 400 ms of wall time, says so, and waits to be told to end:
    // its thread is still there when the times are read.
    const spinner = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const end = Date.now() + 400; while (Date.now() < end) {}
       parentPort.postMessage('spun');
       parentPort.once('message', () => process.exit(0));`,
      { eval: true },
    );
    await new Promise((resolve) => spinner.once('message', resolve));
    const after = threadCpuTimes(process.pid);
    spinner.postMessage('end');
    await new Promise((resolve) => spinner.once('exit', resolve));
    const grown = [...after].filter(([tid]) => tid !== process.pid).map(([tid, seconds]) => seconds - (before.get(tid) ?? 0));
    // Even with the machine busy it got a tenth of a core for those 400 ms.
    expect(Math.max(...grown)).toBeGreaterThanOrEqual(0.1);
    expect(threadCpuTimes(2 ** 22 + 12345).size).toBe(0);
  });
});
