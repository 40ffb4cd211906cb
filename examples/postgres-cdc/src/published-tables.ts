import pg from 'pg';

/** A relation a publication publishes, as `pg_publication_tables` lists it. */
export interface PublishedTable {
  /** `schema.table`. */
  readonly name: string;
  /** The relation's OID, the identity pgoutput's relation messages carry. */
  readonly oid: number;
  /** The row filter (`WHERE` of PostgreSQL 15+), null when every row is published. */
  readonly rowFilter: string | null;
  /** The published columns (PostgreSQL 15+), null when the server does not say. */
  readonly columns: readonly string[] | null;
}

/**
 * The relations publication `publication` publishes now, by name and OID. With
 * `publish_via_partition_root` a partitioned table is listed under its own name, without it
 * its leaf partitions are. `to_jsonb` reads the PostgreSQL 15 columns (`rowfilter`,
 * `attnames`) without failing on older servers, which have none.
 */
export async function readPublishedTables(client: pg.Client, publication: string): Promise<PublishedTable[]> {
  const { rows } = await client.query<{ name: string; oid: string; rowfilter: string | null; attnames: string[] | null }>(
    `SELECT pt.schemaname || '.' || pt.tablename AS name, c.oid::text AS oid,
            to_jsonb(pt) ->> 'rowfilter' AS rowfilter, to_jsonb(pt) -> 'attnames' AS attnames
       FROM pg_publication_tables pt
       JOIN pg_namespace n ON n.nspname = pt.schemaname
       JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
      WHERE pt.pubname = $1`,
    [publication],
  );
  return rows.map((r) => ({ name: r.name, oid: Number(r.oid), rowFilter: r.rowfilter, columns: r.attnames }));
}

/** What a publication publishes, from `pg_publication`. */
export interface PublicationRow {
  readonly insert: boolean;
  readonly update: boolean;
  readonly delete: boolean;
  readonly truncate: boolean;
  /** `publish_via_partition_root` (PostgreSQL 13+; null before). */
  readonly viaroot: boolean | null;
}

/** The publication's row, undefined when there is none by that name. */
export async function readPublication(client: pg.Client, publication: string): Promise<PublicationRow | undefined> {
  const { rows } = await client.query<PublicationRow>(
    `SELECT pubinsert AS insert, pubupdate AS update, pubdelete AS delete, pubtruncate AS truncate,
            (to_jsonb(p) ->> 'pubviaroot')::boolean AS viaroot
       FROM pg_publication p WHERE pubname = $1`,
    [publication],
  );
  return rows[0];
}

/**
 * Runs again, while the task runs, the start checks that decide whether the publication still
 * sends every change of each captured table whole:
 *
 * - each captured table is still published as the relation captured at start (same OID): a
 *   table dropped and re-created, or renamed and swapped, under a captured name is another
 *   relation, which the publication does not hold;
 * - the publication still publishes insert, update and delete;
 * - a captured partitioned table is still published via its root;
 * - no row filter, and no column list that leaves out one of the table's current columns (a
 *   column added since start is not in a column list).
 *
 * Returns one line per problem, each with its fix; empty when all is well.
 */
export async function capturedTableChanges(
  client: pg.Client,
  publication: string,
  captured: ReadonlyMap<string, number>,
): Promise<string[]> {
  const quoted = pg.escapeIdentifier(publication);
  const now = new Map((await readPublishedTables(client, publication)).map((t) => [t.name, t]));
  const problems: string[] = [];
  const readd = (name: string) =>
    `its changes since then were not captured; add the table that has the name now to the publication (ALTER PUBLICATION ${quoted} ADD TABLE ${name}) and restart the task, what was written to it before is not captured`;
  for (const [name, oid] of captured) {
    const current = now.get(name)?.oid;
    if (current === oid) continue;
    problems.push(
      current === undefined
        ? `table ${name} (relation OID ${oid} at start) is no longer in publication "${publication}": it was dropped, renamed or removed from the publication; ${readd(name)}`
        : `table ${name} in publication "${publication}" is relation OID ${current}, not the relation OID ${oid} captured at start: it was dropped and re-created, or swapped by renames; ${readd(name)}`,
    );
  }
  const pub = await readPublication(client, publication);
  if (!pub) return problems;
  const left = (['insert', 'update', 'delete'] as const).filter((op) => !pub[op]);
  if (left.length > 0) {
    const all = pub.truncate ? 'insert, update, delete, truncate' : 'insert, update, delete';
    problems.push(
      `publication "${publication}" no longer publishes ${left.join(', ')}: those changes of the captured tables are lost; ` +
        `it must publish insert, update and delete: ALTER PUBLICATION ${quoted} SET (publish = '${all}'), then restart the task`,
    );
  }
  const { rows: tables } = await client.query<{ oid: string; kind: string; cols: string[] }>(
    `SELECT c.oid::text AS oid, c.relkind::text AS kind,
            ARRAY(SELECT a.attname::text FROM pg_attribute a
                   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
                   ORDER BY a.attnum) AS cols
       FROM pg_class c WHERE c.oid = ANY($1::oid[])`,
    [[...captured.values()]],
  );
  const info = new Map(tables.map((t) => [Number(t.oid), t]));
  for (const [name, oid] of captured) {
    const table = now.get(name);
    const current = info.get(oid);
    if (table?.oid !== oid || !current) continue;
    const whole = `publish it whole: ALTER PUBLICATION ${quoted} DROP TABLE ${name}, then ALTER PUBLICATION ${quoted} ADD TABLE ${name}, and restart the task`;
    if (current.kind === 'p' && pub.viaroot !== true) {
      problems.push(
        `${name} is a partitioned table, and publication "${publication}" now publishes its changes under the partitions' names, ` +
          `which are not captured: ALTER PUBLICATION ${quoted} SET (publish_via_partition_root = true), then restart the task`,
      );
    }
    if (table.rowFilter !== null) {
      problems.push(
        `publication "${publication}" now publishes only the rows of ${name} WHERE ${table.rowFilter}: changes of other rows are lost; ${whole}`,
      );
    }
    const unpublished = table.columns === null ? [] : current.cols.filter((c) => !table.columns?.includes(c));
    if (unpublished.length > 0) {
      problems.push(
        `publication "${publication}" leaves column(s) ${unpublished.join(', ')} of ${name} out of its column list ` +
          `(added to the table or removed from the list since start): records lack them; ${whole}`,
      );
    }
  }
  return problems;
}
