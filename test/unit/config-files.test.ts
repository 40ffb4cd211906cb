import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readConnectorFile, readWorkerConfig, repeatedJsonKeys } from '../../src/cli/config-files.js';
import { parseProperties } from '../../src/cli/properties.js';

describe('parseProperties', () => {
  it('reads Java properties as Kafka Connect does', () => {
    const text = [
      '# comment',
      '! another',
      'bootstrap.servers=localhost:9092',
      '  name : my-connector',
      'spaced value',
      'multi=a,\\',
      '    b',
      'escaped\\=key=x\\ty',
      'unicode=caf\\u00e9',
      'empty=',
    ].join('\n');
    expect(parseProperties(text)).toEqual({
      'bootstrap.servers': 'localhost:9092',
      name: 'my-connector',
      spaced: 'value',
      multi: 'a,b',
      'escaped=key': 'x\ty',
      unicode: 'café',
      empty: '',
    });
  });

  it('names the file and line of a malformed escape', () => {
    expect(() => parseProperties('a=1\nb=\\u12', 'w.properties')).toThrow(/w\.properties.*line 2: malformed/);
  });

  it('refuses a key given twice with different values, which Java would settle by taking the last quietly', () => {
    expect(() => parseProperties('topic=demo-events\nrate=2\ntopic=orders\n', 'c.properties')).toThrow(
      'Invalid properties file c.properties: "topic" is given twice with different values, on lines 1 and 3: keep one',
    );
    // The same value twice changes nothing: accepted. White space counts (a password's does).
    expect(parseProperties('topic=a\ntopic = a\n')).toEqual({ topic: 'a' });
    expect(() => parseProperties('ssl.key.password=secret\nssl.key.password=secret \n', 'w.properties')).toThrow(
      '"ssl.key.password" is given twice with different values (they differ in white space only), on lines 1 and 2: keep one',
    );
    // A file a config provider reads keeps the last value, as Kafka's FileConfigProvider.
    expect(parseProperties('other=1\nother=2\n', 'secrets.properties', { lastWins: true })).toEqual({ other: '2' });
    expect(Object.keys(parseProperties('__proto__=x\n__proto__=x\n'))).toEqual(['__proto__']);
  });
});

describe('connector files', () => {
  it('reads a Kafka Connect POST body with initial_state and offsets', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const path = join(dir, 'c.json');
    await writeFile(
      path,
      JSON.stringify({
        name: 'orders',
        config: { 'connector.class': './x.js', 'tasks.max': 2 },
        initial_state: 'PAUSED',
        offsets: [{ partition: { a: 1 }, offset: { n: 2 } }],
      }),
    );
    expect(await readConnectorFile(path)).toEqual({
      name: 'orders',
      config: { name: 'orders', 'connector.class': './x.js', 'tasks.max': '2' },
      initialState: 'PAUSED',
      offsets: [{ partition: { a: 1 }, offset: { n: 2 } }],
      file: path,
    });
  });

  it('rejects what it cannot use, saying what is accepted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const bad = join(dir, 'bad.json');
    await writeFile(
      bad,
      JSON.stringify({ name: 'x', config: { 'connector.class': 'y' }, initial_state: 'GO', offsets: [], initial_offsets: [] }),
    );
    await expect(readConnectorFile(bad)).rejects.toThrow(/initial_state" must be RUNNING, PAUSED or STOPPED, got "GO".*not both/);
    const noClass = join(dir, 'c.properties');
    await writeFile(noClass, 'name=x\n');
    await expect(readConnectorFile(noClass)).rejects.toThrow(/missing "connector.class"/);
    await expect(readWorkerConfig(join(dir, 'nope.properties'))).rejects.toThrow(/cannot read the file/);
  });

  it('refuses KIP-980/995 fields in a flat file and unknown fields beside "config", instead of dropping them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const flat = join(dir, 'flat.json');
    await writeFile(
      flat,
      JSON.stringify({ name: 'pg', 'connector.class': 'x', initial_state: 'STOPPED', offsets: [{ partition: {}, offset: {} }] }),
    );
    await expect(readConnectorFile(flat)).rejects.toThrow(
      /"initial_state", "offsets" of a flat file would be taken as config key\(s\): put the config under "config"/,
    );
    const shaped = join(dir, 'shaped.json');
    await writeFile(
      shaped,
      JSON.stringify({ name: 'pg', config: { 'connector.class': 'x' }, initial_sate: 'STOPPED', offset: [], 'tasks.max': 2 }),
    );
    const error = await readConnectorFile(shaped).then(
      () => undefined,
      (e: unknown) => e as { problems: string[] },
    );
    expect(error?.problems).toEqual([
      expect.stringMatching(/^unknown field "initial_sate" beside "config"; did you mean "initial_state"\?/),
      expect.stringMatching(/^unknown field "offset" beside "config"; did you mean "offsets"\?/),
      expect.stringMatching(/^unknown field "tasks.max" beside "config": .*config keys go under "config"$/),
    ]);
    // A worker config in JSON takes no arrays or objects either.
    const worker = join(dir, 'worker.json');
    await writeFile(worker, JSON.stringify({ 'bootstrap.servers': 'b:9092', offsets: [] }));
    await expect(readWorkerConfig(worker)).rejects.toThrow(/"offsets" must be a string, number or boolean/);
  });

  it('refuses a connector or worker file that is not valid UTF-8 instead of reading U+FFFD into its values', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    // 'café' in Latin-1: the lone byte 0xE9 is no UTF-8.
    const latin1 = Buffer.concat([Buffer.from('name=caf'), Buffer.from([0xe9]), Buffer.from('\nconnector.class=x\ntopic=t\n')]);
    await writeFile(join(dir, 'c.properties'), latin1);
    await writeFile(
      join(dir, 'c.json'),
      Buffer.concat([Buffer.from('{"name": "caf'), Buffer.from([0xe9]), Buffer.from('", "config": {"connector.class": "x"}}')]),
    );
    for (const file of ['c.properties', 'c.json']) {
      await expect(readConnectorFile(join(dir, file)), file).rejects.toThrow(/is not valid UTF-8/);
    }
    await writeFile(join(dir, 'w.properties'), latin1);
    await expect(readWorkerConfig(join(dir, 'w.properties'))).rejects.toThrow(/is not valid UTF-8/);
    await writeFile(join(dir, 'ok.properties'), 'name=café\nconnector.class=x\n');
    expect((await readConnectorFile(join(dir, 'ok.properties'))).name).toBe('café');
  });
});

describe('connector and worker file errors', () => {
  it('says what the REST API says when "config" is a list', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const path = join(dir, 'c.json');
    await writeFile(path, JSON.stringify({ name: 'c', config: [{ 'connector.class': 'x' }] }));
    await expect(readConnectorFile(path)).rejects.toThrow(
      `Invalid connector config ${path}: Config must be a JSON object {"key": "value", ...}, got a list`,
    );
  });

  it('gives the line and column of a JSON syntax error, with the line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const path = join(dir, 'c.json');
    await writeFile(path, '{\n  "name": "c",\n  "config": {"connector.class": "x",}\n}\n');
    const error = await readConnectorFile(path).catch((e: Error) => e);
    expect((error as Error).message).toContain(`Invalid JSON file ${path}: line 3, column 37: `);
    expect((error as Error).message).toContain('\n    "config": {"connector.class": "x",}\n');
    await writeFile(path, '{"name": "c"');
    expect(((await readConnectorFile(path).catch((e: Error) => e)) as Error).message).toMatch(/line 1, column 13/);
  });

  it('refuses a key given twice with different values in one JSON object, which JSON.parse would settle by taking the last', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const connector = join(dir, 'c.json');
    await writeFile(
      connector,
      '{\n  "name": "c",\n  "config": {\n    "topic": "a",\n    "batch.size": "10",\n    "topic": "b"\n  }\n}\n',
    );
    await expect(readConnectorFile(connector)).rejects.toThrow(
      `Invalid JSON file ${connector}: "config"."topic" is given twice with different values, on lines 4 and 6: keep one (JSON would take the last without a word)`,
    );
    const worker = join(dir, 'w.json');
    await writeFile(worker, '{"bootstrap.servers": "k:9092", "sender": "kafkajs", "sender": "librdkafka"}');
    await expect(readWorkerConfig(worker)).rejects.toThrow('"sender" is given twice with different values, on lines 1 and 1');
    // The same value twice changes nothing, and equal keys in different objects are different keys.
    await writeFile(worker, '{"a": "1", "b": {"a": "2"}, "a": "1"}');
    await expect(readWorkerConfig(worker)).rejects.toThrow('"b" must be a string'); // past the key check
  });

  it('finds repeated keys at any depth, through escapes, arrays and nested values', () => {
    expect(repeatedJsonKeys('{"o": [{"p": {"x": 1}, "p": {"x": 2}}], "k\\u0041": "s\\"}", "kA": "t"}')).toEqual([
      '"o"[0]."p" is given twice with different values, on lines 1 and 1: keep one (JSON would take the last without a word)',
      '"kA" is given twice with different values, on lines 1 and 1: keep one (JSON would take the last without a word)',
    ]);
    expect(repeatedJsonKeys('{"a": [], "b": {}, "c": [1, "]", {"d": null}], "e": true}')).toEqual([]);
    expect(repeatedJsonKeys(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)).toEqual([]);
    // The same JSON value written two ways is no conflict; "1" and 1 are different values.
    expect(
      repeatedJsonKeys('{"a": 1e5, "a": 100000, "b": -0, "b": 0, "c": "x", "c": "\\u0078", "d": {"e": 1}, "d": { "e" : 1 }}'),
    ).toEqual([]);
    expect(repeatedJsonKeys('{"a": "1", "a": 1}')).toHaveLength(1);
    // Lines as whereInJson counts them: CRLF, CR and LF.
    for (const eol of ['\n', '\r\n', '\r']) {
      expect(repeatedJsonKeys(['{', '"a": 1,', '"b": 2,', '"a": 3', '}'].join(eol))).toEqual([
        '"a" is given twice with different values, on lines 2 and 4: keep one (JSON would take the last without a word)',
      ]);
    }
    // Many repeats in a large file (the line breaks are found once, not per key).
    const many = `{${Array.from({ length: 20_000 }, (_, i) => `"k": ${i}`).join(',\n')}}`;
    expect(repeatedJsonKeys(many)).toHaveLength(19_999);
  });

  it("refuses a mistake in the worker's producer settings at start, before any client connects, instead of failing each task", async () => {
    const { runStandalone } = await import('../../src/cli/standalone.js');
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const path = join(dir, 'w.properties');
    // Nothing listens on port 1: a start that got as far as connecting would fail differently.
    const start = () => runStandalone({ workerConfigPath: path, connectorConfigPaths: [] }).catch((e: Error) => e.message);
    await writeFile(path, ['bootstrap.servers=127.0.0.1:1', 'listeners=', 'producer.lingr.ms=5'].join('\n'));
    expect(await start()).toBe(
      `Invalid worker config ${path} (producer configuration): producer.lingr.ms: unknown producer setting; did you mean producer.linger.ms?`,
    );
    await writeFile(path, ['bootstrap.servers=127.0.0.1:1', 'listeners=', 'producer.acks=two'].join('\n'));
    expect(await start()).toBe(
      `Invalid worker config ${path} (producer configuration): producer.acks: 'two' is not one of all, -1, 1, 0`,
    );
  }, 20_000);

  it('names the worker file of a bad worker setting', async () => {
    const { runStandalone } = await import('../../src/cli/standalone.js');
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cf-'));
    const path = join(dir, 'w.properties');
    await writeFile(path, 'listeners=ftp://127.0.0.1:1\n');
    await expect(runStandalone({ workerConfigPath: path, connectorConfigPaths: [] })).rejects.toThrow(
      `Invalid worker config ${path} (REST settings of the worker config): listeners: scheme "ftp" is not supported`,
    );
  });
});
