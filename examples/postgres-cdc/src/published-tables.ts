import type pg from 'pg';

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

/**
 * Checks that each captured table is still published as the relation captured at start
 * (same OID): a table dropped and re-created, or renamed and swapped, under a captured name is
 * another relation, which the publication does not hold. Returns one line per problem, empty
 * when all is well.
 */
export async function capturedTableChanges(
  client: pg.Client,
  publication: string,
  captured: ReadonlyMap<string, number>,
): Promise<string[]> {
  const now = new Map((await readPublishedTables(client, publication)).map((t) => [t.name, t.oid]));
  const problems: string[] = [];
  for (const [name, oid] of captured) {
    const current = now.get(name);
    if (current === oid) continue;
    problems.push(
      current === undefined
        ? `table ${name} (relation OID ${oid} at start) is no longer in publication "${publication}": it was dropped, renamed or removed from the publication`
        : `table ${name} in publication "${publication}" is relation OID ${current}, not the relation OID ${oid} captured at start: it was dropped and re-created, or swapped by renames`,
    );
  }
  return problems;
}
