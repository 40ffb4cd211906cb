import * as t from 'io-ts';
import { EMPTY, type Observable } from 'rxjs';
import { describe, expectTypeOf, it } from 'vitest';
import {
  type ConfigType,
  configTypes,
  defineConfig,
  type OffsetOf,
  offsetCodec,
  type PartitionOf,
  type SourceRecord,
  SourceTask,
} from '../../src/index.js';
import type { CapturedRecord } from '../../src/testing/index.js';

// Type tests: `npm run typecheck` fails if the public API stops inferring these types.
const codec = offsetCodec({ partition: t.type({ table: t.string }), offset: t.type({ lsn: t.string }) });
const config = defineConfig({
  tables: { type: configTypes.list, description: 'Tables.' },
  'batch.size': { type: configTypes.positiveInt, default: 10, description: 'Batch.' },
});

class TypedTask extends SourceTask<PartitionOf<typeof codec>, OffsetOf<typeof codec>, ConfigType<typeof config>> {
  readonly offsets = codec;
  start(): void {}
  poll(): Observable<SourceRecord<{ table: string }, { lsn: string }>> {
    return EMPTY;
  }
}

describe('public API types', () => {
  it('infers partition, offset and config types from their codecs', () => {
    expectTypeOf<PartitionOf<typeof codec>>().toEqualTypeOf<{ table: string }>();
    expectTypeOf<OffsetOf<typeof codec>>().toEqualTypeOf<{ lsn: string }>();
    expectTypeOf<ConfigType<typeof config>>().toEqualTypeOf<{ tables: string[]; 'batch.size': number }>();
    expectTypeOf<Parameters<TypedTask['commit']>[0]>().toEqualTypeOf<
      ReadonlyArray<{ readonly partition: { table: string }; readonly offset: { lsn: string } }>
    >();
    expectTypeOf<CapturedRecord<{ table: string }, { lsn: string }>['sourceOffset']>().toEqualTypeOf<{ lsn: string }>();
    const decoded = codec.decodeOffset({});
    if (decoded.ok) expectTypeOf(decoded.value).toEqualTypeOf<{ lsn: string }>();
    else expectTypeOf(decoded.problems).toEqualTypeOf<string[]>();
  });
});
