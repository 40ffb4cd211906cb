import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runStandalone } from '../../src/cli/standalone.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';
import { generateTestCertificates } from '../kafka/certificates.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Starts an empty standalone worker on the embedded default with `lines` of worker config; returns its warnings. */
async function warningsOf(lines: string[]): Promise<LoggedLine[]> {
  const dir = await mkdtemp(join(tmpdir(), 'embedded-settings-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'worker.properties');
  await writeFile(file, [`offset.storage.file.filename=${join(dir, 'offsets.json')}`, ...lines].join('\n'));
  const logged: LoggedLine[] = [];
  const worker = await runStandalone({
    workerConfigPath: file,
    connectorConfigPaths: [],
    logger: recordingLogger(logged),
    stdout: new Writable({ write: (_c, _e, cb) => cb() }),
  });
  await worker.stop();
  return logged.filter((l) => l.level === 'warn');
}

describe('standalone on the embedded default (no bootstrap.servers)', () => {
  it('warns that the Kafka settings it was given are ignored, naming each and where offsets go', async () => {
    const warnings = await warningsOf([
      'listeners=',
      'sender=librdkafk',
      'producer.acks=al',
      'security.protocol=SSL',
      'ssl.truststore.location=/nowhere.pem',
      'bootstrap.servers=',
    ]);
    const ignored = warnings.filter((w) => w.fields.event === 'config.ignored');
    expect(ignored).toHaveLength(1);
    expect(ignored[0]?.fields.keys).toEqual([
      'sender',
      'producer.acks',
      'security.protocol',
      'ssl.truststore.location',
      'bootstrap.servers',
    ]);
    expect(ignored[0]?.message).toMatch(
      /^no bootstrap\.servers, so records go to the embedded JSON-lines output and offsets to .*offsets\.json: these Kafka settings of .*worker\.properties are ignored: sender, producer\.acks, .*\. Set bootstrap\.servers to write to Kafka$/,
    );
  });

  it('leaves out the settings read without Kafka too, and those with a warning of their own', async () => {
    const warnings = await warningsOf([
      'listeners=',
      // Compared with a connector's offsets.storage.topic; checked against connectors' topic.creation.*.
      'offset.storage.topic=connect-offsets',
      'topic.creation.enable=false',
      // A REST setting Tributary does not implement: warned about as such.
      'admin.listeners=http://127.0.0.1:0',
      'sender=kafkajs',
    ]);
    expect(warnings.filter((w) => w.fields.event === 'config.ignored').map((w) => w.fields.keys)).toEqual([['sender']]);
  });

  it('says nothing without Kafka settings, and leaves ssl.* alone when the https REST listener uses them', async () => {
    expect((await warningsOf(['listeners='])).filter((w) => w.fields.event === 'config.ignored')).toEqual([]);
    // The worker's ssl.* keys are the https listener's when no listeners.https.ssl.* is given.
    const certs = await generateTestCertificates(await mkdtemp(join(tmpdir(), 'embedded-settings-certs-')));
    const https = await warningsOf([
      'listeners=https://127.0.0.1:0',
      'ssl.keystore.type=PEM',
      `ssl.keystore.location=${certs.brokerKeystorePem}`,
      'sender=kafkajs',
    ]);
    expect(https.filter((w) => w.fields.event === 'config.ignored').map((w) => w.fields.keys)).toEqual([['sender']]);
    // Making the test certificates (openssl and keytool, a dozen stores) takes seconds on a loaded machine.
  }, 60_000);
});
