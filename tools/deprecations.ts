/**
 * `node tools/deprecations.ts [--if-stale] [--registry URL] [--lock FILE] [--out FILE]`
 *
 * Asks the npm registry whether any production package of package-lock.json — direct or
 * transitive, optional ones included, dev-only ones not — is marked deprecated, and records
 * the answer (with the lockfile's hash) in node_modules/.zippchat-deprecations.json. Runs at
 * install time (tools/install.sh), when the network is in use anyway; the test that holds the
 * project to "no deprecated production package" (test/unit/process/runtime.test.ts) reads the record
 * and never reaches the registry itself.
 *
 * Deprecation is registry metadata, not part of a package or of the lockfile, and some
 * mirrors strip it, which would make every answer "none". So the record also says whether
 * the registry marked a canary that the public registry has marked deprecated for good.
 * Prints one line per deprecated production package and exits 0 whatever it found: the test
 * is the gate, so `make dev` still starts (offline too: the record then holds the error).
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** Deprecated by its author in 2020, for good. */
const canary = { name: 'request', version: '2.88.2' };

interface LockEntry {
  readonly name?: string;
  readonly version?: string;
  readonly dev?: boolean;
  readonly link?: boolean;
}

export interface DeprecationRecord {
  readonly lockSha256: string;
  readonly registry: string;
  readonly checkedAt: string;
  /** Production packages asked about (name@version, one per installed copy). */
  readonly packages: number;
  /** Whether the registry marked the canary deprecated: false means it carries no deprecation data. */
  readonly registryMarksDeprecations: boolean;
  readonly deprecated: readonly { readonly name: string; readonly version: string; readonly message: string }[];
  /** Set when the registry could not be asked; the rest is then empty. */
  readonly error?: string;
}

const { values: args } = parseArgs({
  options: {
    'if-stale': { type: 'boolean', default: false },
    registry: { type: 'string' },
    lock: { type: 'string', default: 'package-lock.json' },
    out: { type: 'string', default: 'node_modules/.zippchat-deprecations.json' },
  },
});

const lockText = readFileSync(args.lock, 'utf8');
const lockSha256 = createHash('sha256').update(lockText).digest('hex');
if (args['if-stale'] && existsSync(args.out)) {
  const previous = JSON.parse(readFileSync(args.out, 'utf8')) as DeprecationRecord;
  if (previous.lockSha256 === lockSha256 && previous.error === undefined) process.exit(0);
}

const registry = (args.registry ?? execFileSync('npm', ['config', 'get', 'registry', '--loglevel=error'], { encoding: 'utf8' }).trim()).replace(
  /\/?$/,
  '/',
);
const lock = JSON.parse(lockText) as { packages: Record<string, LockEntry> };
const production = new Map<string, { name: string; version: string }>();
for (const [key, entry] of Object.entries(lock.packages)) {
  if (!key.includes('node_modules/') || entry.dev === true || entry.link === true || entry.version === undefined) continue;
  const name = entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
  production.set(`${name}@${entry.version}`, { name, version: entry.version });
}

/** Each version's `deprecated` message, from the registry's abbreviated metadata of `name`. */
async function deprecations(name: string): Promise<Map<string, string>> {
  const response = await fetch(registry + name.replace('/', '%2f'), {
    headers: { accept: 'application/vnd.npm.install-v1+json' },
    signal: AbortSignal.timeout(30_000),
  });
  if (!response.ok) throw new Error(`${registry} answered ${response.status} for ${name}`);
  const body = (await response.json()) as { versions?: Record<string, { deprecated?: unknown }> };
  const messages = new Map<string, string>();
  for (const [version, manifest] of Object.entries(body.versions ?? {})) {
    if (typeof manifest.deprecated === 'string' && manifest.deprecated !== '') messages.set(version, manifest.deprecated);
  }
  return messages;
}

async function check(): Promise<DeprecationRecord> {
  const names = [...new Set([...production.values()].map((p) => p.name)), canary.name];
  const byName = new Map<string, Map<string, string>>();
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++]!;
      byName.set(name, await deprecations(name));
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const deprecated = [...production.values()]
    .flatMap((p) => {
      const message = byName.get(p.name)?.get(p.version);
      return message === undefined ? [] : [{ ...p, message }];
    })
    .sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
  return {
    lockSha256,
    registry,
    checkedAt: new Date().toISOString(),
    packages: production.size,
    registryMarksDeprecations: byName.get(canary.name)?.has(canary.version) ?? false,
    deprecated,
  };
}

const record = await check().catch((error: unknown): DeprecationRecord => ({
  lockSha256,
  registry,
  checkedAt: new Date().toISOString(),
  packages: 0,
  registryMarksDeprecations: false,
  deprecated: [],
  error: error instanceof Error ? error.message : String(error),
}));
writeFileSync(args.out, `${JSON.stringify(record, null, 2)}\n`);
for (const d of record.deprecated) process.stdout.write(`install: deprecated production package ${d.name}@${d.version}: ${d.message}\n`);
if (record.error !== undefined) {
  process.stderr.write(`install: could not check the production packages for deprecations (the tests will say so): ${record.error}\n`);
}
if (!record.registryMarksDeprecations) {
  process.stdout.write(`install: ${registry} carries no deprecation data (${canary.name}@${canary.version} not marked): deprecations not checked\n`);
}
