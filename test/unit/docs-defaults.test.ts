/**
 * The defaults the documentation's settings tables give are the code's. Each page is read with
 * the config definitions its table describes; a row whose key one of them declares, and whose
 * default cell starts with a literal (`60000`, `http://127.0.0.1:8083`), must give that key's
 * default; a row that says `required` must name a key without one. Rows of keys no definition
 * here declares (prefixes, keys read elsewhere) are not compared, but every page must compare
 * some, so a table that stops matching the format fails here too.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fileSourceConfig } from '../../examples/file-source/src/file-source-config.js';
import { postgresCdcConfig } from '../../examples/postgres-cdc/src/postgres-cdc-config.js';
import type { ConfigDef } from '../../src/api/config-def.js';
import { metricsConfig } from '../../src/metrics/worker-metrics.js';
import { restConfig } from '../../src/rest/rest-options.js';
import { runtimeConnectorConfig } from '../../src/runtime/connector-config.js';
import { distributedConfig } from '../../src/runtime/distributed/distributed-settings.js';
import { connectorExactlyOnceConfig, workerExactlyOnceConfig } from '../../src/runtime/exactly-once-settings.js';
import { connectorTaskConfig, workerTaskConfig } from '../../src/runtime/task-settings.js';
import { workerBoolean } from '../../src/runtime/worker-booleans.js';
import { itemsConfig } from '../../templates/basic-poll/src/items-config.js';
import { changesConfig } from '../../templates/push-heartbeat/src/changes-config.js';

/** A key's default as the docs write it, or `undefined` for a key without one. */
type Defaults = ReadonlyMap<string, string | undefined>;

function defaultsOf(...defs: Array<ConfigDef<unknown>>): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const def of defs)
    for (const [name, key] of Object.entries(def.keys))
      out.set(name, key.default === undefined ? undefined : String(key.default));
  return out;
}

/** The boolean worker settings whose default does not depend on the machine. */
const booleans = new Map(
  (['topic.tracking.enable', 'topic.tracking.allow.reset', 'topic.creation.enable'] as const).map((k) => [
    k,
    String(workerBoolean({}, k)),
  ]),
);

const worker = defaultsOf(restConfig, metricsConfig, workerTaskConfig, workerExactlyOnceConfig);
const connector = defaultsOf(runtimeConnectorConfig, connectorTaskConfig, connectorExactlyOnceConfig);

const PAGES: Record<string, Defaults> = {
  'README.md': new Map([...worker, ...connector, ...booleans]),
  'docs/rest.md': new Map([...defaultsOf(restConfig), ...booleans]),
  'docs/metrics.md': defaultsOf(metricsConfig),
  'docs/distributed.md': defaultsOf(distributedConfig),
  'docs/exactly-once.md': new Map([...defaultsOf(workerExactlyOnceConfig, connectorExactlyOnceConfig)]),
  'docs/transforms.md': defaultsOf(connectorTaskConfig),
  'examples/file-source/README.md': new Map([...defaultsOf(fileSourceConfig), ...defaultsOf(runtimeConnectorConfig)]),
  'examples/postgres-cdc/README.md': new Map([...defaultsOf(postgresCdcConfig), ...defaultsOf(connectorTaskConfig)]),
  'templates/basic-poll/README.md': defaultsOf(itemsConfig),
  'templates/push-heartbeat/README.md': new Map([...defaultsOf(changesConfig), ...defaultsOf(connectorTaskConfig)]),
};

interface Row {
  readonly line: number;
  readonly keys: string[];
  readonly cell: string;
}

/** The rows of every table with a `default` column: the keys of the first cell and the default cell. */
function rows(text: string): Row[] {
  const lines = text.split('\n');
  const out: Row[] = [];
  let column = -1;
  for (const [i, line] of lines.entries()) {
    if (!line.startsWith('|')) {
      column = -1;
      continue;
    }
    const cells = line
      .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
      .split('|')
      .map((c) => c.trim());
    if (column < 0) {
      column = cells.findIndex((c) => c.toLowerCase() === 'default');
      continue;
    }
    if (/^:?-+:?$/.test(cells[0] ?? '')) continue;
    const keys = [...(cells[0] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
    out.push({ line: i + 1, keys, cell: cells[column] ?? '' });
  }
  return out;
}

describe('defaults in the settings tables', () => {
  for (const [page, defaults] of Object.entries(PAGES)) {
    it(`${page} gives the code's defaults`, () => {
      const text = readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8');
      const wrong: string[] = [];
      let compared = 0;
      for (const row of rows(text)) {
        if (row.keys.length === 0 || !row.keys.every((k) => defaults.has(k))) continue;
        if (/^\(?required\)?/.test(row.cell)) {
          compared += 1;
          for (const k of row.keys)
            if (defaults.get(k) !== undefined)
              wrong.push(`${page}:${row.line}: ${k} is documented required, has default ${defaults.get(k)}`);
          continue;
        }
        // The literals the cell starts with, in backticks or bare numbers (`a`, `b` or 5 / 25: one
        // per key; or one for all), bold or not.
        const literal = '(?:`[^`]*`|-?\\d+(?![\\w.]))';
        const lead = new RegExp(`^\\**(${literal}(?:\\s*[,/]\\s*${literal})*)`).exec(row.cell)?.[1];
        if (lead === undefined) continue;
        const literals = [...lead.matchAll(/`([^`]*)`|(-?\d+)/g)].map((m) => (m[1] ?? m[2]) as string);
        if (literals.length !== 1 && literals.length !== row.keys.length) continue;
        // `offset.flush.interval.ms` as a default is that key's value, not a literal.
        if (literals.some((l) => /^[a-z]+(\.[a-z]+)+$/.test(l) && !l.includes('/'))) continue;
        compared += 1;
        row.keys.forEach((k, i) => {
          const documented = literals.length === 1 ? literals[0] : literals[i];
          const actual = defaults.get(k);
          // A declared default of '' stands for "not set": the value in force is worked out
          // elsewhere (access.control.allow.methods: GET,POST,HEAD), which the page may give.
          if (actual === '' && documented !== '') return;
          if (documented !== actual)
            wrong.push(
              `${page}:${row.line}: ${k} documented \`${documented}\`, the code's default is ${actual === undefined ? 'none' : `\`${actual}\``}`,
            );
        });
      }
      expect(wrong).toEqual([]);
      expect(compared).toBeGreaterThan(0);
    });
  }

  it("the CLI's --help gives the code's defaults (src/cli/main.ts)", () => {
    const help = readFileSync(new URL('../../src/cli/main.ts', import.meta.url), 'utf8');
    const at = help.indexOf("as Kafka Connect's distributed worker names them");
    expect(at).toBeGreaterThan(0);
    const sections: Array<[string, Defaults]> = [
      [help.slice(0, at), PAGES['README.md'] as Defaults],
      [help.slice(at), defaultsOf(distributedConfig)],
    ];
    const wrong: string[] = [];
    let compared = 0;
    for (const [text, defaults] of sections) {
      for (const m of text.matchAll(/^ {2}([a-z][\w.]*)\s{2,}.*?\(default ([^\s);]+?)(?=:?\s|[);])/gm)) {
        const [, key, documented] = m as unknown as [string, string, string];
        if (!defaults.has(key)) continue;
        compared += 1;
        if (defaults.get(key) !== documented)
          wrong.push(`${key}: --help says ${documented}, the code's default is ${defaults.get(key)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(compared).toBeGreaterThanOrEqual(6);
  });
});
