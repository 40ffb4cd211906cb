import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeSourceTask } from 'tributary-connect/testing';
import { afterAll } from 'vitest';
import { FileSourceConnector, FileSourceTask } from '../src/index.js';

// The suite is generated when the file is collected, so the fixture files are written then.
const dir = mkdtempSync(join(tmpdir(), 'file-source-contract-'));
const a = join(dir, 'a.log');
const b = join(dir, 'b.log');
writeFileSync(a, Array.from({ length: 12 }, (_, i) => `a line ${i}\n`).join(''));
writeFileSync(b, 'b line 0\nb line 1\nb line 2\nb line 3\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeSourceTask(FileSourceTask, {
  config: {
    connector: FileSourceConnector,
    valid: { files: `${a},${b}`, topic: 'lines', 'batch.size': '5' },
    invalid: { topic: 'lines', 'batch.size': '0' },
    invalidKeys: ['file', 'batch.size'],
  },
  // A position alone would not tell a line read from the wrong byte: compare the text too.
  sequence: (record) => `${record.sourceOffset.position}:${String(record.value)}`,
  skip: {
    farFutureOffset:
      'a position past the end of a file means the file was truncated, and a truncated file is read again from the start (see README)',
  },
});
