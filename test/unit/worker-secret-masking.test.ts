import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { Transformation, type TransformRecord } from '../../src/api/transformation.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

/** A transform with a PASSWORD-typed key whose name says nothing of a secret (`token`). */
class SignRecords extends Transformation<{ token: string }> {
  readonly config = defineConfig({
    token: { type: configTypes.string, description: 'Signing token.', password: true },
  });
  apply(record: TransformRecord): TransformRecord {
    return record;
  }
}

const SECRET = 'tr4nsform-t0ken-value';

function signingWorker(lines: LoggedLine[]): Worker {
  return new Worker({
    config: { 'offset.flush.interval.ms': '60000' },
    offsetStore: new MemoryOffsetStore(),
    createSender: async () => new MockSender(systemClock),
    loadConnector: async () => FixtureConnector,
    loadTransform: async () => SignRecords,
    logger: recordingLogger(lines),
  });
}

const config = {
  'connector.class': 'fixture',
  topic: 't',
  count: '1',
  transforms: 'sign',
  'transforms.sign.type': './sign.js#SignRecords',
  'transforms.sign.token': SECRET,
};

describe('a transform password', () => {
  it('is shown [hidden] by the connector config and never appears in the log', async () => {
    const lines: LoggedLine[] = [];
    const worker = signingWorker(lines);
    await worker.start();
    await worker.createConnector('signed', config);
    expect(worker.describeConnector('signed').config['transforms.sign.token']).toBe('[hidden]');
    expect(JSON.stringify(worker.taskConfigs('signed'))).not.toContain(SECRET);
    expect(lines.some((l) => l.fields.event === 'connector.created')).toBe(true);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
    await worker.stop();
  });

  it('sent back [hidden] keeps its value, as a connector password does', async () => {
    const lines: LoggedLine[] = [];
    const worker = signingWorker(lines);
    await worker.start();
    await worker.createConnector('signed', config);
    const shown = worker.describeConnector('signed').config;
    await worker.putConnectorConfig('signed', { ...shown, count: '2' });
    expect(worker.connector('signed')?.config['transforms.sign.token']).toBe(SECRET);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
    await worker.stop();
  });
});

describe('consumer.* worker keys', () => {
  it('are named in a WARN at start: no consumer of this worker applies them', async () => {
    const lines: LoggedLine[] = [];
    const worker = new Worker({
      config: { 'consumer.isolation.level': 'read_committed', 'consumer.max.poll.records': '10' },
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => FixtureConnector,
      logger: recordingLogger(lines),
    });
    await worker.start();
    const warned = lines.filter((l) => l.level === 'warn' && l.fields.event === 'worker.config.consumer.ignored');
    expect(warned.map((l) => l.fields.key)).toEqual(['consumer.isolation.level', 'consumer.max.poll.records']);
    expect(warned[0]?.message).toContain('not applied');
    await worker.stop();
  });
});
