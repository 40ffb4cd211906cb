/**
 * Profiles one run of each selected side (Tributary with either sender, the raw kafkajs and raw
 * librdkafka producers) with `node --cpu-prof` (same workload, same broker; profiling slows each,
 * so these runs are not in the table) and summarises where each spent its main thread's time.
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

export interface ProfiledRun {
  readonly result: RunResult;
  readonly profileFile: string;
  readonly summary: ProfileSummary;
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
    const file = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).sort()[0];
    if (file === undefined) throw new Error(`node --cpu-prof wrote no profile in ${dir}`);
    const profileFile = join(dir, file);
    out.push({ result, profileFile, summary: summariseProfile(profileFile, 30) });
  }
  return out;
}
