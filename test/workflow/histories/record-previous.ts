/**
 * Records replay histories with a previous version's own worker:
 *
 *   npm run -s record-histories -- 2db4f11        (a name or commit of test/support/previous-versions.ts)
 *
 * prepares that version's tree (.dev/previous/<name>), puts today's record.ts into it and runs
 * it there — that version's harness, activities and workflow code on the time-skipping server
 * — writing test/workflow/histories/<name>-<scenario>.json for every scenario not recorded yet.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../src/process/paths.js';
import { preparePreviousVersion, previousVersion } from '../../support/previous-versions.js';

const name = process.argv[2];
if (name === undefined) {
  process.stderr.write('usage: record-histories <version>\n');
  process.exit(1);
}
const version = previousVersion(name);
const root = preparePreviousVersion(version, (line) => process.stdout.write(`${line}\n`));
const histories = path.join(projectRoot, 'test', 'workflow', 'histories');
copyFileSync(path.join(histories, 'record.ts'), path.join(root, 'test', 'workflow', 'histories', 'record.ts'));
const run = spawnSync('npx', ['vitest', 'run', '-c', 'test/workflow/histories/vitest.record.config.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    PATH: `${path.join(projectRoot, '.tools', 'bin')}:${process.env.PATH ?? ''}`,
    HISTORY_PREFIX: version.name,
    HISTORY_DIR: histories,
  },
});
process.exit(run.status ?? 1);
