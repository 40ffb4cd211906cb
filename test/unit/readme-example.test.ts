import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The README's connector and its test are the files in test/unit/readme/, which run as part of
// the unit tests; this keeps the README's text identical to them.
const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const blocks = [...read('../../README.md').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);

describe('README', () => {
  it('shows exactly the connector and the test that run in test/unit/readme', () => {
    expect(blocks).toEqual([read('./readme/lines.ts'), read('./readme/lines.test.ts')]);
  });
});
