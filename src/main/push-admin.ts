/** `push-admin …`: inspect a device, count registrations, prune one (see src/admin/admin-cli.ts). */
import { ConfigError, loadConfig } from '../config/index.js';
import { adminUsage, AdminUsageError, parseAdminArgs, runAdmin } from '../admin/admin-cli.js';

async function main(args: readonly string[]): Promise<number> {
  return runAdmin(
    parseAdminArgs(args),
    () => loadConfig('admin'),
    (line) => process.stdout.write(`${line}\n`),
  );
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof AdminUsageError) process.stderr.write(`push-admin: ${error.message}\n\n${adminUsage}\n`);
    else if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`push-admin: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
