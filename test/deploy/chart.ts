/**
 * The Helm chart as a test sees it: `helm` and `kubeconform` from .tools/bin (built from their
 * Go modules by tools/go-tools.sh; nothing is downloaded here), rendering into objects, and
 * the per-process view of a pod — its environment and the Secret files mounted into it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { projectRoot } from '../../src/process/paths.js';

const run = promisify(execFile);

export const chartDir = path.join(projectRoot, 'deploy', 'helm', 'zippchat-push');

export function tool(name: 'helm' | 'kubeconform' | 'promtool'): string {
  const file = path.join(projectRoot, '.tools', 'bin', name);
  if (!existsSync(file)) throw new Error(`${file} is missing: tools/go-tools.sh builds it (make test runs it)`);
  return file;
}

/** A private Helm home: no user configuration or repository cache leaks in. */
export function helmEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
  };
}

export interface Outcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runTool(file: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(file, args, { env, cwd, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(error) };
  }
}

/** Values files of the chart's ci/ directory: every secret option on, and the alternatives. */
export const valuesSets = {
  default: [],
  'all secrets': ['ci/all-secrets-values.yaml'],
  'NATS .creds file, JWT public key': ['ci/nats-creds-values.yaml'],
  'NATS token, Temporal mTLS': ['ci/nats-token-values.yaml'],
  'FCM without a key: GKE Workload Identity': ['ci/fcm-gke-values.yaml'],
  'FCM without a key: federation from another cloud': ['ci/fcm-federation-values.yaml'],
  'operations: alerts, dashboard, NetworkPolicy, worker autoscaling': ['ci/all-secrets-values.yaml', 'ci/operations-values.yaml'],
} as const satisfies Record<string, readonly string[]>;
export type ValuesSet = keyof typeof valuesSets;

export function templateArgs(files: readonly string[], extra: readonly string[] = []): string[] {
  return ['template', 'push', chartDir, '--namespace', 'chat', ...files.flatMap((f) => ['-f', path.join(chartDir, f)]), ...extra];
}

// --- Rendered objects ------------------------------------------------------------------------

export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly spec?: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- manifests are checked by kubeconform
}

export function parseManifests(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

export function find(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind} ${o.metadata.name}`).join(', ')}`);
  return found;
}

export interface SecretFile {
  /** The variable naming the file, e.g. DATABASE_URL_FILE; undefined for files named in another setting. */
  readonly variable: string | undefined;
  readonly path: string;
  readonly secret: string;
  readonly key: string;
}

/** What one container of a pod gets: its environment and the Secret files mounted into it. */
export interface ProcessView {
  readonly env: Readonly<Record<string, string>>;
  /** Secrets mounted, by name. */
  readonly secrets: ReadonlySet<string>;
  /** Every file of every mounted Secret (whole-Secret mounts as `<dir>/*`). */
  readonly files: readonly SecretFile[];
  readonly args: readonly string[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are checked by kubeconform
export function processView(pod: any): ProcessView {
  const container = pod.containers[0];
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (typeof e.value !== 'string') throw new Error(`${e.name} is not a plain value (${JSON.stringify(e)}): secrets come as files`);
    if (e.name in env) throw new Error(`${e.name} is set twice`);
    env[e.name] = e.value;
  }
  const volumes = new Map<string, any>((pod.volumes ?? []).map((v: any) => [v.name, v])); // eslint-disable-line @typescript-eslint/no-explicit-any
  const secrets = new Set<string>();
  const files: SecretFile[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (volume?.secret === undefined) continue;
    const secret = volume.secret.secretName as string;
    secrets.add(secret);
    const items: Array<{ key: string; path: string }> = volume.secret.items ?? [{ key: '*', path: '*' }];
    for (const item of items) {
      const file = `${mount.mountPath}/${item.path}`;
      const variable = Object.entries(env).find(([name, value]) => name.endsWith('_FILE') && value === file)?.[0];
      files.push({ variable, path: file, secret, key: item.key });
    }
  }
  return { env, secrets, files, args: container.args ?? [] };
}
