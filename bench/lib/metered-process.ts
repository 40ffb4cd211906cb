/**
 * A child process whose CPU time and peak memory are measured:
 *
 * - CPU seconds: the increase of this process's `cutime + cstime` (/proc/self/stat) across the
 *   child's life. The kernel adds a child's user+system time, all threads and all of its own
 *   reaped descendants included, to its parent's counters when the parent reaps it, so this is
 *   exact to the clock tick (10 ms), provided the harness reaps no other child meanwhile (it
 *   starts none while measuring). The last /proc/<pid>/stat sample of the tree is kept as a
 *   cross-check and used if the counters did not move.
 * - Peak RSS: sampled every `sampleMs`: the largest of the root's `VmHWM` (the kernel's own
 *   high-water mark, so a peak between samples is not missed) and the summed `VmRSS` of the
 *   process tree.
 * - CPU per thread of the root process (main, busiest other, rest): each thread's last sample,
 *   so up to `sampleMs` of each thread's work before it ended is missing (the total above has it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { cpuTimes, memory, processTree, splitThreadCpu, type ThreadCpu, threadCpuTimes } from './proc.js';

/** How a metered process ended. */
export interface ProcessOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** `performance.now()` when the exit was seen. */
  readonly exitedAt: number;
  /** User + system CPU seconds of the process and its descendants. */
  readonly cpuSeconds: number;
  /** Peak resident set size, MiB. */
  readonly peakRssMiB: number;
  /** The root process's CPU by thread, sampled (see the file's comment). */
  readonly threadCpu: ThreadCpu;
  /** Resident set of the process tree at each sample: ms since the spawn, MiB. */
  readonly rssSamples: ReadonlyArray<readonly [number, number]>;
}

/** Options of {@link startMetered}. */
export interface MeteredOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  /** stdout and stderr go here. */
  readonly logFile: string;
  readonly sampleMs?: number;
}

/** A running metered child. */
export interface MeteredProcess {
  readonly pid: number;
  /** `performance.now()` just before the spawn. */
  readonly startedAt: number;
  /** Resolves when the process has exited (never rejects; a spawn error resolves with code null). */
  readonly outcome: Promise<ProcessOutcome>;
  readonly running: boolean;
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves with the outcome. */
  stop(timeoutMs: number): Promise<ProcessOutcome & { killed: boolean }>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Spawns `command args` with stdout/stderr to a log file and measures it until it exits. */
export function startMetered(command: string, args: readonly string[], options: MeteredOptions): MeteredProcess {
  const before = cpuTimes('self');
  const fd = openSync(options.logFile, 'a');
  const startedAt = performance.now();
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  live.add(child);
  const pid = child.pid ?? -1;
  let peakKiB = 0;
  const rssSamples: Array<readonly [number, number]> = [];
  let lastTreeCpu = 0;
  const byThread = new Map<number, number>();
  let running = true;
  const sample = (): void => {
    if (!running) return;
    let rss = 0;
    let cpu = 0;
    for (const p of processTree(pid)) {
      const m = memory(p);
      if (m !== undefined) {
        rss += m.rssKiB;
        if (p === pid) peakKiB = Math.max(peakKiB, m.hwmKiB);
      }
      const c = cpuTimes(p);
      if (c !== undefined) cpu += c.user + c.system + c.childrenUser + c.childrenSystem;
    }
    // Kept per thread id: a thread that ended (a replaced producer thread) keeps its last time.
    for (const [tid, seconds] of threadCpuTimes(pid)) byThread.set(tid, seconds);
    peakKiB = Math.max(peakKiB, rss);
    if (rss > 0) rssSamples.push([Math.round(performance.now() - startedAt), Math.round((rss / 1024) * 10) / 10]);
    if (cpu > 0) lastTreeCpu = cpu;
  };
  const timer = setInterval(sample, options.sampleMs ?? 100);
  const outcome = new Promise<ProcessOutcome>((resolve) => {
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (!running) return;
      running = false;
      clearInterval(timer);
      live.delete(child);
      const exitedAt = performance.now();
      const after = cpuTimes('self');
      const reaped =
        before !== undefined && after !== undefined
          ? after.childrenUser + after.childrenSystem - (before.childrenUser + before.childrenSystem)
          : 0;
      resolve({
        code,
        signal,
        exitedAt,
        cpuSeconds: Math.round((reaped > 0 ? reaped : lastTreeCpu) * 100) / 100,
        peakRssMiB: Math.round((peakKiB / 1024) * 10) / 10,
        threadCpu: splitThreadCpu(pid, byThread),
        rssSamples,
      });
    };
    child.once('exit', finish);
    child.once('error', () => finish(null, null));
  });
  sample();
  return {
    pid,
    startedAt,
    outcome,
    get running() {
      return running;
    },
    signal: (signal) => {
      if (running) child.kill(signal);
    },
    async stop(timeoutMs) {
      if (running) child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([
        outcome.then(() => false),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(true), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (killed) child.kill('SIGKILL');
      return { ...(await outcome), killed };
    },
  };
}
