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
