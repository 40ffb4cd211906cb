/**
 * Profiles one run of each selected side (Tributary with either sender, the raw kafkajs and raw
 * librdkafka producers) with `node --cpu-prof` (same workload, same broker; profiling slows each,
 * so these runs are not in the table) and summarises where each of its threads spent its time:
 * the main thread first, then each worker thread (the kafkajs sender's producer thread).
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { kafkajsRaw } from '../contenders/kafkajs-raw.js';
import { librdkafkaRaw } from '../contenders/librdkafka-raw.js';
import { tributary } from '../contenders/tributary.js';
import type { BenchBuild } from './build.js';
import { type ProfileSummary, summariseProfile } from './cpu-profile.js';
import { measureRun, type RunEnvironment, type RunResult } from './measure-run.js';
import type { BenchSettings } from './settings.js';

/** One thread's profile of a profiled run. */
export interface ThreadProfile {
  /** Node's thread id: 0 for the main thread. */
  readonly threadId: number;
  readonly profileFile: string;
  readonly summary: ProfileSummary;
}

export interface ProfiledRun {
  readonly result: RunResult;
  /** The main thread's profile first, then the worker threads' in order of their ids. */
  readonly threads: readonly ThreadProfile[];
}

/** The thread id in a name `node --cpu-prof` gives its files: CPU.<date>.<time>.<pid>.<thread id>.<sequence>.cpuprofile. */
export function threadIdOf(file: string): number | undefined {
  const m = /^CPU\.\d+\.\d+\.\d+\.(\d+)\.\d+\.cpuprofile$/.exec(file);
  return m === null ? undefined : Number(m[1]);
}

/** "the main thread" or "thread 1 (a worker thread)", for a profile's heading. */
export function threadName(threadId: number): string {
  return threadId === 0 ? 'the main thread' : `thread ${threadId} (a worker thread)`;
}

export async function profileRuns(settings: BenchSettings, env: RunEnvironment, built: BenchBuild): Promise<ProfiledRun[]> {
  const out: ProfiledRun[] = [];
  const sides = [
    { id: 'tributary', make: (o: string[]) => tributary(settings, built.tributaryCli, built.fileSource, o) },
    { id: 'kafkajs', make: (o: string[]) => kafkajsRaw(settings, built.kafkajsRaw, o) },
    { id: 'librdkafka', make: (o: string[]) => tributary(settings, built.tributaryCli, built.fileSource, o, true) },
    { id: 'librdkafka-raw', make: (o: string[]) => librdkafkaRaw(settings, built.librdkafkaRaw, o) },
  ];
  for (const side of sides) {
    if (!settings.only.has(side.id)) continue;
    const dir = join(env.runsDir, `profile-${side.id}`);
    await mkdir(dir, { recursive: true });
    const contender = side.make([...settings.nodeOptions, '--cpu-prof', `--cpu-prof-dir=${dir}`]);
    const result = await measureRun(contender, 0, env);
    const threads: ThreadProfile[] = [];
    for (const file of await readdir(dir)) {
      if (!file.endsWith('.cpuprofile')) continue;
      const threadId = threadIdOf(file);
      if (threadId === undefined) throw new Error(`${join(dir, file)}: not a name node --cpu-prof gives its profiles`);
      const profileFile = join(dir, file);
      threads.push({ threadId, profileFile, summary: summariseProfile(profileFile, 30) });
    }
    if (!threads.some((t) => t.threadId === 0)) throw new Error(`node --cpu-prof wrote no profile of the main thread in ${dir}`);
    threads.sort((a, b) => a.threadId - b.threadId);
    out.push({ result, threads });
  }
  return out;
}
