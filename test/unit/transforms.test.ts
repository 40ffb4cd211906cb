import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { isTributaryError } from '../../src/api/errors.js';
import { Transformation, type TransformRecord } from '../../src/api/transformation.js';
import { configInfosJson } from '../../src/rest/config-infos.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { prepareTransforms } from '../../src/runtime/transform-chain.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockRuntime } from '../../src/testing/mock-runtime.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { CounterTask, record, ScriptedTask } from '../helpers/counter-task.js';
import { FixtureConnector } from '../helpers/fixture-connector.js';
import { EvenN, UpperCaseTopic } from '../helpers/upper-case-transform.js';

const T = 'org.apache.kafka.connect.transforms';
const noLoader = async () => {
  throw new Error('no module loading here');
};

async function problemsOf(config: Record<string, string>): Promise<Array<{ key: string; message: string }>> {
  const prepared = await prepareTransforms(config, noLoader);
  return prepared.ok ? [] : prepared.problems;
}

describe('transforms in the pipeline', () => {
  it('route records after poll(): a RegexRouter moves them to another topic', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 3 },
      connectorConfig: {
        transforms: 'route',
        'transforms.route.type': `${T}.RegexRouter`,
        'transforms.route.regex': '(.*)s',
        'transforms.route.replacement': '$1-v2',
      },
    });
    await run.advanceUntil(() => run.captured.length === 3, { what: 'three records' });
    expect(run.captured.map((r) => r.topic)).toEqual(['order-v2', 'order-v2', 'order-v2']);
    expect(run.records('orders')).toHaveLength(0);
    await run.stop();
  });

  it('change keys, values and headers before conversion, and the captured record shows the result', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 1 },
      connectorConfig: {
        transforms: 'key,hdr',
        'transforms.key.type': `${T}.ValueToKey`,
        'transforms.key.fields': 'n',
        'transforms.hdr.type': `${T}.InsertHeader`,
        'transforms.hdr.header': 'origin',
        'transforms.hdr.value.literal': 'tributary',
      },
    });
    await run.advanceUntil(() => run.captured.length === 1, { what: 'one record' });
    expect(run.captured[0]).toMatchObject({ key: { n: 1 }, value: { stream: 'a', n: 1 }, headers: { origin: 'tributary' } });
    expect(run.sender.sent[0]?.key?.toString()).toBe('{"n":1}');
    await run.stop();
  });

  it('keep a header a transform names __proto__ as a header, not a prototype', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 1 },
      connectorConfig: {
        transforms: 'a,hdr',
        'transforms.a.type': `${T}.InsertHeader`,
        'transforms.a.header': 'first',
        'transforms.a.value.literal': '1',
        'transforms.hdr.type': `${T}.InsertHeader`,
        'transforms.hdr.header': '__proto__',
        'transforms.hdr.value.literal': 'tributary',
      },
    });
    await run.advanceUntil(() => run.sender.sent.length === 1, { what: 'one record' });
    const headers = run.sender.sent[0]?.headers ?? {};
    expect(Object.keys(headers)).toEqual(['first', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(headers, '__proto__')?.value).toBe('tributary');
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    await run.stop();
  });

  it('commit the offset of a record a transform drops, behind the records before it', async () => {
    const task = new ScriptedTask();
    task.rounds.push(() => of(record('s', 1, 'keep'), record('s', 2, 'drop'), record('s', 3, 'drop')));
    const run = await MockRuntime.start(() => task, {
      config: {},
      connectorConfig: {
        transforms: 'f',
        'transforms.f.type': `${T}.Filter`,
        'transforms.f.predicate': 'isDrop',
        predicates: 'isDrop',
        'predicates.isDrop.type': `${T}.predicates.TopicNameMatches`,
        'predicates.isDrop.pattern': 'drop',
      },
      holdAcks: () => true,
    });
    await run.advanceBy('1s');
    expect(run.sender.sent.map((r) => r.topic)).toEqual(['keep']);
    // Record 1 is not acknowledged yet: the dropped records behind it must not commit.
    await run.flush();
    expect(await run.committedOffset({ stream: 's' })).toBeUndefined();
    run.releaseAcks();
    await run.advanceBy('1s');
    await run.flush();
    expect(await run.committedOffset({ stream: 's' })).toEqual({ n: 3 });
    await run.stop();
  });

  it('never transform heartbeat records: a Filter of every record still lets heartbeats through to the heartbeat topic', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'data', limit: 2, heartbeats: true },
      connectorConfig: {
        'heartbeat.interval.ms': 1000,
        transforms: 'route,drop',
        'transforms.route.type': `${T}.RegexRouter`,
        'transforms.route.regex': '.*',
        'transforms.route.replacement': 'data',
        'transforms.drop.type': `${T}.Filter`,
      },
    });
    await run.advanceBy('3s');
    expect(run.heartbeats.map((r) => r.topic)).toEqual(['tributary-heartbeats', 'tributary-heartbeats', 'tributary-heartbeats']);
    expect(run.records('data')).toHaveLength(0);
    expect(run.heartbeats.every((r) => (r.value as { heartbeat?: number }).heartbeat !== undefined)).toBe(true);
    await run.stop();
  });

  it('fail the task with TRANSFORM_FAILED when a transform cannot handle a record (errors.tolerance=none)', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 3 },
      connectorConfig: { transforms: 'x', 'transforms.x.type': `${T}.ExtractField$Key`, 'transforms.x.field': 'id' },
    });
    await run.advanceUntil(() => run.status.state === 'FAILED', { what: 'the task to fail' });
    const status = run.status;
    expect(status.state === 'FAILED' && isTributaryError(status.error) && status.error.code).toBe('TRANSFORM_FAILED');
    expect(status.state === 'FAILED' && status.trace).toContain(
      'Only Map objects supported in absence of schema for [field extraction], found: java.lang.String',
    );
    expect(run.captured).toHaveLength(0);
    await run.stop();
  });

  it("run an author's transform and predicate given to the mock runtime as plugins", async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 4 },
      connectorConfig: {
        transforms: 'up',
        'transforms.up.type': 'UpperCaseTopic',
        'transforms.up.prefix': 'x-',
        'transforms.up.predicate': 'even',
        predicates: 'even',
        'predicates.even.type': 'EvenN',
      },
      plugins: { UpperCaseTopic, EvenN },
    });
    await run.advanceUntil(() => run.captured.length === 4, { what: 'four records' });
    expect(run.captured.map((r) => r.topic)).toEqual(['orders', 'x-ORDERS', 'orders', 'x-ORDERS']);
    await run.stop();
  });

  it("load an author's transform by module path, as connector.class is loaded", async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'orders', limit: 1 },
      connectorConfig: { transforms: 'up', 'transforms.up.type': './test/helpers/upper-case-transform.ts#UpperCaseTopic' },
    });
    await run.advanceUntil(() => run.captured.length === 1, { what: 'one record' });
    expect(run.captured[0]?.topic).toBe('ORDERS');
    await run.stop();
  });
});

describe('transforms config', () => {
  it('accepts the built-ins by Kafka Connect class name and by the name after the package', async () => {
    expect(
      await problemsOf({ transforms: 'a', 'transforms.a.type': `${T}.HoistField$Value`, 'transforms.a.field': 'x' }),
    ).toEqual([]);
    expect(await problemsOf({ transforms: 'a', 'transforms.a.type': 'HoistField$Value', 'transforms.a.field': 'x' })).toEqual([]);
  });

  it('rejects a transform class it does not support, naming the alias key and what is accepted', async () => {
    const problems = await problemsOf({ transforms: 'a', 'transforms.a.type': 'com.example.Unknown' });
    expect(problems).toHaveLength(1);
    expect(problems[0]?.key).toBe('transforms.a.type');
    expect(problems[0]?.message).toContain("transform 'a'");
    expect(problems[0]?.message).toContain('org.apache.kafka.connect.transforms.InsertField$Value');
  });

  it('rejects SetSchemaMetadata as needing schemas, instead of ignoring it', async () => {
    const problems = await problemsOf({ transforms: 's', 'transforms.s.type': `${T}.SetSchemaMetadata$Value` });
    expect(problems[0]).toMatchObject({ key: 'transforms.s.type' });
    expect(problems[0]?.message).toContain('only works on records with schemas');
  });

  it('rejects an alias without a type, a missing setting, a rejected setting and an undeclared predicate', async () => {
    const problems = await problemsOf({
      transforms: 'noType,noSpec,badSpec,badPred',
      'transforms.noSpec.type': `${T}.Cast$Value`,
      'transforms.badSpec.type': `${T}.Cast$Value`,
      'transforms.badSpec.spec': 'x:bytes',
      'transforms.badPred.type': `${T}.Filter`,
      'transforms.badPred.predicate': 'nope',
    });
    expect(problems.map((p) => p.key)).toEqual([
      'transforms.noType.type',
      'transforms.noSpec.spec',
      // On the setting it rejects, as Kafka Connect's validator of spec shows it.
      'transforms.badSpec.spec',
      'transforms.badPred.predicate',
    ]);
    expect(problems[1]?.message).toContain('"transforms.noSpec.spec"');
    expect(problems[2]?.message).toContain('does not support casting to BYTES');
    expect(problems[3]?.message).toContain('not listed in predicates');
  });

  it('rejects settings of a transform or predicate alias that is not listed, instead of ignoring them', async () => {
    const problems = await problemsOf({
      'transforms.route.type': `${T}.RegexRouter`,
      'transforms.route.regex': '.*',
      transforms: 'other',
      'transforms.other.type': `${T}.Filter`,
      'predicates.p.type': `${T}.predicates.RecordIsTombstone`,
    });
    expect(problems.map((p) => p.key)).toEqual(['transforms', 'predicates']);
    expect(problems[0]?.message).toContain("'route' is not listed in transforms (transforms=other)");
    expect(problems[1]?.message).toContain("'p' is not listed in predicates (predicates is empty)");
  });

  it('rejects an unsupported predicate class and a negate that is not a boolean', async () => {
    const problems = await problemsOf({
      transforms: 'f',
      'transforms.f.type': `${T}.Filter`,
      'transforms.f.predicate': 'p',
      'transforms.f.negate': 'maybe',
      predicates: 'p',
      'predicates.p.type': 'org.apache.kafka.connect.transforms.predicates.Nope',
    });
    expect(problems.map((p) => p.key).sort()).toEqual(['predicates.p.type', 'transforms.f.negate']);
  });

  it('rejects a near miss of a transform or predicate setting (predicat, negat, replacment) instead of ignoring it', async () => {
    const problems = await problemsOf({
      transforms: 'route,mask',
      'transforms.route.type': `${T}.RegexRouter`,
      'transforms.route.regex': '.*',
      'transforms.route.replacement': 'all',
      'transforms.route.predicat': 'p',
      'transforms.mask.type': `${T}.MaskField$Value`,
      'transforms.mask.fields': 'secret',
      'transforms.mask.replacment': 'xxx',
      'transforms.mask.negat': 'true',
      predicates: 'p',
      'predicates.p.type': `${T}.predicates.TopicNameMatches`,
      'predicates.p.pattern': 'orders',
      'predicates.p.patern': 'audit',
    });
    expect(problems).toEqual([
      { key: 'predicates.p.patern', message: 'unknown key "predicates.p.patern"; did you mean "predicates.p.pattern"?' },
      {
        key: 'transforms.route.predicat',
        message: 'unknown key "transforms.route.predicat"; did you mean "transforms.route.predicate"?',
      },
      {
        key: 'transforms.mask.replacment',
        message: 'unknown key "transforms.mask.replacment"; did you mean "transforms.mask.replacement"?',
      },
      { key: 'transforms.mask.negat', message: 'unknown key "transforms.mask.negat"; did you mean "transforms.mask.negate"?' },
    ]);
  });

  it('rejects any key that is not a setting of its transform or predicate, which Kafka Connect would ignore', async () => {
    // ReplaceField's blacklist was renamed exclude (gone in Kafka 4): ignored, the field would be sent.
    expect(
      await problemsOf({
        transforms: 'rf',
        'transforms.rf.type': `${T}.ReplaceField$Value`,
        'transforms.rf.blacklist': 'payload',
      }),
    ).toEqual([
      {
        key: 'transforms.rf.blacklist',
        message: `unknown key "transforms.rf.blacklist": transform 'rf' (${T}.ReplaceField$Value) has no setting "blacklist"; Kafka Connect before 4.0 took it for "exclude": use transforms.rf.exclude. Its settings: transforms.rf.exclude, transforms.rf.include, transforms.rf.renames, transforms.rf.replace.null.with.default, transforms.rf.type, transforms.rf.predicate, transforms.rf.negate`,
      },
    ]);
    // negate belongs to the transform; on the predicate it would leave the Filter dropping everything.
    const misplacedNegate = await problemsOf({
      transforms: 'drop',
      'transforms.drop.type': `${T}.Filter`,
      'transforms.drop.predicate': 'isEvents',
      predicates: 'isEvents',
      'predicates.isEvents.type': `${T}.predicates.TopicNameMatches`,
      'predicates.isEvents.pattern': 'events',
      'predicates.isEvents.negate': 'true',
    });
    expect(misplacedNegate).toEqual([
      {
        key: 'predicates.isEvents.negate',
        message: `unknown key "predicates.isEvents.negate": predicate 'isEvents' (${T}.predicates.TopicNameMatches) has no setting "negate"; negate is a setting of the transform that uses the predicate (transforms.<alias>.negate). Its settings: predicates.isEvents.pattern, predicates.isEvents.type`,
      },
    ]);
    expect(await problemsOf({ transforms: 'f', 'transforms.f.type': `${T}.Filter`, 'transforms.f.comment': 'x' })).toEqual([
      expect.objectContaining({ key: 'transforms.f.comment' }),
    ]);
  });

  it("leaves a class of one's own the keys its config does not declare (near misses still refused), and takes KIP-891's plugin.version", async () => {
    const load = async () => UpperCaseTopic;
    const own = async (config: Record<string, string>) => {
      const prepared = await prepareTransforms(config, load);
      return prepared.ok ? [] : prepared.problems;
    };
    // A family of keys such a class may read itself.
    expect(
      await own({ transforms: 'up', 'transforms.up.type': './up.ts#UpperCaseTopic', 'transforms.up.rename.orders': 'o' }),
    ).toEqual([]);
    expect(await own({ transforms: 'up', 'transforms.up.type': './up.ts#UpperCaseTopic', 'transforms.up.prefx': 'a-' })).toEqual([
      { key: 'transforms.up.prefx', message: 'unknown key "transforms.up.prefx"; did you mean "transforms.up.prefix"?' },
    ]);
    expect(
      await problemsOf({
        transforms: 'r',
        'transforms.r.type': `${T}.RegexRouter`,
        'transforms.r.regex': '.*',
        'transforms.r.replacement': 'x',
        'transforms.r.plugin.version': '4.3.1',
        'transforms.r.predicate': 'p',
        predicates: 'p',
        'predicates.p.type': `${T}.predicates.TopicNameMatches`,
        'predicates.p.pattern': '.*',
        'predicates.p.plugin.version': '4.3.1',
      }),
    ).toEqual([]);
  });

  it('names the two forms of a transform given without $Value or $Key', async () => {
    expect(await problemsOf({ transforms: 'ins', 'transforms.ins.type': 'InsertField' })).toEqual([
      {
        key: 'transforms.ins.type',
        message:
          "Invalid value InsertField for configuration transforms.ins.type: InsertField comes in two forms: InsertField$Value (the record's value) or InsertField$Key (the record's key)",
      },
    ]);
  });

  it('refuses an empty predicate, which would apply the transform (a Filter: drop) to every record', async () => {
    expect(
      await problemsOf({
        transforms: 'drop',
        'transforms.drop.type': `${T}.Filter`,
        'transforms.drop.predicate': ' ',
        'transforms.drop.negate': 'true',
      }),
    ).toEqual([
      {
        key: 'transforms.drop.predicate',
        message:
          "transforms.drop.predicate is empty: give the alias of a predicate listed in predicates, or remove the key to apply transform 'drop' to every record",
      },
    ]);
  });

  it('takes a null predicate (unset, from a JSON body) with negate=false, as before', async () => {
    const prepared = await prepareTransforms(
      { transforms: 'f', 'transforms.f.type': `${T}.Filter`, 'transforms.f.predicate': null, 'transforms.f.negate': 'false' },
      noLoader,
    );
    expect(prepared.ok).toBe(true);
  });

  it('trims text settings as Kafka Connect does: a trailing space does not make a regex match nothing', async () => {
    const run = await MockRuntime.start(CounterTask, {
      config: { topic: 'demo-events', limit: 2 },
      connectorConfig: {
        transforms: 'route',
        'transforms.route.type': `${T}.RegexRouter`,
        'transforms.route.regex': 'demo-(.*) ',
        'transforms.route.replacement': ' cdc.$1 ',
      },
    });
    await run.advanceUntil(() => run.captured.length === 2, { what: 'two records' });
    expect(run.captured.map((r) => r.topic)).toEqual(['cdc.events', 'cdc.events']);
    await run.stop();
  });

  it('rejects Java regex syntax that JavaScript would read with another meaning, instead of routing other topics', async () => {
    const router = (regex: string) =>
      problemsOf({
        transforms: 'r',
        'transforms.r.type': `${T}.RegexRouter`,
        'transforms.r.regex': regex,
        'transforms.r.replacement': 'x',
      });
    for (const regex of ['\\p{Lower}+\\.eu', '\\Qorders.eu\\E', '\\Aorders\\z', '[a-z&&[^x]]+', '[a-z[0-9]]+', '\\x{41}']) {
      const problems = await router(regex);
      expect(
        problems.map((p) => p.key),
        regex,
      ).toEqual(['transforms.r.regex']);
      expect(problems[0]?.message, regex).toContain('is Java regex syntax that JavaScript reads otherwise');
    }
    const matches = await problemsOf({
      transforms: 'f',
      'transforms.f.type': `${T}.Filter`,
      'transforms.f.predicate': 'p',
      predicates: 'p',
      'predicates.p.type': `${T}.predicates.TopicNameMatches`,
      'predicates.p.pattern': '\\p{Alpha}+',
    });
    expect(matches.map((p) => p.key)).toEqual(['predicates.p.pattern']);
    expect(matches[0]?.message).toContain('\\p is Java regex syntax');
    // What both read alike stays accepted (the comparison test runs these through Kafka Connect too).
    for (const regex of ['orders\\.eu', 'a\\-b\\_c', '[a-z\\d._\\-]+', '\\w+\\.\\w+', '[\\[]', '\\x41', '(?<g>[a-z]+)\\.\\k<g>'])
      expect(await router(regex), regex).toEqual([]);
  });

  it("rejects an author's transform whose configure() refuses its config", async () => {
    const prepared = await prepareTransforms(
      { transforms: 'up', 'transforms.up.type': 'Up', 'transforms.up.prefix': 'has space' },
      async () => UpperCaseTopic,
    );
    expect(prepared.ok ? [] : prepared.problems).toEqual([
      { key: 'transforms.up.type', message: "transform 'up' (Up) rejected its config: prefix must not contain spaces" },
    ]);
  });
});

describe('transforms in the worker', () => {
  const worker = () =>
    new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        throw new Error('unused');
      },
      loadConnector: async () => FixtureConnector,
    });

  it('refuse to create a connector whose transforms are invalid, naming the alias', async () => {
    const w = worker();
    await w.start();
    const error = await w
      .createConnector('c', { 'connector.class': 'fixture', topic: 't', transforms: 'route', 'transforms.route.type': 'Nope' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isTributaryError(error) && error.code).toBe('CONFIG_INVALID');
    expect((error as Error).message).toContain('transforms.route.type');
    expect(w.connectorNames()).toEqual([]);
    await w.stop();
  });

  it('report invalid transforms on their keys in validate', async () => {
    const w = worker();
    const report = await w.validateConfig('fixture', {
      name: 'c',
      'connector.class': 'fixture',
      topic: 't',
      transforms: 'route',
      'transforms.route.type': `${T}.RegexRouter`,
    });
    expect(report.errorCount).toBe(2);
    const errors = Object.fromEntries(report.keys.filter((k) => k.errors.length > 0).map((k) => [k.name, k.errors]));
    expect(Object.keys(errors).sort()).toEqual(['transforms.route.regex', 'transforms.route.replacement']);
  });

  it("list an author's transform's settings in its alias group in validate, its password masked", async () => {
    class Sign extends Transformation<{ secret: string; header: string }> {
      readonly config = defineConfig({
        secret: { type: configTypes.string, description: 'Signing key.', password: true },
        header: { type: configTypes.string, default: 'sig', description: 'Header for the signature.' },
      });
      apply(record: TransformRecord): TransformRecord {
        return record;
      }
    }
    const w = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        throw new Error('unused');
      },
      loadConnector: async () => FixtureConnector,
      loadTransform: async () => Sign,
    });
    const infos = configInfosJson(
      await w.validateConfig('fixture', {
        name: 'c',
        'connector.class': 'fixture',
        topic: 't',
        transforms: 'sign',
        'transforms.sign.type': './sign.js#Sign',
        'transforms.sign.secret': 's3cr3t-value',
      }),
    );
    expect(infos.error_count).toBe(0);
    expect(infos.groups).toContain('Transforms: sign');
    const group = infos.configs.filter((c) => c.definition?.group === 'Transforms: sign');
    // type, then keys without a default, then by importance and name, as Kafka Connect orders them.
    expect(
      group.map((c) => [c.definition?.name, c.definition?.type, c.definition?.importance, c.definition?.order_in_group]),
    ).toEqual([
      ['transforms.sign.type', 'CLASS', 'HIGH', 0],
      ['transforms.sign.secret', 'PASSWORD', 'HIGH', 2],
      ['transforms.sign.header', 'STRING', 'MEDIUM', 3],
      ['transforms.sign.negate', 'BOOLEAN', 'MEDIUM', 4],
      ['transforms.sign.predicate', 'STRING', 'MEDIUM', 5],
    ]);
    expect(group.map((c) => c.value.value)).toEqual(['./sign.js#Sign', '[hidden]', 'sig', 'false', null]);
    expect(JSON.stringify(infos)).not.toContain('s3cr3t-value');
  });

  it('show the records errors.tolerance=all skipped in the task status of the REST API', async () => {
    const w = new Worker({
      config: { 'offset.flush.interval.ms': '50' },
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => FixtureConnector,
    });
    await w.start();
    const app = createRestApp(w, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions);
    try {
      await w.createConnector('c', {
        'connector.class': 'fixture',
        topic: 't',
        count: '4',
        'errors.tolerance': 'all',
        transforms: 'cast',
        'transforms.cast.type': `${T}.Cast$Value`,
        'transforms.cast.spec': 'text:int32',
      });
      const deadline = Date.now() + 3000;
      let body: { tasks: Array<Record<string, unknown>> } | undefined;
      while (Date.now() < deadline) {
        body = JSON.parse((await app.inject({ method: 'GET', url: '/connectors/c/status' })).body);
        if ((body?.tasks[0]?.errors as { 'total-records-skipped'?: number } | undefined)?.['total-records-skipped'] === 4) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(body?.tasks[0]).toMatchObject({ state: 'RUNNING', errors: { 'total-retries': 0, 'total-records-skipped': 4 } });
    } finally {
      await app.close();
      await w.stop();
    }
  });
});

describe('the README', () => {
  it('shows a connector file whose transform chain and config provider references the worker accepts', async () => {
    const { readFileSync } = await import('node:fs');
    const { parseProperties } = await import('../../src/runtime/properties.js');
    const { configProviders } = await import('../../src/runtime/config-providers.js');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const blocks = [...readme.matchAll(/```properties\n(# (worker|orders)\.properties\n[\s\S]*?)```/g)];
    const worker = parseProperties(blocks.find((b) => b[2] === 'worker')?.[1] ?? '');
    const connector = parseProperties(blocks.find((b) => b[2] === 'orders')?.[1] ?? '');
    expect(connector.transforms).toBe('key,drop,route');
    const prepared = await prepareTransforms(connector, noLoader);
    expect(prepared.ok ? prepared.size : prepared.problems).toBe(3);
    const providers = configProviders(worker, { ORDERS_TOPIC: 'orders' });
    const resolved = providers.resolve(connector);
    expect(resolved.config.topic).toBe('orders');
    // The file of the example is not here: the one problem is that file, named by its key.
    expect(resolved.problems.map((p) => p.key)).toEqual(['db.password']);
  });
});
