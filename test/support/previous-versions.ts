/**
 * Earlier versions of this service, as deployments may run them: their trees taken from git
 * (`git archive <commit> | tar -x`) into `.dev/previous/<name>/`, with their npm packages and
 * their production build. The upgrade tier runs their processes; the history recorder
 * (test/workflow/histories/record-previous.ts) runs their workflow code.
 *
 * A tree is prepared once and reused while its commit and its packages are the same (a stamp
 * file says what was built). Its packages: when every package its lockfile pins is pinned
 * alike in today's lockfile, today's `node_modules` serves it (a link — the same files an
 * `npm ci` of its lockfile would install); otherwise `npm ci` in the tree (the registry).
 * The pinned tools (`.tools`) are linked from today's tree.
 *
 * Needs the commits in the repository (CI clones main with its history).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/process/paths.js';

export interface PreviousVersion {
  /** Short name, also the prefix of its recorded histories (test/workflow/histories/). */
  readonly name: string;
  readonly commit: string;
  /** What it is, for messages. */
  readonly about: string;
}

/**
 * The versions this tree upgrades from in place (CHANGELOG.md, docs/operations.md "Upgrading"):
 * main of 2026-12-04, main just before the first release, and the first release.
 */
export const previousVersions: readonly PreviousVersion[] = [
  { name: '2db4f11', commit: '2db4f114fe05d4608d7ec1d7a274266e935ec8e4', about: 'main of 2026-12-04 (migrations up to 000028)' },
  { name: '0391ec2', commit: '0391ec293f98a0196f778111e305784318a5ebb9', about: 'main before 1.0.0 (migrations up to 000027)' },
  { name: '1.0.0', commit: '87b41bc2af3e0bb02e7c846bd0ddc59ccffde7d9', about: 'release 1.0.0 (migrations up to 000032)' },
];

export function previousVersion(name: string): PreviousVersion {
  const found = previousVersions.find((v) => v.name === name || v.commit === name);
  if (found === undefined) throw new Error(`no previous version ${name} (known: ${previousVersions.map((v) => v.name).join(', ')})`);
  return found;
}

const stampFile = '.zippchat-previous';

/** The tree of `version`, built (`dist/`), ready to run; prepared now unless an identical one exists. Returns its root. */
export function preparePreviousVersion(version: PreviousVersion, log: (line: string) => void = () => undefined): string {
  const root = path.join(projectRoot, '.dev', 'previous', version.name);
  const packages = packagesSource(version);
  const stamp = `${version.commit}\n${packages.kind} ${packages.key}\n`;
  if (existsSync(path.join(root, 'dist', 'src', 'bin', 'worker.js')) && readIf(path.join(root, stampFile)) === stamp) return root;

  log(
    `preparing ${version.name} (${version.about}) in ${path.relative(projectRoot, root)}: ${packages.kind === 'linked' ? "today's node_modules" : 'npm ci'}`,
  );
  // Built aside and moved into place: a run that stops half-way leaves no tree that looks ready.
  const building = `${root}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    execFileSync('sh', ['-c', `git -C "$ROOT" archive --format=tar "$COMMIT" | tar -x -C "$DEST"`], {
      env: { ...process.env, ROOT: projectRoot, COMMIT: version.commit, DEST: building },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    symlinkSync(path.join(projectRoot, '.tools'), path.join(building, '.tools'));
    const env = { ...process.env, PATH: `${path.join(projectRoot, '.tools', 'bin')}:${process.env.PATH ?? ''}` };
    if (packages.kind === 'linked') symlinkSync(path.join(projectRoot, 'node_modules'), path.join(building, 'node_modules'));
    else execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: building, env, stdio: ['ignore', 'ignore', 'pipe'] });
    execFileSync('npm', ['run', '-s', 'build'], { cwd: building, env, stdio: ['ignore', 'ignore', 'pipe'] });
    writeFileSync(path.join(building, stampFile), stamp);
    rmSync(root, { recursive: true, force: true });
    renameSync(building, root);
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`preparing ${version.name} failed${stderr ? `: ${stderr}` : ''}`, { cause: error });
  }
  return root;
}

/**
 * Whether today's `node_modules` holds exactly what `version`'s lockfile pins (every package at
 * the same path, version and integrity): then it is linked, else installed with `npm ci`.
 */
function packagesSource(version: PreviousVersion): { kind: 'linked' | 'installed'; key: string } {
  requireCommit(version);
  const theirs = execFileSync('git', ['-C', projectRoot, 'show', `${version.commit}:package-lock.json`], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const ours = readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8');
  const key = createHash('sha256').update(theirs).digest('hex').slice(0, 16);
  const pinned = (lock: string) => (JSON.parse(lock) as { packages: Record<string, { version?: string; integrity?: string }> }).packages;
  const today = pinned(ours);
  const contained = Object.entries(pinned(theirs)).every(
    ([at, entry]) => at === '' || (today[at]?.version === entry.version && today[at]?.integrity === entry.integrity),
  );
  return { kind: contained ? 'linked' : 'installed', key };
}

function requireCommit(version: PreviousVersion): void {
  try {
    execFileSync('git', ['-C', projectRoot, 'cat-file', '-e', `${version.commit}^{commit}`], { stdio: 'ignore' });
  } catch {
    throw new Error(
      `${version.name} (${version.commit}) is not in this clone: the upgrade tier and the history recorder need main's history (git fetch --unshallow)`,
    );
  }
}

function readIf(file: string): string | undefined {
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}
