/**
 * Summarises a `.heapprofile` of V8's sampling heap profiler (as bench/lib/alloc-profile.cjs
 * writes them): the sampled bytes per allocation site, a site being the allocating function and
 * the two frames that called it, with bundle positions mapped back to their sources.
 *
 *   npx tsx bench/lib/alloc-summary.ts <file.heapprofile> [top=25]
 */
import { readFileSync } from 'node:fs';
import type { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { locate } from './cpu-profile.js';

interface HeapNode {
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
    readonly columnNumber: number;
  };
  readonly selfSize: number;
  readonly children?: readonly HeapNode[];
}

/** Sampled bytes per allocation site (`caller's caller < caller < allocating function`), largest first, and their total. */
export function allocationSites(profile: { readonly head: HeapNode }): { total: number; sites: Array<[string, number]> } {
  const maps = new Map<string, SourceMap | null>();
  const bySite = new Map<string, number>();
  let total = 0;
  const name = (node: HeapNode): string => {
    const { file, line } = locate(node.callFrame, maps);
    return `${node.callFrame.functionName || '(anonymous)'} ${file}:${line}`;
  };
  const walk = (node: HeapNode, stack: readonly string[]): void => {
    const here = [...stack.slice(-2), name(node)];
    if (node.selfSize > 0) {
      total += node.selfSize;
      const site = here.join(' < ');
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children ?? []) walk(child, here);
  };
  walk(profile.head, []);
  return { total, sites: [...bySite].sort((a, b) => b[1] - a[1]) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [path, top = '25'] = process.argv.slice(2);
  if (path === undefined || !(Number(top) > 0)) {
    console.error('usage: npx tsx bench/lib/alloc-summary.ts <file.heapprofile> [top=25]');
    process.exit(2);
  }
  const { total, sites } = allocationSites(JSON.parse(readFileSync(path, 'utf8')) as { head: HeapNode });
  console.log(`${(total / 1e6).toFixed(1)} MB sampled; by site (caller's caller < caller < allocating function):`);
  for (const [site, bytes] of sites.slice(0, Number(top))) console.log(`${(bytes / 1e6).toFixed(2).padStart(9)} MB  ${site}`);
}
