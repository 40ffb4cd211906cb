/**
 * `PUT /connector-plugins/{plugin}/config/validate` against Kafka Connect's own answers to the
 * same requests (test/fixtures/connect-validate, recorded from a standalone Kafka Connect 4.3.1
 * by `npx tsx bench/connect/record-validate.ts`), field by field, for the framework groups.
 *
 * Tributary's connector is its file-source example (Kafka Connect's is FileStreamSource), so
 * the connector's own keys differ and are not compared. The groups of transform and predicate
 * aliases (`Transforms: addField`) are compared as the framework groups are. Every place where Tributary answers
 * otherwise on purpose is a named list here and a row of "Differences from Kafka Connect" in
 * docs/rest.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CASES, type ValidateFixture } from '../../bench/connect/record-validate.js';
import { FileSourceConnector } from '../../examples/file-source/src/index.js';
import { TributaryError } from '../../src/api/errors.js';
import type { SourceConnectorClass } from '../../src/api/source-connector.js';
import { createRestApp } from '../../src/rest/rest-app.js';
import { type RestOptions, resolveRestOptions } from '../../src/rest/rest-options.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { BUILTIN_PREDICATES, BUILTIN_TRANSFORMS, SCHEMA_ONLY_TRANSFORMS } from '../../src/transforms/index.js';
import { KEY_PRESENTATIONS } from '../../src/transforms/key-presentations.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/connect-validate/', import.meta.url));

/** Kafka Connect's framework groups of a source connector, in its order. */
const FRAMEWORK_GROUPS = [
  'Common',
  'Transforms',
  'Predicates',
  'Error Handling',
  'Topic Creation',
  'Exactly Once Support',
  'offsets.topic',
];

/** Kafka Connect framework keys Tributary does not implement (docs/rest.md): absent from its answer. */
const NOT_IMPLEMENTED = [
  'connector.plugin.version',
  'tasks.max.enforce',
  'key.converter.plugin.version',
  'value.converter.plugin.version',
  'header.converter',
  'header.converter.plugin.version',
  'config.action.reload',
];

/** Tributary's own framework keys, in group Common after Kafka Connect's. */
const TRIBUTARY_ONLY = ['heartbeat.interval.ms', 'heartbeat.topic', 'task.max.in.flight.records'];

/** Keys whose recommended_values list Tributary's converters, where Kafka Connect lists its Java classes. */
const CONVERTER_KEYS = ['key.converter', 'value.converter'];

/** A group Kafka Connect adds per transform and predicate alias: `Transforms: addField`. */
const ALIAS_GROUP = /^(Transforms|Predicates): /;

/**
 * The key Kafka Connect has in every alias group that Tributary does not implement (KIP-891's
 * version pin, `transforms.<alias>.plugin.version`; docs/rest.md): absent from its groups.
 */
const ALIAS_NOT_IMPLEMENTED = /^(transforms|predicates)\.[^.]+\.plugin\.version$/;

/**
 * The `recommended_values` of `transforms.<alias>.type`: Tributary's built-ins, which are
 * Kafka Connect's less those that need schemas (SetSchemaMetadata).
 */
const TYPE_KEY = /^(transforms|predicates)\.[^.]+\.type$/;

/**
 * A plugin on the plugin path: listed under its module path, as discoverPlugins lists a `.js`
 * file, so an answer named after what it resolved to would show this path.
 */
const MODULE_PATH = '/opt/tributary/plugins/file-stream-source.js';
const CLASS_NAME = `${MODULE_PATH}#FileStreamSourceConnector`;
/** Kafka Connect's full class name stands for the plugin's full `connector.class` here. */
const JAVA_CLASS = 'org.apache.kafka.connect.file.FileStreamSourceConnector';

interface KeyInfo {
  name: string;
  type: string;
  required: boolean;
  default_value: string | null;
  importance: string;
  documentation: string;
  group: string | null;
  order_in_group: number;
  width: string;
  display_name: string;
  dependents: string[];
}
interface ValueInfo {
  name: string;
  value: string | null;
  recommended_values: string[];
  errors: string[];
  visible: boolean;
}
interface ConfigInfos {
  name: string;
  error_count: number;
  groups: string[];
  configs: Array<{ definition: KeyInfo | null; value: ValueInfo }>;
}

const fixtures: Array<{ name: string; fixture: ValidateFixture }> = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => ({ name: f.replace(/\.json$/, ''), fixture: JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) }));

let call: (path: string, body: unknown) => Promise<{ status: number; body: ConfigInfos }>;
let close: () => Promise<void>;

beforeAll(async () => {
  const worker = new Worker({
    // As the recording Connect worker: its converters are the defaults of every connector.
    config: {
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
    },
    offsetStore: new MemoryOffsetStore(),
    createSender: async () => {
      throw new Error('validation sends nothing');
    },
    loadConnector: async (spec) => {
      if (spec !== CLASS_NAME) throw new TributaryError('PLUGIN_NOT_FOUND', `connector.class "${spec}" is unknown`);
      return FileSourceConnector as unknown as SourceConnectorClass;
    },
    listPlugins: async () => [
      { className: CLASS_NAME, version: '0.1.0', connectorClass: FileSourceConnector as unknown as SourceConnectorClass },
    ],
  });
  await worker.start();
  const app = createRestApp(worker, (await resolveRestOptions({ listeners: 'http://127.0.0.1:0' })) as RestOptions);
  call = async (path, body) => {
    const res = await app.inject({
      method: 'PUT',
      url: path,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
    return { status: res.statusCode, body: JSON.parse(res.body) };
  };
  close = async () => {
    await app.close();
    await worker.stop();
  };
});
afterAll(async () => close?.());

/** The body Tributary gets for a recorded one: the same, with Kafka Connect's full class name as the plugin's. */
function tributaryBody(body: Readonly<Record<string, string>>): Record<string, string> {
  const out = { ...body };
  if (out['connector.class'] === JAVA_CLASS) out['connector.class'] = CLASS_NAME;
  return out;
}

const isFramework = (d: KeyInfo | null): d is KeyInfo => d !== null && FRAMEWORK_GROUPS.includes(d.group ?? '');

describe('config/validate as Kafka Connect 4.3.1 answers it', () => {
  it('has a recorded answer of Kafka Connect 4.3.1 for every case the recording script sends', () => {
    expect(fixtures.map((f) => f.name)).toEqual(CASES.map((c) => c.name).sort());
    for (const { fixture } of fixtures) {
      expect(fixture).toMatchObject({ connectVersion: '4.3.1', status: 200 });
    }
  });

  it("declares Kafka Connect's type and importance for every setting of every built-in transform and predicate", () => {
    for (const [name, cls] of [...BUILTIN_TRANSFORMS, ...BUILTIN_PREDICATES]) {
      expect(Object.keys(KEY_PRESENTATIONS.get(cls) ?? { missing: null }).sort(), name).toEqual(
        Object.keys(new cls().config.keys).sort(),
      );
    }
    // Each of them is in a recorded answer, so its declaration is compared with Kafka Connect's.
    const recorded = new Set(
      fixtures.flatMap(({ fixture }) =>
        Object.entries(fixture.request.body)
          .filter(([k]) => TYPE_KEY.test(k))
          .map(([, v]) => v),
      ),
    );
    expect([...BUILTIN_TRANSFORMS.keys(), ...BUILTIN_PREDICATES.keys()].filter((n) => !recorded.has(n))).toEqual([]);
  });

  for (const { name, fixture } of fixtures) {
    describe(`${name}: ${fixture.description}`, () => {
      const connect = fixture.response as ConfigInfos;
      let ours: ConfigInfos;
      beforeAll(async () => {
        const res = await call(fixture.request.path, tributaryBody(fixture.request.body));
        expect(res.status).toBe(fixture.status);
        ours = res.body;
      });

      it('is named by connector.class as written, never by the module path it resolved to', () => {
        const expected = connect.name === JAVA_CLASS ? CLASS_NAME : connect.name;
        expect(ours.name).toBe(expected);
        const value = ours.configs.find((c) => c.value.name === 'connector.class')?.value.value;
        expect(value).toBe(expected);
        if (connect.name !== JAVA_CLASS) expect(JSON.stringify(ours.configs)).not.toContain(MODULE_PATH);
      });

      it("answers Kafka Connect's framework groups in its order, then a group per alias, then the connector's group", () => {
        expect(connect.groups.slice(0, FRAMEWORK_GROUPS.length)).toEqual(FRAMEWORK_GROUPS);
        expect(connect.groups.slice(FRAMEWORK_GROUPS.length).every((g) => ALIAS_GROUP.test(g))).toBe(true);
        expect(ours.groups).toEqual([...connect.groups, 'Connector']);
      });

      it("lists the keys of each transform and predicate alias in Kafka Connect's order, with its definitions, documentation aside", () => {
        const inGroup = (infos: ConfigInfos, group: string) =>
          infos.configs.map((c) => c.definition).filter((d): d is KeyInfo => d !== null && d.group === group);
        for (const group of connect.groups.filter((g) => ALIAS_GROUP.test(g))) {
          const theirs = inGroup(connect, group).filter((d) => !ALIAS_NOT_IMPLEMENTED.test(d.name));
          const mine = inGroup(ours, group);
          expect(theirs.length, group).toBeGreaterThan(0);
          expect(
            mine.map((d) => d.name),
            group,
          ).toEqual(theirs.map((d) => d.name));
          for (const [i, definition] of theirs.entries()) {
            const { documentation, ...rest } = definition;
            const { documentation: ownDocumentation, ...gotRest } = mine[i] as KeyInfo;
            expect(gotRest, definition.name).toEqual(rest);
            expect(documentation.length).toBeGreaterThan(0);
            expect(ownDocumentation.length, definition.name).toBeGreaterThan(0);
          }
        }
      });

      it('shows each alias key as given or defaulted, with errors on the keys where Kafka Connect has them', () => {
        const mine = new Map(ours.configs.map((c) => [c.value.name, c.value]));
        const given = fixture.request.body;
        const aliasKeys = connect.configs.filter(
          (c) => c.definition !== null && ALIAS_GROUP.test(c.definition.group ?? '') && !ALIAS_NOT_IMPLEMENTED.test(c.value.name),
        );
        for (const { value } of aliasKeys) {
          const got = mine.get(value.name) as ValueInfo;
          expect(got, value.name).toBeDefined();
          const asGiven = given[value.name];
          // As for the framework keys: a value Kafka Connect cannot parse (a class it does not
          // have, negate=maybe) is null there, as given here.
          expect(got.value, value.name).toBe(value.value === null && asGiven !== undefined ? asGiven : value.value);
          expect(got.visible, value.name).toBe(value.visible);
          const recommended = TYPE_KEY.test(value.name)
            ? value.recommended_values.filter((v) => !SCHEMA_ONLY_TRANSFORMS.has(v))
            : value.recommended_values;
          expect(got.recommended_values, value.name).toEqual(recommended);
          expect(got.errors.length > 0, `${value.name}: ${JSON.stringify(got.errors)}`).toBe(value.errors.length > 0);
        }
        // Every error of an alias key is on a key Kafka Connect shows it on, or on a given key it does not list.
        const listed = new Set(aliasKeys.map((c) => c.value.name));
        for (const c of ours.configs) {
          if (c.value.errors.length === 0 || !/^(transforms|predicates)\./.test(c.value.name)) continue;
          expect(listed.has(c.value.name) || given[c.value.name] !== undefined, c.value.name).toBe(true);
        }
      });

      it('lists the framework keys Tributary implements in the same order, and no others but its own', () => {
        const theirs = connect.configs.map((c) => c.definition).filter(isFramework);
        const mine = ours.configs.map((c) => c.definition).filter(isFramework);
        const shared = theirs.map((d) => d.name).filter((n) => !NOT_IMPLEMENTED.includes(n));
        expect(theirs.map((d) => d.name).filter((n) => NOT_IMPLEMENTED.includes(n))).toEqual(NOT_IMPLEMENTED);
        expect(mine.map((d) => d.name).filter((n) => !TRIBUTARY_ONLY.includes(n))).toEqual(shared);
        expect(mine.filter((d) => TRIBUTARY_ONLY.includes(d.name)).map((d) => [d.name, d.group])).toEqual(
          TRIBUTARY_ONLY.map((n) => [n, 'Common']),
        );
        for (const missing of NOT_IMPLEMENTED) expect(ours.configs.some((c) => c.value.name === missing)).toBe(false);
      });

      it("gives each shared framework key Kafka Connect's definition, documentation aside", () => {
        const mine = new Map(ours.configs.filter((c) => isFramework(c.definition)).map((c) => [c.value.name, c.definition]));
        for (const { definition } of connect.configs) {
          if (!isFramework(definition) || NOT_IMPLEMENTED.includes(definition.name)) continue;
          const { documentation, ...rest } = definition;
          const got = mine.get(definition.name);
          expect(got, definition.name).toBeDefined();
          const { documentation: ownDocumentation, ...gotRest } = got as KeyInfo;
          expect(gotRest, definition.name).toEqual(rest);
          // Tributary's own text, about what Tributary does with the key.
          expect(documentation.length).toBeGreaterThan(0);
          expect(ownDocumentation.length, definition.name).toBeGreaterThan(0);
        }
      });

      it('shows each shared framework value as given, with errors where Kafka Connect has them', () => {
        const mine = new Map(ours.configs.map((c) => [c.value.name, c.value]));
        const given = fixture.request.body;
        for (const { definition, value } of connect.configs) {
          if (!isFramework(definition) || NOT_IMPLEMENTED.includes(definition.name)) continue;
          const got = mine.get(value.name) as ValueInfo;
          expect(got, value.name).toBeDefined();
          const asGiven = tributaryBody(given)[value.name];
          // Kafka Connect shows null for a value it cannot parse (tasks.max=zero); Tributary the value given.
          const expected = value.value === null && asGiven !== undefined ? asGiven : value.value;
          expect(got.value, value.name).toBe(value.name === 'connector.class' ? asGiven : expected);
          expect(got.visible, value.name).toBe(value.visible);
          if (!CONVERTER_KEYS.includes(value.name)) expect(got.recommended_values, value.name).toEqual(value.recommended_values);
          // The messages are Tributary's own (they say what is accepted); whether there is one is not.
          expect(got.errors.length > 0, `${value.name}: ${JSON.stringify(got.errors)}`).toBe(value.errors.length > 0);
        }
      });
    });
  }
});
