/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function and per
 * category (kafkajs encoding, rxjs, Tributary's runtime and sender, the connector, GC, ...).
 * Positions in bundled files are mapped back to their sources through the bundle's source map
 * (`<file>.map`), so bench/.work/build/tributary-cli.js shows up as src/runtime/..., src/kafka/...
 *
 *   npx tsx bench/lib/cpu-profile.ts <file.cpuprofile> [top=30]
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
    readonly columnNumber: number;
  };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time of one function or category. */
export interface SelfTime {
  readonly name: string;
  readonly ms: number;
  /** Share of the sampled time that was not idle. */
  readonly pct: number;
}

export interface ProfileSummary {
  readonly totalMs: number;
  readonly idleMs: number;
  readonly functions: readonly SelfTime[];
  readonly categories: readonly SelfTime[];
}

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/**
 * Where a profile's call frame came from, after source maps: a path relative to the repo, or a
 * V8 pseudo-name. `maps` caches each bundle's source map (null: none).
 */
export function locate(
  callFrame: { readonly url: string; readonly lineNumber: number; readonly columnNumber: number },
  maps: Map<string, SourceMap | null>,
): { file: string; line: number } {
  const { url, lineNumber, columnNumber } = callFrame;
  if (!url.startsWith('file://')) return { file: url, line: lineNumber + 1 };
  let map = maps.get(url);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8')));
    } catch {
      map = null;
    }
    maps.set(url, map);
  }
  let file = fileURLToPath(url);
  let line = lineNumber + 1;
  if (map !== null && lineNumber >= 0) {
    const entry = map.findEntry(lineNumber, columnNumber) as { originalSource?: string; originalLine?: number };
    if (entry.originalSource) {
      // Sources are named relative to the bundle (e.g. ../../src/runtime/task-runner.ts) or as file URLs.
      file = entry.originalSource.startsWith('file://')
        ? fileURLToPath(entry.originalSource)
        : resolve(dirname(file), entry.originalSource);
      line = (entry.originalLine ?? 0) + 1;
    }
  }
  return { file: relative(ROOT, resolve(file)), line };
}

/** The category a piece of code belongs to (`file` relative to the repository, or to a checkout given to --tributary-from). */
export function categoryOf(functionName: string, file: string): string {
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'V8/native (program)';
  if (file.includes('node_modules/kafkajs/src/protocol')) return 'kafkajs: protocol encode/decode (incl. CRC32C)';
  if (file.includes('node_modules/kafkajs/src/producer')) return 'kafkajs: producer (partitioning, grouping)';
  if (file.includes('node_modules/kafkajs/src/network')) return 'kafkajs: network (connection, request queue)';
  if (file.includes('node_modules/kafkajs')) return 'kafkajs: other';
  if (file.includes('node_modules/rxjs')) return 'rxjs';
  if (file.includes('node_modules/pino') || file.includes('node_modules/sonic-boom')) return 'pino (logging)';
  if (file.includes('node_modules/io-ts') || file.includes('node_modules/fp-ts')) return 'io-ts / fp-ts';
  if (file.includes('node_modules/')) return 'other packages';
  // The path inside a checkout: from its src/, examples/ or bench/ folder on.
  const inRepo = /(?:^|\/)((?:src|examples|bench)\/.*)$/.exec(file)?.[1];
  if (inRepo === undefined) return 'Node built-ins (Buffer, fs, streams, timers)';
  if (inRepo.startsWith('src/kafka/')) return 'tributary: src/kafka (sender)';
  if (inRepo.startsWith('src/runtime/')) return 'tributary: src/runtime (pipeline)';
  if (inRepo.startsWith('src/')) return `tributary: ${inRepo.split('/').slice(0, 2).join('/')}`;
  if (inRepo.startsWith('examples/')) return `connector: ${inRepo.split('/').slice(0, 2).join('/')}`;
  return 'bench code';
}

export function summariseProfile(path: string, top = 30): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // Sample i lasts until sample i+1: its duration is the next time delta.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] as number;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, dt));
  }
  const maps = new Map<string, SourceMap | null>();
  const functions = new Map<string, number>();
  const categories = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const where = locate(node.callFrame, maps);
    const fn = node.callFrame.functionName || '(anonymous)';
    const category = categoryOf(fn, where.file);
    totalUs += us;
    if (category === 'idle') {
      idleUs += us;
      continue;
    }
    const name = where.file.startsWith('(') || where.file === '' ? fn : `${fn}  ${where.file}:${where.line}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    categories.set(category, (categories.get(category) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const list = (m: Map<string, number>, n: number): SelfTime[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: us / 1000, pct: (us / busyUs) * 100 }));
  return {
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    functions: list(functions, top),
    categories: list(categories, 100),
  };
}

/** The summary as Markdown tables. */
export function profileMarkdown(summary: ProfileSummary, thread = 'the main thread'): string {
  const rows = (items: readonly SelfTime[]) =>
    items.map((s) => `| ${s.name.replaceAll('|', '\\|')} | ${s.ms.toFixed(0)} | ${s.pct.toFixed(1)}% |`).join('\n');
  return [
    `Sampled ${(summary.totalMs / 1000).toFixed(2)} s of ${thread}, ${(summary.idleMs / 1000).toFixed(2)} s idle; shares below are of the busy time.`,
    '',
    '| category (self time) | ms | share |',
    '|---|---:|---:|',
    rows(summary.categories),
    '',
    '| function (self time) | ms | share |',
    '|---|---:|---:|',
    rows(summary.functions),
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [file, top] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write('Usage: npx tsx bench/lib/cpu-profile.ts <file.cpuprofile> [top=30]\n');
    process.exit(2);
  }
  process.stdout.write(profileMarkdown(summariseProfile(file, Number(top ?? 30))));
}
