/**
 * Table and index sizes at scale: per million rows of push_registrations, push_pending and
 * push_processed_events (table + indexes, TOAST included) beside the rows' own bytes (the sum
 * of pg_column_size), and each index apart.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/testing.js';
import type { Report, Section } from '../report.js';

export async function measureSizes(pool: DatabasePool, report: Report, section: Section): Promise<void> {
  // Per the rows actually there (other measurements' few are counted in).
  const tables = [
    { table: 'push_registrations', per: 'per 1,000,000 registrations' },
    { table: 'push_pending', per: 'per 1,000,000 pending rows' },
    { table: 'push_processed_events', per: 'per 1,000,000 counted events' },
  ];
  const mib = (bytes: number, rows: number) => ((bytes / rows) * 1_000_000) / 2 ** 20;
  const rows: (string | number)[][] = [];
  for (const { table, per } of tables) {
    const sizes = await pool.one(sql.type(z.object({ heap: z.number(), indexes: z.number(), total: z.number(), data: z.number(), rows: z.number() }))`
      SELECT pg_relation_size(${table}::regclass)::float8 AS heap, pg_indexes_size(${table}::regclass)::float8 AS indexes,
             pg_total_relation_size(${table}::regclass)::float8 AS total,
             (SELECT sum(pg_column_size(t.*))::float8 FROM ${sql.identifier([table])} t) AS data,
             (SELECT count(*)::float8 FROM ${sql.identifier([table])}) AS rows`);
    report.figure(section, {
      name: `${table}: table + indexes (TOAST included), ${per}`,
      value: mib(sizes.total, sizes.rows),
      unit: 'MiB',
      reference: { name: "the rows' own bytes (sum of pg_column_size)", value: mib(sizes.data, sizes.rows) },
      ...(table === 'push_registrations' ? { headline: 'scale: sizes' } : {}),
    });
    const indexes = await pool.any(sql.type(z.object({ name: z.string(), bytes: z.number() }))`
      SELECT c.relname AS name, pg_relation_size(c.oid)::float8 AS bytes
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = ${table}::regclass ORDER BY c.relname`);
    rows.push([table, 'heap', mib(sizes.heap, sizes.rows)]);
    for (const index of indexes) rows.push([table, `index ${index.name}`, mib(index.bytes, sizes.rows)]);
  }
  section.tables.push({
    title: 'Sizes per million rows of each table (MiB), after `VACUUM ANALYZE`:',
    header: ['table', 'part', 'MiB per 1,000,000 rows'],
    rows,
  });
}
