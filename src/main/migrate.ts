/**
 * `migrate [up | down [N] | force VERSION] [--host-standin]` — applies this service's
 * migrations (and, for development and tests only, the host stand-in schema). Idempotent;
 * safe to run from every replica at start-up, and beside the host's golang-migrate (the same
 * lock and bookkeeping, src/db/migrate.ts). `force` is golang-migrate's: it records VERSION
 * as applied and clean, for after a failed migration was repaired by hand.
 */
import { ConfigError, loadConfig } from '../config/index.js';
import { forceVersion, migrateDown, migrateUp, type MigrationResult } from '../db/migrate.js';
import { serviceMigrations } from '../db/migrations.js';
import { describeDatabaseFailure } from '../db/describe-failure.js';

const usage = 'usage: migrate [up | down [N] | force VERSION] [--host-standin]';

async function main(args: readonly string[]): Promise<void> {
  const withHostStandIn = args.includes('--host-standin');
  const [command = 'up', count, ...rest] = args.filter((a) => !a.startsWith('--'));
  const valid =
    rest.length === 0 &&
    ((command === 'up' && count === undefined) ||
      (command === 'down' && (count === undefined || /^\d+$/.test(count))) ||
      (command === 'force' && /^\d+$/.test(count ?? '')));
  if (!valid) throw new Error(usage);
  const config = loadConfig('migrate');
  const migrations = serviceMigrations({ withHostStandIn });
  if (command === 'force') {
    await forceVersion(config.databaseUrl, Number(count));
    process.stdout.write(`migrate: forced version ${count}\n`);
    return;
  }
  const result: MigrationResult =
    command === 'up' ? await migrateUp(config.databaseUrl, migrations) : await migrateDown(config.databaseUrl, migrations, Number(count ?? '1'));
  const done = result.applied.length === 0 ? 'nothing to do' : `${command === 'up' ? 'applied' : 'reverted'} ${result.applied.join(', ')}`;
  process.stdout.write(`migrate: ${done}; version ${result.to ?? 'none'}\n`);
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(error instanceof ConfigError ? `${error.message}\n` : `migrate: ${migrateFailure(error)}\n`);
    process.exit(1);
  },
);

/** A database problem named plainly (a wrong CA, refused credentials); anything else as it came. */
function migrateFailure(error: unknown): string {
  const failure = describeDatabaseFailure(error);
  return failure.permanent ? failure.reason : error instanceof Error ? error.message : String(error);
}
