/**
 * `migrate [up | down [N]] [--host-standin]` — applies this service's migrations (and, for
 * development and tests only, the host stand-in schema). Idempotent; safe to run from every
 * replica at start-up.
 */
import { ConfigError, loadConfig } from '../config/index.js';
import { migrateDown, migrateUp } from '../db/migrate.js';
import { serviceMigrations } from '../db/migrations.js';
import { describeDatabaseFailure } from '../db/describe-failure.js';

async function main(args: readonly string[]): Promise<void> {
  const withHostStandIn = args.includes('--host-standin');
  const [command = 'up', count = '1'] = args.filter((a) => !a.startsWith('--'));
  if ((command !== 'up' && command !== 'down') || !/^\d+$/.test(count)) throw new Error('usage: migrate [up | down [N]] [--host-standin]');
  const config = loadConfig('migrate');
  const migrations = serviceMigrations({ withHostStandIn });
  const result =
    command === 'up' ? await migrateUp(config.databaseUrl, migrations) : await migrateDown(config.databaseUrl, migrations, Number(count));
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
