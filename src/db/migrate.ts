/**
 * Applies migrations in golang-migrate's file format (`NNNNNN_name.up.sql` / `.down.sql`) and
 * with its bookkeeping (`schema_migrations(version, dirty)`, one row: the current version),
 * so the host's own golang-migrate and this command agree on what is applied.
 *
 * Safe when several replicas start at once: everything happens under one session-level
 * advisory lock, and each migration commits together with its version row, so a crash leaves
 * either the old or the new version — never a half-applied one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { postgresConnection } from './connection.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly up: string;
  readonly down: string | undefined;
}

/** Arbitrary but fixed: the lock every replica of this service's migrate command takes. */
const migrationLockKey = 7_022_022_022;

const fileName = /^(\d+)_([A-Za-z0-9_-]+)\.(up|down)\.sql$/;

/** Reads and merges the migrations of `dirs`; a version may appear only once. */
export function readMigrations(dirs: readonly string[]): Migration[] {
  const byVersion = new Map<number, { name: string; up?: string; down?: string; dir: string }>();
  for (const dir of dirs) {
    for (const file of readdirSync(dir)) {
      const match = fileName.exec(file);
      if (match === null) continue;
      const version = Number(match[1]);
      const entry = byVersion.get(version) ?? { name: match[2]!, dir };
      if (entry.dir !== dir || entry.name !== match[2]) {
        throw new Error(`migration version ${version} is defined twice (${entry.dir}/${entry.name}, ${dir}/${match[2]})`);
      }
      entry[match[3] as 'up' | 'down'] = readFileSync(path.join(dir, file), 'utf8');
      byVersion.set(version, entry);
    }
  }
  return [...byVersion.entries()]
    .sort(([a], [b]) => a - b)
    .map(([version, entry]) => {
      if (entry.up === undefined) throw new Error(`migration ${version}_${entry.name} has no .up.sql`);
      return { version, name: entry.name, up: entry.up, down: entry.down };
    });
}

export interface MigrationResult {
  readonly from: number | undefined;
  readonly to: number | undefined;
  readonly applied: readonly string[];
}

/** Applies every migration above the current version. Idempotent. */
export async function migrateUp(databaseUrl: string, migrations: readonly Migration[]): Promise<MigrationResult> {
  return withMigrationLock(databaseUrl, async (client) => {
    const from = await currentVersion(client);
    const applied: string[] = [];
    for (const migration of migrations) {
      if (from !== undefined && migration.version <= from) continue;
      await inTransaction(client, async () => {
        await client.query(migration.up);
        await setVersion(client, migration.version);
      });
      applied.push(label(migration));
    }
    return { from, to: await currentVersion(client), applied };
  });
}

/** Reverts the `steps` most recent applied migrations. */
export async function migrateDown(databaseUrl: string, migrations: readonly Migration[], steps = 1): Promise<MigrationResult> {
  return withMigrationLock(databaseUrl, async (client) => {
    const from = await currentVersion(client);
    const applied: string[] = [];
    const done = migrations.filter((m) => from !== undefined && m.version <= from).reverse();
    for (const [index, migration] of done.slice(0, steps).entries()) {
      const down = migration.down;
      if (down === undefined) throw new Error(`migration ${label(migration)} has no .down.sql`);
      await inTransaction(client, async () => {
        await client.query(down);
        await setVersion(client, done[index + 1]?.version);
      });
      applied.push(label(migration));
    }
    return { from, to: await currentVersion(client), applied };
  });
}

/**
 * Migration files hold several statements, which slonik refuses by design; they run on a
 * plain `pg` client (simple query protocol), as golang-migrate runs them.
 */
async function withMigrationLock<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const { url, ssl } = postgresConnection(databaseUrl);
  const client = new pg.Client({ connectionString: url, ssl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [migrationLockKey]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)');
    return await work(client);
  } finally {
    await client.end(); // ends the session, which releases the advisory lock
  }
}

async function inTransaction(client: pg.Client, work: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await work();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

async function currentVersion(client: pg.Client): Promise<number | undefined> {
  const { rows } = await client.query<{ version: string; dirty: boolean }>('SELECT version::text AS version, dirty FROM schema_migrations LIMIT 1');
  const row = rows[0];
  if (row === undefined) return undefined;
  if (row.dirty) throw new Error(`schema_migrations is dirty at version ${row.version}: fix the schema by hand, then clear the flag`);
  return Number(row.version);
}

async function setVersion(client: pg.Client, version: number | undefined): Promise<void> {
  await client.query('DELETE FROM schema_migrations');
  if (version !== undefined) await client.query('INSERT INTO schema_migrations (version, dirty) VALUES ($1, false)', [version]);
}

function label(migration: Migration): string {
  return `${String(migration.version).padStart(6, '0')}_${migration.name}`;
}
