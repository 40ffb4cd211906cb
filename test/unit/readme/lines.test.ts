import { MockRuntime } from 'tributary-connect/testing';
import { describe, expect, it } from 'vitest';
import { LinesTask } from './lines.js';

describe('LinesTask', () => {
  it('resumes after the last committed line, with no gap and no repeat', async () => {
    const run = await MockRuntime.start(LinesTask, {
      config: { file: 'a.txt', topic: 'lines' },
      committedOffsets: [{ partition: { file: 'a.txt' }, offset: { line: 1 } }],
    });
    await run.advanceBy('1s');
    expect(run.records('lines').map((r) => r.value)).toEqual([{ text: 'beta' }, { text: 'gamma' }]);
    await run.flush();
    expect(await run.committedOffset({ file: 'a.txt' })).toEqual({ line: 3 });
    await run.stop();
  });
});
