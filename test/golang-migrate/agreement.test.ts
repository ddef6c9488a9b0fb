/**
 * This service's `migrate` command beside the real golang-migrate — the `migrate` CLI
 * v4.20.1, built from its Go module by tools/go-tools.sh — on the dev PostgreSQL: the same
 * bookkeeping and schema, the same advisory lock (each waits for the other, seen in
 * pg_locks), the same dirty rule, the same refusal of a version neither knows. The CLI reads a
 * folder holding the host stand-in's migrations and ours, as a host's migrations folder holds
 * its own and ours. Databases left by earlier releases (their own files, applied by the CLI)
 * reach today's schema with either tool.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { golangMigrateLockId, migrateUp, type Migration } from '../../src/db/migrate.js';
import { hostStandInMigrationsDir, serviceMigrations, serviceMigrationsDir } from '../../src/db/migrations.js';
import { waitFor } from '../../devstack/daemons.js';
import { findGoTool } from '../../devstack/tools.js';
import { projectRoot } from '../../src/process/paths.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { previousVersions, type PreviousVersion } from '../support/previous-versions.js';

const migrateCli = findGoTool('migrate');
const all = serviceMigrations({ withHostStandIn: true });
const latest = all.at(-1)!;
const label = (m: Migration) => `${String(m.version).padStart(6, '0')}_${m.name}`;

let source: string;
let brokenSource: string;
const broken = { version: latest.version + 1, name: 'broken' };

beforeAll(() => {
  source = mkdtempSync(path.join(tmpdir(), 'golang-migrate-source-'));
  for (const dir of [hostStandInMigrationsDir, serviceMigrationsDir]) {
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.sql'))) copyFileSync(path.join(dir, file), path.join(source, file));
  }
  brokenSource = mkdtempSync(path.join(tmpdir(), 'golang-migrate-broken-'));
  for (const file of readdirSync(source)) copyFileSync(path.join(source, file), path.join(brokenSource, file));
  const name = `${String(broken.version).padStart(6, '0')}_${broken.name}`;
  writeFileSync(path.join(brokenSource, `${name}.up.sql`), 'CREATE TABLE half_done (x int);\nSELECT nope FROM nowhere;\n');
  writeFileSync(path.join(brokenSource, `${name}.down.sql`), 'DROP TABLE IF EXISTS half_done;\n');
});

afterAll(() => {
  rmSync(source, { recursive: true, force: true });
  rmSync(brokenSource, { recursive: true, force: true });
});

const databases: TestDatabase[] = [];
afterEach(async () => {
  for (const db of databases.splice(0)) await db.drop();
});

async function database(): Promise<TestDatabase> {
  const db = await freshDatabase({ migrated: false });
  databases.push(db);
  return db;
}

interface Run {
  readonly code: number | null;
  readonly output: string;
}

function run(command: string, args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(command, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** The real CLI, as a host runs it: `migrate -source file://… -database postgres://…/<db> …`. */
function golangMigrate(db: TestDatabase, args: readonly string[], from = source): Promise<Run> {
  const url = new URL(db.url);
  url.searchParams.set('sslmode', 'disable');
  url.searchParams.set('application_name', 'golang-migrate');
  return run(migrateCli, ['-source', `file://${from}`, '-database', url.toString(), ...args]);
}

/** This service's command, built: `node dist/src/bin/migrate.js … --host-standin`. */
function ours(db: TestDatabase, args: readonly string[]): Promise<Run> {
  return run(process.execPath, [path.join(projectRoot, 'dist', 'src', 'bin', 'migrate.js'), ...args, '--host-standin'], { DATABASE_URL: db.url });
}

const versionRow = z.object({ version: z.number(), dirty: z.boolean() });
const versions = (db: TestDatabase) => db.pool.any(sql.type(versionRow)`SELECT version::int4 AS version, dirty FROM schema_migrations`);

/** Everything the migrations define, as PostgreSQL describes it: tables, columns, constraints, indexes. */
async function schema(db: TestDatabase): Promise<string[]> {
  const lines = await db.pool.anyFirst(sql.type(z.object({ line: z.string() }))`
    SELECT format('column %s.%s %s %s %s', table_name, column_name, data_type, is_nullable, coalesce(column_default, '')) AS line
    FROM information_schema.columns WHERE table_schema = 'public'
    UNION ALL
    SELECT format('constraint %s.%s %s', conrelid::regclass, conname, pg_get_constraintdef(oid)) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = 'public'
    ORDER BY 1`);
  return [...lines];
}

describe('golang-migrate and this service agree', () => {
  it('on the version and the schema: `migrate version` reads ours, `migrate up` after ours is a no-op, and either alone builds the same schema', async () => {
    const db = await database();
    const applied = await ours(db, ['up']);
    expect(applied).toMatchObject({ code: 0 });
    expect(applied.output).toBe(`migrate: applied ${all.map(label).join(', ')}; version ${latest.version}\n`);

    expect(await golangMigrate(db, ['version'])).toEqual({ code: 0, output: `${latest.version}\n` });
    const ourSchema = await schema(db);
    expect(await golangMigrate(db, ['up'])).toEqual({ code: 0, output: 'no change\n' });
    expect(await versions(db)).toEqual([{ version: latest.version, dirty: false }]);
    expect(await schema(db)).toEqual(ourSchema);

    const theirs = await database();
    expect(await golangMigrate(theirs, ['up'])).toMatchObject({ code: 0 });
    expect(await versions(theirs)).toEqual([{ version: latest.version, dirty: false }]);
    expect(await schema(theirs)).toEqual(ourSchema);
    expect(await ours(theirs, ['up'])).toEqual({ code: 0, output: `migrate: nothing to do; version ${latest.version}\n` });
  });

  it('`migrate goto` an earlier version, then ours, brings the schema back', async () => {
    const db = await database();
    expect(await ours(db, ['up'])).toMatchObject({ code: 0 });
    const before = await schema(db);
    // 000027's down changes the schema; 000028's and 000029's change nothing (migrations/README.md).
    const target = 26;

    expect(await golangMigrate(db, ['goto', String(target)])).toMatchObject({ code: 0 });
    expect(await versions(db)).toEqual([{ version: target, dirty: false }]);
    expect(await schema(db)).not.toEqual(before);

    const reapplied = all.filter((m) => m.version > target).map(label);
    expect(await ours(db, ['up'])).toEqual({ code: 0, output: `migrate: applied ${reapplied.join(', ')}; version ${latest.version}\n` });
    expect(await schema(db)).toEqual(before);
  });
});

describe('databases of earlier releases', () => {
  /** `version`'s migration files (its host stand-in and its own), as that release shipped them, in one folder. */
  function releasedSource(version: PreviousVersion): string {
    const tree = mkdtempSync(path.join(tmpdir(), `golang-migrate-${version.name}-`));
    execFileSync('sh', ['-c', `git -C "$ROOT" archive --format=tar "$COMMIT" migrations | tar -x -C "$DEST"`], {
      env: { ...process.env, ROOT: projectRoot, COMMIT: version.commit, DEST: tree },
    });
    const flat = path.join(tree, 'flat');
    mkdirSync(flat);
    for (const dir of [path.join(tree, 'migrations', 'host'), path.join(tree, 'migrations')]) {
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.sql'))) copyFileSync(path.join(dir, file), path.join(flat, file));
    }
    sources.push(tree);
    return flat;
  }
  const sources: string[] = [];
  afterAll(() => {
    for (const dir of sources) rmSync(dir, { recursive: true, force: true });
  });

  /** A database as `version`'s deployment left it: migrated by the host's golang-migrate with that release's files. */
  async function migratedBy(version: PreviousVersion): Promise<{ db: TestDatabase; at: number }> {
    const db = await database();
    expect(await golangMigrate(db, ['up'], releasedSource(version))).toMatchObject({ code: 0 });
    const [row] = await versions(db);
    return { db, at: row!.version };
  }

  async function newestSchema(): Promise<string[]> {
    const fresh = await database();
    expect(await ours(fresh, ['up'])).toMatchObject({ code: 0 });
    return schema(fresh);
  }

  it.each(previousVersions.map((v) => [v.name, v] as const))(
    "%s's: ours applies what it lacks and reaches the newest schema, as golang-migrate does with today's files",
    async (_name, version) => {
      const expected = await newestSchema();

      const viaOurs = await migratedBy(version);
      const missing = all.filter((m) => m.version > viaOurs.at).map(label);
      expect(missing.length).toBeGreaterThan(0);
      expect(await ours(viaOurs.db, ['up'])).toEqual({ code: 0, output: `migrate: applied ${missing.join(', ')}; version ${latest.version}\n` });
      expect(await schema(viaOurs.db)).toEqual(expected);

      const viaTheirs = await migratedBy(version);
      expect(await golangMigrate(viaTheirs.db, ['up'])).toMatchObject({ code: 0 });
      expect(await versions(viaTheirs.db)).toEqual([{ version: latest.version, dirty: false }]);
      expect(await schema(viaTheirs.db)).toEqual(expected);
    },
  );
});

describe('a version these migrations do not have', () => {
  it.each([
    ['above the newest (a newer release migrated it)', latest.version + 7],
    ['a number with no file', 15],
  ])('%s: both refuse in one line and apply nothing', async (_what, unknown) => {
    const db = await database();
    expect(await ours(db, ['up'])).toMatchObject({ code: 0 });
    const before = await schema(db);
    await db.pool.query(sql.unsafe`UPDATE schema_migrations SET version = ${unknown}`);

    const theirs = await golangMigrate(db, ['up']);
    expect(theirs.code).toBe(1);
    expect(theirs.output).toMatch(new RegExp(`^error: no migration found for version ${unknown}`));

    const refused = await ours(db, ['up']);
    expect(refused).toEqual({
      code: 1,
      output:
        `migrate: schema_migrations says version ${unknown}, which these migrations (000001–${String(latest.version).padStart(6, '0')}) do not have: ` +
        'it was migrated by a newer release or by other migration files. Nothing was applied; run the release that migrated it ' +
        '(docs/operations.md, "Upgrading")\n',
    });
    expect(await versions(db)).toEqual([{ version: unknown, dirty: false }]);
    expect(await schema(db)).toEqual(before);
  });
});

describe('golang-migrate and this service serialize on one lock', () => {
  /**
   * Holds a lock on `users` (the host stand-in's, which the first service migration
   * references) in an open transaction: whoever applies that migration waits inside it,
   * holding the migration lock, until `release()`.
   */
  async function gate(db: TestDatabase) {
    const client = new pg.Client({ connectionString: db.url, application_name: 'test gate' });
    await client.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
    return {
      async release() {
        await client.query('ROLLBACK');
        await client.end();
      },
    };
  }

  const advisoryLock = z.object({ application_name: z.string(), key: z.string(), granted: z.boolean() });
  /** Advisory locks held or awaited in this database, by session name (keys below 2^32: objid is the key). */
  const advisoryLocks = (db: TestDatabase) =>
    db.pool.any(sql.type(advisoryLock)`
      SELECT a.application_name, l.objid::text AS key, l.granted
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = 0 AND l.objsubid = 1
      ORDER BY 1, 2`);
  /** Whether a session of that name waits for a lock on a table (the gate). */
  const waitsAtGate = async (db: TestDatabase, applicationName: string) =>
    (
      await db.pool.anyFirst(sql.type(z.object({ pid: z.number() }))`
      SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE a.application_name = ${applicationName} AND l.locktype = 'relation' AND NOT l.granted`)
    ).length > 0;

  const key = (db: TestDatabase, form: 'cli' | 'library') => String(golangMigrateLockId(form === 'cli' ? `/${db.name}` : db.name, 'public'));

  /** The database at the host stand-in only, so that the next migration to apply is the gated one. */
  async function atHostStandIn(): Promise<TestDatabase> {
    const db = await database();
    await migrateUp(
      db.url,
      all.filter((m) => m.version < 22),
    );
    return db;
  }

  it('while ours applies a migration, `migrate up` waits for its lock, then finds nothing to do', async () => {
    const db = await atHostStandIn();
    const held = await gate(db);
    const ourRun = ours(db, ['up']);
    try {
      await waitFor('ours inside the gated migration', () => waitsAtGate(db, 'zippchat-push migrate'), 60_000);
      const theirRun = golangMigrate(db, ['up']);
      await waitFor(
        'golang-migrate waiting for the lock ours holds',
        async () => (await advisoryLocks(db)).some((l) => l.application_name === 'golang-migrate' && !l.granted),
        60_000,
      );
      expect(await advisoryLocks(db)).toEqual([
        { application_name: 'golang-migrate', key: key(db, 'cli'), granted: false },
        ...[key(db, 'cli'), key(db, 'library')].sort().map((k) => ({ application_name: 'zippchat-push migrate', key: k, granted: true })),
      ]);
      await held.release();
      expect((await ourRun).code).toBe(0);
      expect(await theirRun).toEqual({ code: 0, output: 'no change\n' });
    } finally {
      await held.release().catch(() => undefined);
      await ourRun;
    }
    expect(await versions(db)).toEqual([{ version: latest.version, dirty: false }]);
  });

  it('while `migrate up` applies a migration, ours waits for its lock, then finds nothing to do', async () => {
    const db = await atHostStandIn();
    const held = await gate(db);
    const theirRun = golangMigrate(db, ['up']);
    try {
      await waitFor('golang-migrate inside the gated migration', () => waitsAtGate(db, 'golang-migrate'), 60_000);
      const ourRun = ours(db, ['up']);
      await waitFor(
        'ours waiting for the lock golang-migrate holds',
        async () => (await advisoryLocks(db)).some((l) => l.application_name === 'zippchat-push migrate' && !l.granted),
        60_000,
      );
      expect(await advisoryLocks(db)).toEqual([
        { application_name: 'golang-migrate', key: key(db, 'cli'), granted: true },
        { application_name: 'zippchat-push migrate', key: key(db, 'cli'), granted: false },
      ]);
      await held.release();
      expect((await theirRun).code).toBe(0);
      expect(await ourRun).toEqual({ code: 0, output: `migrate: nothing to do; version ${latest.version}\n` });
    } finally {
      await held.release().catch(() => undefined);
      await theirRun;
    }
    expect(await versions(db)).toEqual([{ version: latest.version, dirty: false }]);
  });
});

describe('a dirty flag stops both', () => {
  it('golang-migrate leaves one when a migration fails; it stops ours with a clear message and golang-migrate itself, until `force`', async () => {
    const db = await database();
    expect(await ours(db, ['up'])).toMatchObject({ code: 0 });
    const failed = await golangMigrate(db, ['up'], brokenSource);
    expect(failed.code).toBe(1);
    expect(failed.output).toMatch(/migration failed/);
    expect(await versions(db)).toEqual([{ version: broken.version, dirty: true }]);

    const stopped = await ours(db, ['up']);
    expect(stopped.code).toBe(1);
    expect(stopped.output).toBe(
      `migrate: schema_migrations is dirty at version ${broken.version}: a migration was interrupted or failed part-way (golang-migrate marks ` +
        'the version it applies dirty until it is done). Check the schema by hand, then run "migrate force <version>" ' +
        "(this command's or golang-migrate's) with the version the schema is really at\n",
    );
    expect(await golangMigrate(db, ['up'])).toEqual({ code: 1, output: `error: Dirty database version ${broken.version}. Fix and force version.\n` });

    // The failed statement ran in one implicit transaction: nothing of it is left.
    expect(await ours(db, ['force', String(latest.version)])).toEqual({ code: 0, output: `migrate: forced version ${latest.version}\n` });
    expect(await golangMigrate(db, ['version'])).toEqual({ code: 0, output: `${latest.version}\n` });
    expect(await ours(db, ['up'])).toEqual({ code: 0, output: `migrate: nothing to do; version ${latest.version}\n` });
  });

  it('ours leaves none: a failing migration rolls back with its version, and golang-migrate carries on', async () => {
    const db = await database();
    expect(await ours(db, ['up'])).toMatchObject({ code: 0 });
    const failing = [
      ...all,
      { version: broken.version, name: broken.name, up: 'CREATE TABLE half_done (x int); SELECT nope FROM nowhere;', down: undefined },
    ];
    await expect(migrateUp(db.url, failing)).rejects.toThrow(/nowhere/);
    expect(await versions(db)).toEqual([{ version: latest.version, dirty: false }]);
    expect(await golangMigrate(db, ['up'])).toEqual({ code: 0, output: 'no change\n' });
  });
});
