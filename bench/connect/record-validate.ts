/**
 * Records Kafka Connect's own answers to `PUT /connector-plugins/FileStreamSourceConnector/config/validate`
 * as fixtures (test/fixtures/connect-validate/*.json), the reference test/unit/validate-parity.test.ts
 * compares Tributary's answer with.
 *
 * Starts a standalone Kafka Connect worker (the jars of bench/connect/fetch.ts, Java 17+) against
 * the broker of KAFKA_BOOTSTRAP_SERVERS (default 127.0.0.1:19092), sends each body of CASES and
 * writes the answer with the Connect version and the request. Run it again after a Connect
 * upgrade and read the diff:
 *
 * ```
 * KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:19092 npx tsx bench/connect/record-validate.ts
 * ```
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type ConnectWorker, startConnectWorker } from './connect-worker.js';

const HERE = dirname(fileURLToPath(import.meta.url));
/** Where the fixtures go. */
export const FIXTURES_DIR: string = resolve(HERE, '..', '..', 'test', 'fixtures', 'connect-validate');

/** The plugin of the URL of every case. */
export const PLUGIN = 'FileStreamSourceConnector';

/** One recorded request: a fixture file's name and the config body sent. */
export interface ValidateCase {
  readonly name: string;
  readonly description: string;
  readonly body: Readonly<Record<string, string>>;
}

/** The bodies sent; the unit test sends the same ones (with Tributary's file connector keys) to Tributary. */
export const CASES: readonly ValidateCase[] = [
  {
    name: 'minimal',
    description: 'name, connector.class as an alias, the connector topic',
    body: { 'connector.class': 'FileStreamSource', name: 'validate-minimal', topic: 'lines' },
  },
  {
    name: 'full-class-name',
    description: 'connector.class as the full class name, without a name',
    body: { 'connector.class': 'org.apache.kafka.connect.file.FileStreamSourceConnector', topic: 'lines' },
  },
  {
    name: 'transforms-predicates',
    description: 'two transforms, one with a predicate',
    body: {
      'connector.class': 'FileStreamSourceConnector',
      name: 'validate-transforms',
      topic: 'lines',
      transforms: 'addField,drop',
      'transforms.addField.type': 'org.apache.kafka.connect.transforms.InsertField$Value',
      'transforms.addField.static.field': 'source',
      'transforms.addField.static.value': 'file',
      'transforms.drop.type': 'org.apache.kafka.connect.transforms.Filter',
      'transforms.drop.predicate': 'isFoo',
      'transforms.drop.negate': 'true',
      predicates: 'isFoo',
      'predicates.isFoo.type': 'org.apache.kafka.connect.transforms.predicates.TopicNameMatches',
      'predicates.isFoo.pattern': 'foo.*',
    },
  },
  {
    name: 'transforms-builtins',
    description: 'one alias for each transform and predicate of Kafka Connect that Tributary has, valid settings',
    body: {
      'connector.class': 'FileStreamSource',
      name: 'validate-transform-classes',
      topic: 'lines',
      transforms: [
        'castKey,castValue,dropHeaders,extractKey,extractValue,filter,flattenKey,flattenValue,headerFromKey',
        'headerFromValue,hoistKey,hoistValue,insertKey,insertHeader,maskKey,maskValue,route,replaceKey',
        'replaceValue,timestampKey,timestampValue,timestampRoute,valueToKey',
      ].join(','),
      'transforms.castKey.type': 'org.apache.kafka.connect.transforms.Cast$Key',
      'transforms.castKey.spec': 'string',
      'transforms.castValue.type': 'org.apache.kafka.connect.transforms.Cast$Value',
      'transforms.castValue.spec': 'count:int64,ok:boolean',
      'transforms.dropHeaders.type': 'org.apache.kafka.connect.transforms.DropHeaders',
      'transforms.dropHeaders.headers': 'trace',
      'transforms.extractKey.type': 'org.apache.kafka.connect.transforms.ExtractField$Key',
      'transforms.extractKey.field': 'id',
      'transforms.extractValue.type': 'org.apache.kafka.connect.transforms.ExtractField$Value',
      'transforms.extractValue.field': 'payload',
      'transforms.filter.type': 'org.apache.kafka.connect.transforms.Filter',
      'transforms.filter.predicate': 'tombstone',
      'transforms.flattenKey.type': 'org.apache.kafka.connect.transforms.Flatten$Key',
      'transforms.flattenValue.type': 'org.apache.kafka.connect.transforms.Flatten$Value',
      'transforms.flattenValue.delimiter': '_',
      'transforms.headerFromKey.type': 'org.apache.kafka.connect.transforms.HeaderFrom$Key',
      'transforms.headerFromKey.fields': 'id',
      'transforms.headerFromKey.headers': 'key-id',
      'transforms.headerFromKey.operation': 'copy',
      'transforms.headerFromValue.type': 'org.apache.kafka.connect.transforms.HeaderFrom$Value',
      'transforms.headerFromValue.fields': 'a,b',
      'transforms.headerFromValue.headers': 'ha,hb',
      'transforms.headerFromValue.operation': 'move',
      'transforms.hoistKey.type': 'org.apache.kafka.connect.transforms.HoistField$Key',
      'transforms.hoistKey.field': 'key',
      'transforms.hoistValue.type': 'org.apache.kafka.connect.transforms.HoistField$Value',
      'transforms.hoistValue.field': 'line',
      'transforms.insertKey.type': 'org.apache.kafka.connect.transforms.InsertField$Key',
      'transforms.insertKey.topic.field': 'topic',
      'transforms.insertHeader.type': 'org.apache.kafka.connect.transforms.InsertHeader',
      'transforms.insertHeader.header': 'origin',
      'transforms.insertHeader.value.literal': 'file',
      'transforms.maskKey.type': 'org.apache.kafka.connect.transforms.MaskField$Key',
      'transforms.maskKey.fields': 'secret',
      'transforms.maskValue.type': 'org.apache.kafka.connect.transforms.MaskField$Value',
      'transforms.maskValue.fields': 'ssn,card',
      'transforms.maskValue.replacement': 'xxx',
      'transforms.route.type': 'org.apache.kafka.connect.transforms.RegexRouter',
      'transforms.route.regex': '(.*)',
      'transforms.route.replacement': '$1-routed',
      'transforms.replaceKey.type': 'org.apache.kafka.connect.transforms.ReplaceField$Key',
      'transforms.replaceKey.exclude': 'internal',
      'transforms.replaceValue.type': 'org.apache.kafka.connect.transforms.ReplaceField$Value',
      'transforms.replaceValue.renames': 'a:b',
      'transforms.timestampKey.type': 'org.apache.kafka.connect.transforms.TimestampConverter$Key',
      'transforms.timestampKey.target.type': 'unix',
      'transforms.timestampValue.type': 'org.apache.kafka.connect.transforms.TimestampConverter$Value',
      'transforms.timestampValue.field': 'at',
      'transforms.timestampValue.target.type': 'string',
      'transforms.timestampValue.format': 'yyyy-MM-dd',
      'transforms.timestampRoute.type': 'org.apache.kafka.connect.transforms.TimestampRouter',
      'transforms.valueToKey.type': 'org.apache.kafka.connect.transforms.ValueToKey',
      'transforms.valueToKey.fields': 'id',
      predicates: 'hasTrace,tombstone,isLines',
      'predicates.hasTrace.type': 'org.apache.kafka.connect.transforms.predicates.HasHeaderKey',
      'predicates.hasTrace.name': 'trace',
      'predicates.tombstone.type': 'org.apache.kafka.connect.transforms.predicates.RecordIsTombstone',
      'predicates.isLines.type': 'org.apache.kafka.connect.transforms.predicates.TopicNameMatches',
      'predicates.isLines.pattern': 'lines.*',
    },
  },
  {
    name: 'transforms-bad',
    description: 'an unknown transform class, a missing type, missing and bad settings, a bad negate, a bad predicate pattern',
    body: {
      'connector.class': 'FileStreamSource',
      name: 'validate-transforms-bad',
      topic: 'lines',
      transforms: 'unknown,untyped,route,cast,drop',
      'transforms.unknown.type': 'org.example.NoSuchTransform',
      'transforms.unknown.field': 'x',
      'transforms.route.type': 'org.apache.kafka.connect.transforms.RegexRouter',
      'transforms.route.replacement': 'out',
      'transforms.cast.type': 'org.apache.kafka.connect.transforms.Cast$Value',
      'transforms.cast.spec': 'count:notatype',
      'transforms.drop.type': 'org.apache.kafka.connect.transforms.Filter',
      'transforms.drop.predicate': 'isFoo',
      'transforms.drop.negate': 'maybe',
      predicates: 'isFoo',
      'predicates.isFoo.type': 'org.apache.kafka.connect.transforms.predicates.TopicNameMatches',
      'predicates.isFoo.pattern': '(unclosed',
    },
  },
  {
    name: 'error-handling',
    description: 'every errors.* key a source connector takes',
    body: {
      'connector.class': 'FileStreamSource',
      name: 'validate-errors',
      topic: 'lines',
      'errors.tolerance': 'all',
      'errors.retry.timeout': '30000',
      'errors.retry.delay.max.ms': '1000',
      'errors.log.enable': 'true',
      'errors.log.include.messages': 'true',
    },
  },
  {
    name: 'topic-creation',
    description: 'topic.creation.default.* and one more group',
    body: {
      'connector.class': 'FileStreamSource',
      name: 'validate-topic-creation',
      topic: 'lines',
      'topic.creation.default.replication.factor': '1',
      'topic.creation.default.partitions': '3',
      'topic.creation.groups': 'compacted',
      'topic.creation.compacted.include': 'state-.*',
      'topic.creation.compacted.cleanup.policy': 'compact',
      'topic.creation.compacted.partitions': '1',
    },
  },
  {
    name: 'exactly-once',
    description: 'exactly.once.support, transaction.boundary=interval and its interval, offsets.storage.topic',
    body: {
      'connector.class': 'FileStreamSource',
      name: 'validate-eos',
      topic: 'lines',
      'exactly.once.support': 'requested',
      'transaction.boundary': 'interval',
      'transaction.boundary.interval.ms': '5000',
      'offsets.storage.topic': 'validate-eos-offsets',
    },
  },
  {
    name: 'bad-values',
    description: 'a bad value in each framework group, no name',
    body: {
      'connector.class': 'FileStreamSource',
      topic: 'lines',
      'tasks.max': 'zero',
      'errors.tolerance': 'sometimes',
      'errors.retry.timeout': 'soon',
      'exactly.once.support': 'maybe',
      'transaction.boundary': 'never',
      'transaction.boundary.interval.ms': 'often',
    },
  },
];

/** What a fixture file holds. */
export interface ValidateFixture {
  readonly connectVersion: string;
  readonly mode: 'standalone';
  readonly description: string;
  readonly request: { readonly method: 'PUT'; readonly path: string; readonly body: Readonly<Record<string, string>> };
  readonly status: number;
  readonly response: unknown;
}

/** A running standalone Kafka Connect worker. */
export type ConnectStandalone = Pick<ConnectWorker, 'version' | 'url' | 'stop'>;

/**
 * Starts a standalone Kafka Connect worker (StringConverter for keys and values, its own plugins
 * only) on a free port against `bootstrap`; resolves once its REST API answers.
 *
 * @throws SetupError when Java or the jars are missing; Error when Connect exits or does not answer within 120 s
 */
export function startConnectStandalone(bootstrap: string): Promise<ConnectStandalone> {
  return startConnectWorker({
    mode: 'standalone',
    bootstrap,
    readyPath: '/connector-plugins',
    properties: {
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
    },
  });
}

/** Sends one case to a Kafka Connect worker; the fixture it makes. */
export async function validateCase(connect: ConnectStandalone, c: ValidateCase): Promise<ValidateFixture> {
  const path = `/connector-plugins/${PLUGIN}/config/validate`;
  const res = await fetch(`${connect.url}${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(c.body),
  });
  return {
    connectVersion: connect.version,
    mode: 'standalone',
    description: c.description,
    request: { method: 'PUT', path, body: c.body },
    status: res.status,
    response: await res.json(),
  };
}

async function main(): Promise<void> {
  const connect = await startConnectStandalone(process.env.KAFKA_BOOTSTRAP_SERVERS?.trim() || '127.0.0.1:19092');
  try {
    await mkdir(FIXTURES_DIR, { recursive: true });
    for (const c of CASES) {
      const fixture = await validateCase(connect, c);
      await writeFile(join(FIXTURES_DIR, `${c.name}.json`), `${JSON.stringify(fixture, null, 2)}\n`);
      process.stderr.write(`${c.name}: ${fixture.status}\n`);
    }
  } finally {
    await connect.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
