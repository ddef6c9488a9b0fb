/**
 * Applies migrations in golang-migrate's file format (`NNNNNN_name.up.sql` / `.down.sql`) and
 * with its bookkeeping (`schema_migrations(version, dirty)` in the current schema, one row:
 * the current version), so the host's own golang-migrate and this command agree on what is
 * applied, and serialize on the same lock (test/golang-migrate proves both against the real
 * `migrate` CLI).
 *
 * Safe when several replicas start at once: everything happens under golang-migrate's own
 * session-level advisory lock, and each migration commits together with its version row, so
 * a crash or a failing statement leaves either the old or the new version — never a
 * half-applied one, and never a dirty flag. A dirty flag left by golang-migrate (which marks
 * the version it is applying dirty until it is done) stops this command, as it stops
 * golang-migrate, until someone checks the schema and runs `force`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import pg from 'pg';
import { postgresConnection } from './connection.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly up: string;
  readonly down: string | undefined;
}

export const migrationsTable = 'schema_migrations';

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

/**
 * golang-migrate's `database.GenerateAdvisoryLockId(database, schema, table)`: the CRC-32
 * (IEEE) of `<schema>\0<table>\0<database>`, times 1486364155 as an unsigned 32-bit integer.
 */
export function golangMigrateLockId(database: string, schema: string, table = migrationsTable): number {
  return Math.imul(crc32(`${schema}\0${table}\0${database}`), 1_486_364_155) >>> 0;
}

/**
 * The locks golang-migrate's PostgreSQL driver takes for this database, in the order this
 * command takes them. Its `database` part depends on how golang-migrate was opened:
 *  - the `migrate` CLI (`-database postgres://…/zippchat`) passes the URL's path, leading
 *    slash included: `/zippchat`;
 *  - Go code embedding the library (`postgres.WithInstance`) asks `current_database()`: `zippchat`.
 * Taking both (always in this order; golang-migrate itself takes only one) serializes this
 * command with either kind of host.
 */
export function golangMigrateLockIds(database: string, schema: string): readonly number[] {
  return [golangMigrateLockId(`/${database}`, schema), golangMigrateLockId(database, schema)];
}

export interface MigrationResult {
  readonly from: number | undefined;
  readonly to: number | undefined;
  readonly applied: readonly string[];
}

/**
 * Applies every migration above the current version. Idempotent. Refuses, applying nothing, a
 * database whose version it does not know (`UnknownVersionError`).
 */
export async function migrateUp(databaseUrl: string, migrations: readonly Migration[]): Promise<MigrationResult> {
  return withMigrationLock(databaseUrl, async (session) => {
    const from = await session.cleanVersion();
    requireKnownVersion(from, migrations);
    const applied: string[] = [];
    for (const migration of migrations) {
      if (from !== undefined && migration.version <= from) continue;
      await session.inTransaction(async () => {
        await session.client.query(migration.up);
        await session.setVersion(migration.version);
      });
      applied.push(label(migration));
    }
    return { from, to: await session.cleanVersion(), applied };
  });
}

/** Reverts the `steps` most recent applied migrations. */
export async function migrateDown(databaseUrl: string, migrations: readonly Migration[], steps = 1): Promise<MigrationResult> {
  return withMigrationLock(databaseUrl, async (session) => {
    const from = await session.cleanVersion();
    requireKnownVersion(from, migrations);
    const applied: string[] = [];
    const done = migrations.filter((m) => from !== undefined && m.version <= from).reverse();
    for (const [index, migration] of done.slice(0, steps).entries()) {
      const down = migration.down;
      if (down === undefined) throw new Error(`migration ${label(migration)} has no .down.sql`);
      await session.inTransaction(async () => {
        await session.client.query(down);
        await session.setVersion(done[index + 1]?.version);
      });
      applied.push(label(migration));
    }
    return { from, to: await session.cleanVersion(), applied };
  });
}

/**
 * Sets the recorded version and clears the dirty flag, changing nothing else — golang-migrate's
 * `force`, for after a failed migration was repaired by hand. `undefined` empties the table.
 */
export async function forceVersion(databaseUrl: string, version: number | undefined): Promise<MigrationResult> {
  return withMigrationLock(databaseUrl, async (session) => {
    const from = await session.version();
    await session.inTransaction(() => session.setVersion(version));
    return { from: from?.version, to: version, applied: [] };
  });
}

export class DirtyDatabaseError extends Error {
  constructor(readonly version: number) {
    super(
      `${migrationsTable} is dirty at version ${version}: a migration was interrupted or failed part-way (golang-migrate marks ` +
        `the version it applies dirty until it is done). Check the schema by hand, then run "migrate force <version>" ` +
        `(this command's or golang-migrate's) with the version the schema is really at`,
    );
    this.name = 'DirtyDatabaseError';
  }
}

/**
 * The database is at a version these migrations do not have: above the newest (a newer release
 * migrated it) or, from the first up, a number with no file (files renumbered or removed). Going
 * on would skip or re-run migrations blindly — a version whose schema nobody can tell — so both
 * this command and golang-migrate ("no migration found for version N") stop. Versions below the
 * first are the host's own (its migrations share `schema_migrations`): everything here is above.
 */
export class UnknownVersionError extends Error {
  constructor(
    readonly version: number,
    readonly known: { readonly first: number; readonly newest: number },
  ) {
    super(
      `${migrationsTable} says version ${version}, which these migrations (${versionLabel(known.first)}–${versionLabel(known.newest)}) ` +
        'do not have: it was migrated by a newer release or by other migration files. ' +
        'Nothing was applied; run the release that migrated it (docs/operations.md, "Upgrading")',
    );
    this.name = 'UnknownVersionError';
  }
}

function requireKnownVersion(version: number | undefined, migrations: readonly Migration[]): void {
  const first = migrations[0]?.version;
  const newest = migrations.at(-1)?.version;
  if (version === undefined || first === undefined || newest === undefined || version < first) return;
  if (version > newest || !migrations.some((m) => m.version === version)) throw new UnknownVersionError(version, { first, newest });
}

interface MigrationSession {
  readonly client: pg.Client;
  version(): Promise<{ version: number; dirty: boolean } | undefined>;
  /** The current version; throws `DirtyDatabaseError` if it is dirty. */
  cleanVersion(): Promise<number | undefined>;
  setVersion(version: number | undefined): Promise<void>;
  inTransaction(work: () => Promise<void>): Promise<void>;
}

/**
 * Migration files hold several statements, which slonik refuses by design; they run on a
 * plain `pg` client (simple query protocol), as golang-migrate runs them.
 */
async function withMigrationLock<T>(databaseUrl: string, work: (session: MigrationSession) => Promise<T>): Promise<T> {
  const { url, ssl } = postgresConnection(databaseUrl);
  const client = new pg.Client({ connectionString: url, ssl, application_name: 'zippchat-push migrate' });
  await client.connect();
  try {
    const { rows } = await client.query<{ database: string; schema: string | null }>(
      'SELECT current_database() AS database, current_schema() AS schema',
    );
    const { database, schema } = rows[0]!;
    if (schema === null) throw new Error('no current schema (search_path names no existing schema): nowhere to keep schema_migrations');
    for (const id of golangMigrateLockIds(database, schema)) await client.query('SELECT pg_advisory_lock($1)', [id]);
    const table = `${client.escapeIdentifier(schema)}.${client.escapeIdentifier(migrationsTable)}`;
    // golang-migrate's definition, word for word.
    await client.query(`CREATE TABLE IF NOT EXISTS ${table} (version bigint not null primary key, dirty boolean not null)`);
    const version = async () => {
      const result = await client.query<{ version: string; dirty: boolean }>(`SELECT version::text AS version, dirty FROM ${table} LIMIT 1`);
      const row = result.rows[0];
      return row === undefined ? undefined : { version: Number(row.version), dirty: row.dirty };
    };
    return await work({
      client,
      version,
      async cleanVersion() {
        const current = await version();
        if (current?.dirty === true) throw new DirtyDatabaseError(current.version);
        return current?.version;
      },
      async setVersion(next) {
        await client.query(`DELETE FROM ${table}`);
        if (next !== undefined) await client.query(`INSERT INTO ${table} (version, dirty) VALUES ($1, false)`, [next]);
      },
      async inTransaction(step) {
        await client.query('BEGIN');
        try {
          await step();
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      },
    });
  } finally {
    await client.end(); // ends the session, which releases the advisory locks
  }
}

function label(migration: Migration): string {
  return `${versionLabel(migration.version)}_${migration.name}`;
}

function versionLabel(version: number): string {
  return String(version).padStart(6, '0');
}
