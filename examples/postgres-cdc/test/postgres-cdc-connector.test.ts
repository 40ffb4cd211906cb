import { isTributaryError } from 'tributary-connect';
import { describe, expect, it } from 'vitest';
import { PostgresCdcConnector } from '../src/index.js';

describe('PostgresCdcConnector', () => {
  it('reads its config from properties strings, with defaults for the rest', () => {
    const parsed = new PostgresCdcConnector().config.parse({
      tables: 'orders, inventory.items',
      'topic.prefix': 'shop',
      'database.port': '5433',
      'slot.create': 'false',
    });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value).toMatchObject({
      tables: ['orders', 'inventory.items'],
      'topic.prefix': 'shop',
      'database.port': 5433,
      'slot.create': false,
      'slot.name': 'tributary',
      'publication.name': 'tributary',
      'publication.create': true,
      'max.queue.size': 8192,
      'max.batch.size': 2048,
      'query.timeout.ms': 30_000,
    });
  });

  it('rejects a config without tables or topic.prefix, naming each key', () => {
    const parsed = new PostgresCdcConnector().config.parse({});
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problems.map((p) => p.key).sort()).toEqual(['tables', 'topic.prefix']);
  });

  it('rejects a table that is not table or schema.table, and an empty table list', () => {
    const connector = new PostgresCdcConnector();
    const config = (tables: string) => {
      const parsed = connector.config.parse({ tables, 'topic.prefix': 'shop' });
      if (!parsed.ok) throw new Error('config should parse');
      return parsed.value;
    };
    const startWith = (tables: string) => {
      try {
        connector.start(config(tables));
        return undefined;
      } catch (e) {
        return e;
      }
    };
    const bad = startWith('a.b.c');
    expect(isTributaryError(bad) && bad.code).toBe('CONFIG_INVALID');
    expect((bad as Error).message).toContain('tables: "a.b.c" is not table or schema.table');
    expect((startWith('') as Error).message).toContain('tables: name at least one table to capture');
  });

  it('runs one task whatever tasks.max says: a slot has one reader', () => {
    const connector = new PostgresCdcConnector();
    const parsed = connector.config.parse({ tables: 'orders', 'topic.prefix': 'shop' });
    if (!parsed.ok) throw new Error('config should parse');
    connector.start(parsed.value);
    expect(connector.taskConfigs(4, parsed.value)).toHaveLength(1);
  });
});
