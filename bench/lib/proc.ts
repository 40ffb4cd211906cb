/**
 * Reading Linux's /proc: CPU ticks and memory of a process and its descendants.
 * Everything here is synchronous and cheap (a few small reads), for sampling every 100 ms.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`, 100 on Linux). */
export const CLOCK_TICKS: number = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/** CPU times of one process, in seconds: its own (all threads) and those of its reaped children. */
export interface CpuTimes {
  readonly user: number;
  readonly system: number;
  readonly childrenUser: number;
  readonly childrenSystem: number;
}

/** CPU times from a `stat` file of /proc (a process's or one thread's), or undefined once it is gone. */
function statTimes(path: string): CpuTimes | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: split after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14..17.
  const tick = (i: number): number => Number(fields[i - 3] ?? 0) / CLOCK_TICKS;
  return { user: tick(14), system: tick(15), childrenUser: tick(16), childrenSystem: tick(17) };
}

/** CPU times of `pid` from /proc/<pid>/stat, or undefined once it is gone. */
export function cpuTimes(pid: number | 'self'): CpuTimes | undefined {
  return statTimes(`/proc/${pid}/stat`);
}

/** User + system CPU seconds of each thread of `pid` (`/proc/<pid>/task/<tid>/stat`), by thread id; empty once it is gone. */
export function threadCpuTimes(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    const times = statTimes(`/proc/${pid}/task/${tid}/stat`);
    if (times !== undefined) out.set(Number(tid), times.user + times.system);
  }
  return out;
}

/**
 * CPU seconds of a process's threads in three parts: its main thread (thread id = process id),
 * its busiest other thread (the kafkajs sender's producer thread, where there is one) and all the
 * rest (V8's collector helpers, libuv's pool, ...).
 */
export interface ThreadCpu {
  readonly mainS: number;
  readonly busiestOtherS: number;
  readonly restS: number;
}

/** {@link ThreadCpu} of the last seen times of each thread of `pid`. */
export function splitThreadCpu(pid: number, byThread: ReadonlyMap<number, number>): ThreadCpu {
  let mainS = 0;
  let busiestOtherS = 0;
  let othersS = 0;
  for (const [tid, seconds] of byThread) {
    if (tid === pid) {
      mainS = seconds;
      continue;
    }
    othersS += seconds;
    busiestOtherS = Math.max(busiestOtherS, seconds);
  }
  const round = (n: number) => Math.round(n * 100) / 100;
  return { mainS: round(mainS), busiestOtherS: round(busiestOtherS), restS: round(othersS - busiestOtherS) };
}

/** Memory figures of one process in KiB (`VmHWM` = its peak resident set so far), or undefined once it is gone. */
export function memory(pid: number): { rssKiB: number; hwmKiB: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM') };
}

/** `pid` and all its live descendants (from /proc/<pid>/task/<tid>/children). */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number): void => {
    out.push(p);
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const tid of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const c of children.split(' ')) if (c.trim() !== '') visit(Number(c));
    }
  };
  visit(pid);
  return out;
}

/** The 1-minute load average and the number of CPUs, for the record. */
export function loadAverage(): number {
  const text = readFileSync('/proc/loadavg', 'utf8');
  return Number(text.split(' ')[0]);
}
