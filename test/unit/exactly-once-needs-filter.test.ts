/**
 * Exactly-once reads its offsets back under read_committed; kafkajs 2.2.4's own filter can take
 * records of aborted transactions for committed ones (issue 40). A worker whose kafkajs runs
 * without Tributary's fix of that filter must refuse exactly-once, not warn and lose data.
 */
import { describe, expect, it, vi } from 'vitest';

vi.mock('../../src/kafka/kafkajs-fixes.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/kafka/kafkajs-fixes.js')>();
  return {
    ...real,
    kafkajsFixes: {
      applied: real.kafkajsFixes.applied.filter((f) => f !== 'filterAbortedMessages'),
      notApplied: ['filterAbortedMessages: kafkajs was loaded before Tributary'],
    },
  };
});

const { kafkaAdapters } = await import('../../src/cli/kafka-adapters.js');
const { recordingLogger } = await import('../helpers/recording-logger.js');
type LoggedLine = import('../helpers/recording-logger.js').LoggedLine;

describe('a worker whose kafkajs lacks the read_committed fix', () => {
  it('refuses exactly.once.source.support=enabled at start, saying which fix is missing and why', () => {
    const logger = recordingLogger([]);
    let thrown: unknown;
    try {
      kafkaAdapters({ 'bootstrap.servers': '127.0.0.1:1', 'exactly.once.source.support': 'enabled' }, logger);
    } catch (e) {
      thrown = e;
    }
    expect((thrown as { problems?: string[] }).problems).toEqual([
      expect.stringMatching(
        /^exactly\.once\.source\.support=enabled needs Tributary's fix of kafkajs's read_committed filter, which is not in force \(filterAbortedMessages: kafkajs was loaded before Tributary\)/,
      ),
    ]);
  });

  it('still starts without exactly-once (a warning says what runs unfixed)', async () => {
    const lines: LoggedLine[] = [];
    const adapters = kafkaAdapters({ 'bootstrap.servers': '127.0.0.1:1' }, recordingLogger(lines));
    await adapters.close();
    expect(lines.some((l) => l.level === 'warn' && l.fields.event === 'kafkajs.fixes')).toBe(true);
  });
});
