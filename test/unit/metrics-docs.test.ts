import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CERTIFICATE_EXPIRY_METRIC, METRICS } from '../../src/metrics/metric-table.js';

const doc = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
/** The first cell of every table row that names a metric. */
const documented = [...doc.matchAll(/^\| `((?:kafka_connect|tributary)_[a-z0-9_]+)` \| (counter|gauge) \|/gm)].map((m) => ({
  name: m[1],
  type: m[2],
}));

describe('docs/metrics.md', () => {
  it('lists every exported metric, with its type, and no other', () => {
    const exported = [...METRICS, CERTIFICATE_EXPIRY_METRIC].map((m) => ({ name: m.name, type: m.type }));
    expect([...documented].sort((a, b) => String(a.name).localeCompare(String(b.name)))).toEqual(
      [...exported].sort((a, b) => a.name.localeCompare(b.name)),
    );
  });

  it('has no metric twice', () => {
    const all = [...METRICS, CERTIFICATE_EXPIRY_METRIC];
    expect(new Set(all.map((m) => m.name)).size).toBe(all.length);
  });
});
