import pg from 'pg';
import type { TributaryError } from 'tributary-connect';
import { MockRuntime } from 'tributary-connect/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type CdcOffset,
  type CdcPartition,
  type ChangeValue,
  type PostgresCdcConfig,
  PostgresCdcTask,
  postgresCdcConfig,
} from '../src/index.js';
import { parseLsn } from '../src/lsn.js';
import { eventually } from './eventually.js';
import { type PgCluster, startPgCluster } from './pg-cluster.js';

/**
 * What the task captures, and refuses, when the captured tables are not plain tables the
 * publication publishes whole: partitioned tables, tables re-created while the task runs,
 * publications that leave out some operations, replica identities that are not the key.
 */

type Run = MockRuntime<CdcPartition, CdcOffset, PostgresCdcConfig>;

let cluster: PgCluster;
const runs: Run[] = [];
let seq = 0;

beforeAll(async () => {
  cluster = await startPgCluster();
}, 120_000);

afterEach(async () => {
  for (const run of runs.splice(0)) if (run.status.state !== 'FAILED' && run.status.state !== 'STOPPED') await run.stop();
  // The scratch cluster has 10 slots: free this test's.
  await cluster.query(
    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'cap\\_%' AND NOT active",
  );
});

afterAll(async () => {
  await cluster?.stop();
});

/** A fresh slot, publication and table-name suffix for each test. */
function names() {
  seq++;
  return { slot: `cap_${seq}`, publication: `cap_pub_${seq}`, n: seq };
}

async function start(extra: Record<string, unknown>, connectorConfig: Record<string, unknown> = {}): Promise<Run> {
  const parsed = postgresCdcConfig.parse({ 'connection.string': cluster.connectionString(), 'topic.prefix': 'shop', ...extra });
  if (!parsed.ok) throw new Error(parsed.problems.map((p) => p.message).join('; '));
  const run = await MockRuntime.start(PostgresCdcTask, {
    config: parsed.value,
    connectorConfig: { 'heartbeat.topic': 'beats', ...connectorConfig },
    workerConfig: { 'offset.flush.interval.ms': 3_600_000 },
  });
  runs.push(run);
  return run;
}

/** The error of a task that failed, or a test failure saying what state it is in instead. */
function failure(run: Run): TributaryError {
  const status = run.status;
  if (status.state !== 'FAILED') throw new Error(`expected the task to have failed, it is ${status.state}`);
  return status.error as TributaryError;
}

async function walLsn(): Promise<string> {
  return (await cluster.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn'))[0]!.lsn;
}

async function confirmedLsn(slot: string): Promise<string | undefined> {
  const rows = await cluster.query<{ lsn: string }>(
    'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  );
  return rows[0]?.lsn;
}

const changes = (run: Run, topic: string) =>
  run.records(topic).map((r) => [(r.value as ChangeValue).op, r.key, (r.value as ChangeValue).source.table]);

describe('postgres-cdc captured tables', () => {
  it('captures the changes of a partitioned table under the partitioned table name', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE events_${n} (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
      CREATE TABLE events_${n}_2024 PARTITION OF events_${n} FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');`);
    const run = await start({ tables: `events_${n}`, 'slot.name': slot, 'publication.name': publication });
    await cluster.query(`
      INSERT INTO events_${n} VALUES (1, '2024-03-01'), (2, '2024-04-01');
      DELETE FROM events_${n} WHERE id = 1;`);
    const topic = `shop.public.events_${n}`;
    await eventually('three change records', () => run.records(topic).length >= 3, { runs: [run] });
    expect(changes(run, topic)).toEqual([
      ['c', { id: 1, at: expect.anything() }, `events_${n}`],
      ['c', { id: 2, at: expect.anything() }, `events_${n}`],
      ['d', { id: 1, at: expect.anything() }, `events_${n}`],
    ]);
    const published = await cluster.query<{ pubviaroot: boolean }>('SELECT pubviaroot FROM pg_publication WHERE pubname = $1', [
      publication,
    ]);
    expect(published).toEqual([{ pubviaroot: true }]);
  });

  it('refuses an existing publication that publishes a captured partitioned table under its partitions names', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE events_${n} (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
      CREATE TABLE events_${n}_2024 PARTITION OF events_${n} FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
      CREATE PUBLICATION ${publication} FOR TABLE events_${n};`);
    const run = await start({ tables: `events_${n}`, 'slot.name': slot, 'publication.name': publication });
    expect(failure(run).code).toBe('CONFIG_INVALID');
    expect(failure(run).message).toContain(
      `tables: public.events_${n} is a partitioned table, and publication "${publication}" publishes its changes under ` +
        `the partitions' names, which are not captured: ALTER PUBLICATION "${publication}" SET (publish_via_partition_root = true)`,
    );
  });

  it('drops the changes of a table created while the task runs in a FOR ALL TABLES publication, one that INHERITS a captured table too', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE a_${n} (id int PRIMARY KEY);
      CREATE PUBLICATION ${publication} FOR ALL TABLES WITH (publish_via_partition_root = true);`);
    const run = await start(
      { tables: `a_${n}`, 'slot.name': slot, 'publication.name': publication },
      { 'heartbeat.interval.ms': 300 },
    );
    await cluster.query(`
      INSERT INTO a_${n} VALUES (1);
      CREATE TABLE staging_${n} (id int PRIMARY KEY);
      BEGIN; INSERT INTO a_${n} VALUES (2); INSERT INTO staging_${n} VALUES (1); INSERT INTO a_${n} VALUES (3); COMMIT;
      INSERT INTO staging_${n} VALUES (2);
      -- A table that INHERITS the captured one is another table, not a partition of it.
      CREATE TABLE audit_${n} (note text) INHERITS (a_${n});
      INSERT INTO audit_${n} VALUES (9, 'x');
      INSERT INTO a_${n} VALUES (4);`);
    const topic = `shop.public.a_${n}`;
    await eventually('four change records', () => run.records(topic).length >= 4, { runs: [run] });
    const after = await walLsn();
    await eventually(
      'a heartbeat past the writes',
      () => run.heartbeats.some((h) => parseLsn(h.sourceOffset.lsn) >= parseLsn(after)),
      {
        runs: [run],
      },
    );
    expect(run.status.state).toBe('RUNNING');
    expect(run.records(topic).map((r) => r.key)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]);
  });

  it('fails the task when a partition of a captured table arrives under its own name', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE events_${n} (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
      CREATE TABLE events_${n}_2024 PARTITION OF events_${n} FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');`);
    const run = await start({ tables: `events_${n}`, 'slot.name': slot, 'publication.name': publication });
    await cluster.query(`INSERT INTO events_${n} VALUES (1, '2024-03-01')`);
    await eventually('the first change', () => run.dataRecords.length === 1, { runs: [run] });
    await cluster.query(`
      ALTER PUBLICATION ${publication} SET (publish_via_partition_root = false);
      INSERT INTO events_${n} VALUES (2, '2024-04-01');`);
    await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run] });
    expect(run.dataRecords).toHaveLength(1);
    expect(failure(run).message).toMatch(
      new RegExp(
        `publication "${publication}" sent a change of public.events_${n}_2024 \\(relation OID \\d+\\), a partition of ` +
          `captured table public.events_${n}, under the partition's own name`,
      ),
    );
    expect(failure(run).message).toContain('SET (publish_via_partition_root = true)');
  });

  it('fails the task, with no heartbeat past it, when a captured table is dropped and re-created', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`CREATE TABLE orders_${n} (id int PRIMARY KEY); CREATE TABLE noise_${n} (p text);`);
    const run = await start(
      { tables: `orders_${n}`, 'slot.name': slot, 'publication.name': publication },
      { 'heartbeat.interval.ms': 500 },
    );
    await cluster.query(`INSERT INTO orders_${n} VALUES (1)`);
    await eventually('the first change', () => run.dataRecords.length === 1, { runs: [run] });
    await cluster.query(`DROP TABLE orders_${n}; CREATE TABLE orders_${n} (id int PRIMARY KEY);`);
    const dropped = await walLsn();
    await cluster.query(
      `INSERT INTO orders_${n} VALUES (2); INSERT INTO noise_${n} SELECT repeat('n', 200) FROM generate_series(1, 300);`,
    );
    await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run] });
    expect(failure(run).message).toMatch(
      new RegExp(
        `table public.orders_${n} \\(relation OID \\d+ at start\\) is no longer in publication "${publication}": it was dropped, renamed or removed`,
      ),
    );
    expect(failure(run).message).toContain('the offset is not moved past them');
    expect(run.heartbeats.every((h) => parseLsn(h.sourceOffset.lsn) < parseLsn(dropped))).toBe(true);
  });

  it('fails the task when a captured table swapped by renames comes back into the publication', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`CREATE TABLE orders_${n} (id int PRIMARY KEY)`);
    const run = await start({ tables: `orders_${n}`, 'slot.name': slot, 'publication.name': publication });
    await cluster.query(`
      ALTER TABLE orders_${n} RENAME TO orders_${n}_old;
      CREATE TABLE orders_${n} (id int PRIMARY KEY);
      ALTER PUBLICATION ${publication} ADD TABLE orders_${n};
      INSERT INTO orders_${n} VALUES (1);`);
    await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run] });
    expect(failure(run).message).toMatch(
      new RegExp(
        `sent a change of public.orders_${n} as relation OID \\d+, but the table captured at start is relation OID \\d+`,
      ),
    );
    expect(run.dataRecords).toHaveLength(0);
  });

  it('does not confirm to the slot an offset past a captured table that was re-created', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`CREATE TABLE a_${n} (id int PRIMARY KEY); CREATE TABLE b_${n} (id int PRIMARY KEY);`);
    const run = await start({ tables: `a_${n},b_${n}`, 'slot.name': slot, 'publication.name': publication });
    const before = await confirmedLsn(slot);
    await cluster.query(`DROP TABLE a_${n}; CREATE TABLE a_${n} (id int PRIMARY KEY); INSERT INTO a_${n} VALUES (1);`);
    await cluster.query(`INSERT INTO b_${n} VALUES (1)`);
    await eventually('the change of the other table', () => run.dataRecords.length === 1, { runs: [run] });
    await run.flush();
    await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run] });
    expect(failure(run).message).toContain(`table public.a_${n}`);
    expect(await confirmedLsn(slot)).toBe(before);
  });

  it('refuses an existing publication that does not publish deletes', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE items_${n} (id int PRIMARY KEY);
      CREATE PUBLICATION ${publication} FOR TABLE items_${n} WITH (publish = 'insert, update');`);
    const run = await start({ tables: `items_${n}`, 'slot.name': slot, 'publication.name': publication });
    expect(failure(run).code).toBe('CONFIG_INVALID');
    expect(failure(run).message).toContain(
      `publication.name: publication "${publication}" does not publish delete: those changes of the captured tables ` +
        `would be lost. It must publish insert, update and delete: ALTER PUBLICATION "${publication}" SET (publish = 'insert, update, delete')`,
    );
  });

  it('refuses an existing publication with a row filter or a column list on a captured table', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE items_${n} (id int PRIMARY KEY, qty int, note text, total int GENERATED ALWAYS AS (qty * 2) STORED);
      CREATE TABLE users_${n} (id int PRIMARY KEY, email text, name text);
      CREATE PUBLICATION ${publication} FOR TABLE items_${n} WHERE (qty > 0), users_${n} (id, name);`);
    const run = await start({ tables: `items_${n},users_${n}`, 'slot.name': slot, 'publication.name': publication });
    expect(failure(run).code).toBe('CONFIG_INVALID');
    expect(failure(run).message).toContain(
      `tables: publication "${publication}" publishes only the rows of public.items_${n} WHERE (qty > 0): changes of other rows would be lost`,
    );
    expect(failure(run).message).toContain(
      `tables: publication "${publication}" leaves column(s) email of public.users_${n} out of its column list: records would lack them`,
    );
    expect(failure(run).message).not.toContain(`of public.items_${n} out of its column list`);
  });

  it('accepts an existing publication that publishes the captured tables whole', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE items_${n} (id int PRIMARY KEY, qty int, total int GENERATED ALWAYS AS (qty * 2) STORED);
      CREATE PUBLICATION ${publication} FOR TABLE items_${n} WITH (publish = 'insert, update, delete');`);
    const run = await start({ tables: `items_${n}`, 'slot.name': slot, 'publication.name': publication });
    await cluster.query(`INSERT INTO items_${n} VALUES (1, 2); DELETE FROM items_${n};`);
    await eventually('two change records', () => run.dataRecords.length === 2, { runs: [run] });
    expect(run.dataRecords.map((r) => (r.value as ChangeValue).op)).toEqual(['c', 'd']);
  });

  it('fails the task, with no heartbeat past it, when a column is added outside the column list while it runs', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE users_${n} (id int PRIMARY KEY, name text);
      CREATE PUBLICATION ${publication} FOR TABLE users_${n} (id, name);`);
    const run = await start(
      { tables: `users_${n}`, 'slot.name': slot, 'publication.name': publication },
      { 'heartbeat.interval.ms': 300 },
    );
    await cluster.query(`INSERT INTO users_${n} VALUES (1, 'A')`);
    await eventually('the first change', () => run.dataRecords.length === 1, { runs: [run] });
    const altered = await walLsn();
    await cluster.query(`ALTER TABLE users_${n} ADD COLUMN email text; INSERT INTO users_${n} VALUES (2, 'B', 'b@x');`);
    await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run] });
    expect(failure(run).code).toBe('POLL_FAILED');
    expect(failure(run).message).toContain(
      `publication "${publication}" leaves column(s) email of public.users_${n} out of its column list`,
    );
    expect(failure(run).message).toContain('the offset is not moved past them');
    expect(run.heartbeats.every((h) => parseLsn(h.sourceOffset.lsn) < parseLsn(altered))).toBe(true);
  });

  it('fails the task, confirming nothing past it, when the publication stops publishing deletes while it runs', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`CREATE TABLE items_${n} (id int PRIMARY KEY); INSERT INTO items_${n} VALUES (1), (2);`);
    const run = await start({ tables: `items_${n}`, 'slot.name': slot, 'publication.name': publication });
    const before = await confirmedLsn(slot);
    await cluster.query(`ALTER PUBLICATION ${publication} SET (publish = 'insert, update')`);
    await cluster.query(`DELETE FROM items_${n} WHERE id = 1`);
    await cluster.query(`INSERT INTO items_${n} VALUES (3)`);
    await eventually('the insert', () => run.dataRecords.length === 1, { runs: [run] });
    await run.flush();
    await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run] });
    expect(failure(run).message).toContain(
      `publication "${publication}" no longer publishes delete: those changes of the captured tables are lost; ` +
        `it must publish insert, update and delete: ALTER PUBLICATION "${publication}" SET (publish = 'insert, update, delete')`,
    );
    expect(await confirmedLsn(slot)).toBe(before);
  });

  it('fails the task, confirming nothing, when a check of the publication does not answer within query.timeout.ms', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`CREATE TABLE slow_${n} (id int PRIMARY KEY)`);
    const run = await start({
      tables: `slow_${n}`,
      'slot.name': slot,
      'publication.name': publication,
      'query.timeout.ms': 1000,
    });
    const before = await confirmedLsn(slot);
    await cluster.query(`INSERT INTO slow_${n} VALUES (1)`);
    await eventually('the change', () => run.dataRecords.length === 1, { runs: [run] });
    // The check before the confirmation reads pg_publication: held locked, it waits.
    const locker = new pg.Client({ connectionString: cluster.connectionString() });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE pg_catalog.pg_publication IN ACCESS EXCLUSIVE MODE');
      const flushed = run.flush();
      await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run], timeoutMs: 10_000 });
      await flushed.catch(() => {});
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect(failure(run).code).toBe('POLL_FAILED');
    expect(failure(run).message).toContain('the check of the publication did not answer within query.timeout.ms (1000 ms)');
    expect(await confirmedLsn(slot)).toBe(before);
  });

  it('refuses a table whose replica identity index lacks the primary key', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE users_${n} (id int PRIMARY KEY, email text NOT NULL UNIQUE, name text);
      ALTER TABLE users_${n} REPLICA IDENTITY USING INDEX users_${n}_email_key;`);
    const run = await start({ tables: `users_${n}`, 'slot.name': slot, 'publication.name': publication });
    expect(failure(run).code).toBe('CONFIG_INVALID');
    expect(failure(run).message).toContain(
      `tables: public.users_${n} has REPLICA IDENTITY USING INDEX users_${n}_email_key (email), which lacks primary key ` +
        `column(s) id: a delete would carry no primary key, and the record key is the primary key. ` +
        `ALTER TABLE public.users_${n} REPLICA IDENTITY DEFAULT (or FULL)`,
    );
  });

  it('keys deletes by primary key with a replica identity index that contains it', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`
      CREATE TABLE users_${n} (id int PRIMARY KEY, email text NOT NULL, name text);
      CREATE UNIQUE INDEX users_${n}_id_email ON users_${n} (email, id);
      ALTER TABLE users_${n} REPLICA IDENTITY USING INDEX users_${n}_id_email;`);
    const run = await start({ tables: `users_${n}`, 'slot.name': slot, 'publication.name': publication });
    await cluster.query(`INSERT INTO users_${n} VALUES (1, 'a@x', 'A'); DELETE FROM users_${n} WHERE id = 1;`);
    await eventually('two change records', () => run.dataRecords.length === 2, { runs: [run] });
    expect(run.dataRecords.map((r) => [(r.value as ChangeValue).op, r.key])).toEqual([
      ['c', { id: 1 }],
      ['d', { id: 1 }],
    ]);
  });

  it('fails the task on a delete without its primary key when the replica identity changed while it ran', async () => {
    const { slot, publication, n } = names();
    await cluster.query(`CREATE TABLE users_${n} (id int PRIMARY KEY, email text NOT NULL UNIQUE)`);
    const run = await start({ tables: `users_${n}`, 'slot.name': slot, 'publication.name': publication });
    await cluster.query(`
      INSERT INTO users_${n} VALUES (1, 'a@x');
      ALTER TABLE users_${n} REPLICA IDENTITY USING INDEX users_${n}_email_key;
      DELETE FROM users_${n} WHERE id = 1;`);
    await eventually('the task to fail', () => run.status.state === 'FAILED', { runs: [run] });
    expect(run.dataRecords.map((r) => r.key)).toEqual([{ id: 1 }]);
    expect(failure(run).message).toMatch(
      new RegExp(
        `a d of public.users_${n} at [0-9A-F/]+ carries no value for primary key column\\(s\\) id, so it has no record key`,
      ),
    );
  });
});
