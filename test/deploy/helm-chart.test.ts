/**
 * The Helm chart (deploy/helm/zippchat-push), checked with the real tools at pinned versions:
 * `helm lint` and `helm template` with the default values and with every secret option on,
 * the rendered manifests validated by kubeconform against the Kubernetes API's own schemas
 * (strict: an unknown field is an error), and what each process gets — its variables and the
 * Secret files mounted into it — held to what its configuration reads (src/config: the api
 * never reads the FCM service account, the bridge never the JWT key, the worker never NATS).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  chartDir,
  find,
  helmEnv,
  parseManifests,
  processView,
  runTool,
  templateArgs,
  tool,
  valuesSets,
  type K8sObject,
  type ProcessView,
  type ValuesSet,
} from './chart.js';
import { writeSchemaSet, type SchemaSet } from './kubernetes-schemas.js';
import { secretVariables as secrets } from '../../src/config/env.js';
import { variablesRead } from '../../src/config/index.js';
import { defaultBacklogMs } from '../../src/config/sections/pacing.js';
import { projectRoot } from '../../src/process/paths.js';

type Process = 'api' | 'worker' | 'bridge' | 'migrate';

/** The secrets (docs/design.md, Production connections), each also readable from `<NAME>_FILE` — in the chart, always as a file. */
const secretVariables: readonly string[] = secrets;
const asFile = (names: readonly string[]) => names.map((n) => (secretVariables.includes(n) ? `${n}_FILE` : n));

/** What each process's configuration reads (src/config/processes.ts), secrets as files. */
const reads: Record<Process, readonly string[]> = {
  api: asFile(variablesRead('api')),
  worker: asFile(variablesRead('worker')),
  bridge: asFile(variablesRead('bridge')),
  migrate: asFile(variablesRead('migrate')),
};

/** Read only to refuse it: google-auth-library's debug log, which prints tokens (src/config/sections/fcm.ts). */
const mustStayUnset = ['GOOGLE_SDK_NODE_LOGGING'];

/** Every configuration variable a process reads (secrets as their `_FILE` form), and the listeners' ports. */
const contractVariables = [...new Set(Object.values(reads).flat())].filter((name) => !mustStayUnset.includes(name));

let home: string;
let schemas: SchemaSet;
const rendered = new Map<ValuesSet, { text: string; objects: K8sObject[] }>();

beforeAll(async () => {
  home = mkdtempSync(path.join(tmpdir(), 'helm-chart-test-'));
  schemas = writeSchemaSet(path.join(home, 'schemas'));
  for (const [name, files] of Object.entries(valuesSets) as Array<[ValuesSet, readonly string[]]>) {
    const out = await runTool(tool('helm'), templateArgs(files), helmEnv(home));
    if (out.code !== 0) throw new Error(`helm template with ${name} values failed: ${out.stderr}`);
    rendered.set(name, { text: out.stdout, objects: parseManifests(out.stdout) });
  }
});
afterAll(() => {
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
});

const objects = (set: ValuesSet) => rendered.get(set)!.objects;

function views(set: ValuesSet): Record<Process, ProcessView> {
  const o = objects(set);
  return {
    api: processView(find(o, 'Deployment', 'push-zippchat-push-api').spec.template.spec),
    worker: processView(find(o, 'Deployment', 'push-zippchat-push-worker').spec.template.spec),
    bridge: processView(find(o, 'Deployment', 'push-zippchat-push-bridge').spec.template.spec),
    migrate: processView(find(o, 'Job', 'push-zippchat-push-migrate').spec.template.spec),
  };
}

const sorted = (values: Iterable<string>) => [...values].sort();

describe('helm lint and kubeconform', () => {
  it.each(Object.keys(valuesSets) as ValuesSet[])('lint passes, strictly, with %s values', async (set) => {
    const files = valuesSets[set].flatMap((f) => ['-f', path.join(chartDir, f)]);
    const out = await runTool(tool('helm'), ['lint', '--strict', chartDir, ...files], helmEnv(home));
    expect(out.code, `${out.stdout}${out.stderr}`).toBe(0);
    expect(out.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it.each(Object.keys(valuesSets) as ValuesSet[])(
    `every manifest rendered with %s values is valid against the Kubernetes API's schemas, strictly`,
    async (set) => {
      const file = path.join(home, `${set.replace(/\W+/g, '-')}.yaml`);
      writeFileSync(file, rendered.get(set)!.text);
      const out = await kubeconform(file);
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.stdout).toMatch(
        new RegExp(`Summary: ${objects(set).length} resources found in 1 file - Valid: ${objects(set).length}, Invalid: 0, Errors: 0, Skipped: 0`),
      );
    },
  );

  it('the validation is strict and complete: an unknown field, a wrong type and a kind without a schema are refused', async () => {
    const api = find(objects('all secrets'), 'Deployment', 'push-zippchat-push-api');
    const monitor = objects('all secrets').find((o) => o.kind === 'ServiceMonitor')!;
    const cases = {
      'unknown field': {
        ...api,
        spec: { ...api.spec, template: { ...api.spec.template, spec: { ...api.spec.template.spec, terminationGracePeriod: 45 } } },
      },
      'wrong type': { ...api, spec: { ...api.spec, replicas: 'two' } },
      'unknown field in a ServiceMonitor': { ...monitor, spec: { ...monitor.spec, endpoints: [{ port: 'http', intervall: '30s' }] } },
      'kind without a schema': { apiVersion: 'example.org/v1', kind: 'Gadget', metadata: { name: 'x' } },
    };
    for (const [what, object] of Object.entries(cases)) {
      const file = path.join(home, 'bad.yaml');
      writeFileSync(file, JSON.stringify(object));
      const out = await kubeconform(file);
      expect(out.code, `${what}: ${out.stdout}`).not.toBe(0);
    }
  });

  it(`renders what a release needs, and the optional objects only when asked`, () => {
    const kinds = (set: ValuesSet) => sorted(objects(set).map((o) => `${o.kind} ${o.metadata.name}`));
    const always = [
      'Deployment push-zippchat-push-api',
      'Deployment push-zippchat-push-bridge',
      'Deployment push-zippchat-push-worker',
      'Job push-zippchat-push-migrate',
      'PodDisruptionBudget push-zippchat-push-api',
      'PodDisruptionBudget push-zippchat-push-bridge',
      'PodDisruptionBudget push-zippchat-push-worker',
      'Service push-zippchat-push-api',
      'Service push-zippchat-push-bridge-metrics',
      'Service push-zippchat-push-worker-metrics',
      'ServiceAccount push-zippchat-push',
      'ServiceAccount push-zippchat-push-migrate',
    ];
    expect(kinds('default')).toEqual(sorted(always));
    const allSecrets = [
      ...always,
      'HorizontalPodAutoscaler push-zippchat-push-api',
      'Ingress push-zippchat-push-api',
      'ServiceMonitor push-zippchat-push-api',
      'ServiceMonitor push-zippchat-push-bridge',
      'ServiceMonitor push-zippchat-push-worker',
    ];
    expect(kinds('all secrets')).toEqual(sorted(allSecrets));
    expect(kinds('operations: alerts, dashboard, NetworkPolicy, worker autoscaling')).toEqual(
      sorted([
        ...allSecrets,
        'PrometheusRule push-zippchat-push-alerts',
        'ConfigMap push-zippchat-push-dashboard',
        'NetworkPolicy push-zippchat-push-api',
        'NetworkPolicy push-zippchat-push-bridge',
        'NetworkPolicy push-zippchat-push-worker',
        'ScaledObject push-zippchat-push-worker',
        'TriggerAuthentication push-zippchat-push-worker-temporal',
      ]),
    );
  });
});

describe('each process gets its own settings and secrets, and nothing of another process', () => {
  it.each(Object.keys(valuesSets) as ValuesSet[])(
    'with %s values, no process gets a variable its configuration does not read, nor a secret as a plain value',
    (set) => {
      for (const [process, view] of Object.entries(views(set)) as Array<[Process, ProcessView]>) {
        const foreign = Object.keys(view.env).filter((name) => !reads[process].includes(name));
        expect(foreign, `${process} gets variables of other processes`).toEqual([]);
        const plainSecrets = Object.keys(view.env).filter((name) => secretVariables.includes(name));
        expect(plainSecrets, `${process} gets secrets as plain values`).toEqual([]);
      }
    },
  );

  it('with every secret option on, each process gets exactly the variables it needs', () => {
    const v = views('all secrets');
    const temporalOn = [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TEMPORAL_TASK_QUEUE',
      'TEMPORAL_TLS',
      'TEMPORAL_TLS_SERVER_NAME',
      'TEMPORAL_TLS_CA_FILE',
      'TEMPORAL_TLS_CERT_FILE',
      'TEMPORAL_TLS_KEY_FILE',
      'TEMPORAL_API_KEY_FILE',
    ];
    expect(sorted(Object.keys(v.api.env))).toEqual(
      sorted([
        'LOG_LEVEL',
        'HOST',
        'PORT',
        'DATABASE_URL_FILE',
        ...temporalOn,
        'JWT_SECRET_FILE',
        'JWT_ISSUER',
        'JWT_AUDIENCE',
        'FCM_PROJECT_ID',
        'PUSH_UP_ALLOW_PRIVATE',
        'PUSH_UP_ALLOW_HTTP',
        'PUSH_VAPID_SUBJECT',
        'PUSH_VAPID_PRIVATE_KEY_FILE',
      ]),
    );
    expect(sorted(Object.keys(v.worker.env))).toEqual(
      sorted([
        'LOG_LEVEL',
        'HOST',
        'WORKER_METRICS_PORT',
        'WORKER_SDK_METRICS_PORT',
        'DATABASE_URL_FILE',
        ...temporalOn,
        'TEMPORAL_UI_URL',
        'FCM_PROJECT_ID',
        'FCM_ENDPOINT',
        'FCM_CREDENTIALS_JSON_FILE',
        'PUSH_UP_ALLOW_PRIVATE',
        'PUSH_UP_ALLOW_HTTP',
        'PUSH_VAPID_SUBJECT',
        'PUSH_VAPID_PRIVATE_KEY_FILE',
        'PUSH_MIN_INTERVAL_MS',
        'PUSH_REWAKE_AFTER_MS',
        'PUSH_FCM_WAKE_BURST',
        'PUSH_FCM_WAKE_REFILL_MS',
        'PUSH_FCM_DM_RESERVE',
      ]),
    );
    expect(sorted(Object.keys(v.bridge.env))).toEqual(
      sorted([
        'LOG_LEVEL',
        'HOST',
        'BRIDGE_METRICS_PORT',
        'DATABASE_URL_FILE',
        ...temporalOn,
        'NATS_URL',
        'NATS_USER',
        'NATS_PASSWORD_FILE',
        'NATS_TLS_CA_FILE',
        'NATS_TLS_CERT_FILE',
        'NATS_TLS_KEY_FILE',
        'BRIDGE_START_AT',
        'BRIDGE_SIGNAL_BACKLOG_MS',
      ]),
    );
    expect(sorted(Object.keys(v.migrate.env))).toEqual(['DATABASE_URL_FILE', 'LOG_LEVEL']);
    // Values reach the variables as given: numbers in full (not 1.8e+06), booleans as words.
    expect(v.bridge.env).toMatchObject({ BRIDGE_START_AT: '2026-12-01T00:00:00Z' });
    expect(v.worker.env).toMatchObject({
      PUSH_REWAKE_AFTER_MS: '1800000',
      PUSH_FCM_WAKE_BURST: '20',
      PUSH_UP_ALLOW_PRIVATE: 'false',
      FCM_PROJECT_ID: 'zippchat-prod',
      TEMPORAL_NAMESPACE: 'zippchat.a1b2c',
    });
    expect(v.bridge.env).toMatchObject({ NATS_URL: 'tls://nats-0.nats:4222,tls://nats-1.nats:4222', NATS_USER: 'zippchat-push', HOST: '0.0.0.0' });
  });

  it('with every secret option on, each process mounts exactly the Secrets it reads: the api never the FCM service account, the bridge never the JWT key', () => {
    const v = views('all secrets');
    const temporalSecrets = ['push-temporal-ca', 'push-temporal-client', 'push-temporal-api-key'];
    expect(sorted(v.api.secrets)).toEqual(sorted(['push-database-api', 'push-postgres-tls', ...temporalSecrets, 'chat-jwt', 'push-vapid']));
    expect(sorted(v.worker.secrets)).toEqual(sorted(['push-database-worker', 'push-postgres-tls', ...temporalSecrets, 'push-fcm', 'push-vapid']));
    expect(sorted(v.bridge.secrets)).toEqual(
      sorted(['push-database-bridge', 'push-postgres-tls', ...temporalSecrets, 'push-nats-password', 'push-nats-ca', 'push-nats-client']),
    );
    expect(sorted(v.migrate.secrets)).toEqual(sorted(['push-database-owner', 'push-postgres-tls']));

    expect(v.api.secrets).not.toContain('push-fcm');
    expect(v.bridge.secrets).not.toContain('chat-jwt');
    expect(v.bridge.secrets).not.toContain('push-fcm');
    expect(v.bridge.secrets).not.toContain('push-vapid');
    expect(v.worker.secrets).not.toContain('chat-jwt');
    expect([...v.api.secrets, ...v.worker.secrets].filter((s) => s.startsWith('push-nats'))).toEqual([]);
  });

  it('each Secret is mounted with only the keys the process reads, each at the path its *_FILE variable names', () => {
    const dir = '/var/run/secrets/zippchat-push';
    const files = (view: ProcessView) => sorted(view.files.map((f) => `${f.variable ?? '-'} ${f.secret}:${f.key} ${f.path}`));
    const v = views('all secrets');
    const temporalFiles = [
      `TEMPORAL_TLS_CA_FILE push-temporal-ca:ca.crt ${dir}/temporal-ca/ca.crt`,
      `TEMPORAL_TLS_CERT_FILE push-temporal-client:tls.crt ${dir}/temporal-client/tls.crt`,
      `TEMPORAL_TLS_KEY_FILE push-temporal-client:tls.key ${dir}/temporal-client/tls.key`,
      `TEMPORAL_API_KEY_FILE push-temporal-api-key:api-key ${dir}/temporal-api-key/api-key`,
    ];
    // The PostgreSQL TLS files are named in the connection string (sslrootcert=…), not by a variable.
    const postgresTls = `- push-postgres-tls:* ${dir}/postgres-tls/*`;
    expect(files(v.api)).toEqual(
      sorted([
        `DATABASE_URL_FILE push-database-api:url ${dir}/database/url`,
        postgresTls,
        ...temporalFiles,
        `JWT_SECRET_FILE chat-jwt:hs256-key ${dir}/jwt/secret`,
        `PUSH_VAPID_PRIVATE_KEY_FILE push-vapid:private-key ${dir}/vapid/private-key`,
      ]),
    );
    expect(files(v.worker)).toEqual(
      sorted([
        `DATABASE_URL_FILE push-database-worker:url ${dir}/database/url`,
        postgresTls,
        ...temporalFiles,
        `FCM_CREDENTIALS_JSON_FILE push-fcm:service-account.json ${dir}/fcm/service-account.json`,
        `PUSH_VAPID_PRIVATE_KEY_FILE push-vapid:private-key ${dir}/vapid/private-key`,
      ]),
    );
    expect(files(v.bridge)).toEqual(
      sorted([
        `DATABASE_URL_FILE push-database-bridge:url ${dir}/database/url`,
        postgresTls,
        ...temporalFiles,
        `NATS_PASSWORD_FILE push-nats-password:password ${dir}/nats-password/password`,
        `NATS_TLS_CA_FILE push-nats-ca:ca.crt ${dir}/nats-ca/ca.crt`,
        `NATS_TLS_CERT_FILE push-nats-client:tls.crt ${dir}/nats-client/tls.crt`,
        `NATS_TLS_KEY_FILE push-nats-client:tls.key ${dir}/nats-client/tls.key`,
      ]),
    );
    expect(files(v.migrate)).toEqual(sorted([`DATABASE_URL_FILE push-database-owner:url ${dir}/database/url`, postgresTls]));

    // Every *_FILE variable names a mounted file.
    for (const [process, view] of Object.entries({
      ...v,
      ...prefixed(views('NATS .creds file, JWT public key')),
      ...prefixed(views('NATS token, Temporal mTLS')),
    })) {
      for (const [name, value] of Object.entries(view.env).filter(([n]) => n.endsWith('_FILE'))) {
        expect(
          view.files.map((f) => f.path),
          `${process}: ${name}`,
        ).toContain(value);
      }
    }
  });

  it('the other ways of authenticating: a NATS .creds file or token on the bridge only, a JWT public key on the api only', () => {
    const creds = views('NATS .creds file, JWT public key');
    expect(creds.bridge.files.find((f) => f.variable === 'NATS_CREDS_FILE')).toMatchObject({ secret: 'push-nats-creds', key: 'nats.creds' });
    expect(creds.api.files.find((f) => f.variable === 'JWT_PUBLIC_KEY_FILE')).toMatchObject({ secret: 'chat-jwt-public', key: 'public-key.pem' });
    expect(Object.keys(creds.api.env)).not.toContain('JWT_SECRET_FILE');
    const token = views('NATS token, Temporal mTLS');
    expect(token.bridge.files.find((f) => f.variable === 'NATS_TOKEN_FILE')).toMatchObject({ secret: 'push-nats-token', key: 'token' });
    for (const set of [creds, token]) {
      for (const p of ['api', 'worker', 'migrate'] as const) expect(set[p].secrets, p).not.toContain('push-nats-creds');
      for (const p of ['api', 'worker', 'migrate'] as const) expect(set[p].secrets, p).not.toContain('push-nats-token');
      for (const p of ['worker', 'bridge', 'migrate'] as const) expect(set[p].secrets, p).not.toContain('chat-jwt-public');
    }
    // mTLS without TEMPORAL_TLS: the service turns TLS on from the certificate itself.
    expect(Object.keys(token.worker.env)).toEqual(expect.arrayContaining(['TEMPORAL_TLS_CERT_FILE', 'TEMPORAL_TLS_KEY_FILE']));
    expect(Object.keys(token.worker.env)).not.toContain('TEMPORAL_TLS');
  });

  it('with the default values, the database URL and the JWT key come from the release-named Secrets', () => {
    const v = views('default');
    expect(sorted(v.api.secrets)).toEqual(['push-zippchat-push-database', 'push-zippchat-push-jwt']);
    expect(sorted(v.worker.secrets)).toEqual(['push-zippchat-push-database']);
    expect(sorted(v.bridge.secrets)).toEqual(['push-zippchat-push-database']);
    expect(sorted(v.migrate.secrets)).toEqual(['push-zippchat-push-database']);
  });

  it("with the default values, the bridge's signaller paces at the service's own default, the one measured", () => {
    const v = views('default');
    expect(Number(v.bridge.env.BRIDGE_SIGNAL_BACKLOG_MS)).toBe(defaultBacklogMs);
  });

  it('every configuration variable can be set from values', () => {
    const all = new Set<string>();
    for (const set of Object.keys(valuesSets) as ValuesSet[])
      for (const view of Object.values(views(set))) for (const name of Object.keys(view.env)) all.add(name);
    expect(contractVariables.filter((name) => !all.has(name))).toEqual([]);
  });
});

describe('FCM without a key (Application Default Credentials)', () => {
  const worker = (set: ValuesSet) => find(objects(set), 'Deployment', 'push-zippchat-push-worker').spec.template.spec;

  it('on GKE: the worker alone runs as its own ServiceAccount, bound to the Google service account, and mounts no FCM Secret', () => {
    const set = 'FCM without a key: GKE Workload Identity';
    const account = find(objects(set), 'ServiceAccount', 'push-zippchat-push-worker');
    expect(account.metadata.annotations).toEqual({ 'iam.gke.io/gcp-service-account': 'push-sender@zippchat-prod.iam.gserviceaccount.com' });
    expect(worker(set).serviceAccountName).toBe('push-zippchat-push-worker');
    for (const other of ['api', 'bridge']) {
      expect(find(objects(set), 'Deployment', `push-zippchat-push-${other}`).spec.template.spec.serviceAccountName, other).toBe('push-zippchat-push');
    }
    const v = views(set);
    expect(v.worker.env).toMatchObject({ FCM_PROJECT_ID: 'zippchat-prod', FCM_USE_ADC: 'true' });
    expect(Object.keys(v.worker.env)).not.toContain('FCM_CREDENTIALS_JSON_FILE');
    expect(Object.keys(v.worker.env)).not.toContain('GOOGLE_APPLICATION_CREDENTIALS');
    expect(v.api.env).not.toHaveProperty('FCM_USE_ADC');
    expect(v.worker.secrets).not.toContain('push-fcm');
    expect(worker(set).automountServiceAccountToken).toBe(false);
  });

  it('from another cloud: the credential configuration from a ConfigMap, and a projected token for the pool provider at the path it names', () => {
    const set = 'FCM without a key: federation from another cloud';
    const pod = worker(set);
    const env = views(set).worker.env;
    expect(env).toMatchObject({ FCM_USE_ADC: 'true', GOOGLE_APPLICATION_CREDENTIALS: '/var/run/zippchat-push/gcp/credential-config.json' });
    const mounts = Object.fromEntries(pod.containers[0].volumeMounts.map((m: { name: string; mountPath: string }) => [m.name, m.mountPath]));
    const volumes = Object.fromEntries(pod.volumes.map((v: { name: string }) => [v.name, v]));
    expect(mounts['gcp-credential-config']).toBe('/var/run/zippchat-push/gcp');
    expect(volumes['gcp-credential-config'].configMap).toEqual({
      name: 'push-fcm-federation',
      defaultMode: 0o440,
      items: [{ key: 'credential-config.json', path: 'credential-config.json' }],
    });
    expect(mounts['federated-token']).toBe('/var/run/zippchat-push/federated-token');
    expect(volumes['federated-token'].projected.sources).toEqual([
      {
        serviceAccountToken: {
          audience: 'https://iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/zippchat/providers/eks-cluster',
          expirationSeconds: 3600,
          path: 'token',
        },
      },
    ]);
    expect(pod.serviceAccountName).toBe('push-zippchat-push-worker');
    for (const other of ['api', 'bridge']) {
      const spec = find(objects(set), 'Deployment', `push-zippchat-push-${other}`).spec.template.spec;
      expect(
        spec.volumes.map((v: { name: string }) => v.name),
        other,
      ).not.toContain('federated-token');
    }
  });
});

describe('running in a cluster', () => {
  it('probes: ready is /readyz, alive is /healthz, on the port each process serves them', () => {
    const o = objects('default');
    for (const [name, port] of [
      ['api', 'http'],
      ['worker', 'metrics'],
      ['bridge', 'metrics'],
    ] as const) {
      const container = find(o, 'Deployment', `push-zippchat-push-${name}`).spec.template.spec.containers[0];
      expect(container.readinessProbe.httpGet, name).toEqual({ path: '/readyz', port });
      expect(container.livenessProbe.httpGet, name).toEqual({ path: '/healthz', port });
      expect(container.startupProbe.httpGet, name).toEqual({ path: '/healthz', port });
      expect(
        container.ports.map((p: { name: string }) => p.name),
        name,
      ).toContain(port);
      expect(container.resources.requests, name).toHaveProperty('memory');
      expect(container.resources.limits, name).toHaveProperty('memory');
    }
  });

  it("the grace period outlasts a send (10 s) and the worker's shutdown grace (20 s), the process's own 30 s stop deadline and the api's preStop pause", () => {
    for (const name of ['api', 'worker', 'bridge']) {
      const pod = find(objects('default'), 'Deployment', `push-zippchat-push-${name}`).spec.template.spec;
      const preStop = pod.containers[0].lifecycle?.preStop?.sleep?.seconds ?? 0;
      expect(pod.terminationGracePeriodSeconds, name).toBeGreaterThan(Math.max(10 + 20, 30) + preStop);
    }
  });

  it('runs the image unprivileged: non-root, read-only root filesystem, no capabilities, no service account token', () => {
    const pods = [
      ...['api', 'worker', 'bridge'].map((n) => find(objects('all secrets'), 'Deployment', `push-zippchat-push-${n}`)),
      find(objects('all secrets'), 'Job', 'push-zippchat-push-migrate'),
    ].map((o) => o.spec.template.spec);
    for (const pod of pods) {
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.containers[0].securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      for (const volume of pod.volumes.filter((v: { secret?: unknown }) => v.secret !== undefined))
        expect(volume.secret.defaultMode, volume.name).toBe(0o440);
    }
  });

  it('migrates before install and upgrade: a hook Job running `migrate up`, with a ServiceAccount that exists before it', () => {
    const o = objects('default');
    const job = find(o, 'Job', 'push-zippchat-push-migrate');
    expect(job.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'pre-install,pre-upgrade' });
    expect(job.spec.template.spec.containers[0].args).toEqual(['dist/src/bin/migrate.js', 'up']);
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    const account = find(o, 'ServiceAccount', job.spec.template.spec.serviceAccountName);
    expect(account.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(Number(account.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(Number(job.metadata.annotations?.['helm.sh/hook-weight']));
  });

  it("the entry points are the image's: node runs dist/src/bin/<process>.js", () => {
    const v = views('default');
    expect(v.api.args).toEqual(['dist/src/bin/api.js']);
    expect(v.worker.args).toEqual(['dist/src/bin/worker.js']);
    expect(v.bridge.args).toEqual(['dist/src/bin/bridge.js']);
  });

  it('scales the api by CPU when asked (the Deployment then leaves replicas to the HPA); PDBs keep one pod at most away', () => {
    const o = objects('all secrets');
    const hpa = find(o, 'HorizontalPodAutoscaler', 'push-zippchat-push-api');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'push-zippchat-push-api' });
    expect(find(o, 'Deployment', 'push-zippchat-push-api').spec.replicas).toBeUndefined();
    expect(find(objects('default'), 'Deployment', 'push-zippchat-push-api').spec.replicas).toBe(2);
    for (const name of ['api', 'worker', 'bridge']) {
      const pdb = find(o, 'PodDisruptionBudget', `push-zippchat-push-${name}`);
      expect(pdb.spec.maxUnavailable).toBe(1);
      expect(pdb.spec.selector.matchLabels).toEqual(find(o, 'Deployment', `push-zippchat-push-${name}`).spec.selector.matchLabels);
    }
  });

  it('Services and ServiceMonitors reach the ports that serve /metrics: the three processes and the SDK', () => {
    const o = objects('all secrets');
    const scraped: string[] = [];
    for (const monitor of o.filter((x) => x.kind === 'ServiceMonitor')) {
      expect(monitor.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
      const services = o.filter(
        (s) => s.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels).every(([k, val]) => s.metadata.labels?.[k] === val),
      );
      expect(services, monitor.metadata.name).toHaveLength(1);
      const service = services[0]!;
      const pods = o.filter(
        (d) => d.kind === 'Deployment' && Object.entries(service.spec.selector).every(([k, val]) => d.spec.template.metadata.labels[k] === val),
      );
      expect(pods, service.metadata.name).toHaveLength(1);
      const containerPorts = pods[0]!.spec.template.spec.containers[0].ports as Array<{ name: string; containerPort: number }>;
      for (const endpoint of monitor.spec.endpoints) {
        expect(endpoint.path).toBe('/metrics');
        const servicePort = service.spec.ports.find((p: { name: string }) => p.name === endpoint.port);
        expect(servicePort, `${monitor.metadata.name} port ${endpoint.port}`).toBeDefined();
        const target = containerPorts.find((p) => p.name === servicePort.targetPort);
        expect(target, `${service.metadata.name} targets ${servicePort.targetPort}`).toBeDefined();
        scraped.push(`${pods[0]!.metadata.name}:${target!.containerPort}`);
      }
    }
    expect(sorted(scraped)).toEqual([
      'push-zippchat-push-api:8080',
      'push-zippchat-push-bridge:9465',
      'push-zippchat-push-worker:9464',
      'push-zippchat-push-worker:9466',
    ]);
    const ingress = find(o, 'Ingress', 'push-zippchat-push-api');
    expect(ingress.spec.rules[0].http.paths.map((p: { path: string }) => p.path)).toEqual(['/api/push', '/api/keys/devices']);
  });
});

describe('what the docs describe, shipped for the cluster: alerts, dashboard, NetworkPolicies, worker autoscaling', () => {
  const set = 'operations: alerts, dashboard, NetworkPolicy, worker autoscaling' as const;
  const rulesFile = path.join(chartDir, 'files', 'alert-rules.yaml');
  type Rule = { alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> };
  const fileRules = () => (parse(readFileSync(rulesFile, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
  const renderedRules = (o: readonly K8sObject[]) =>
    (find(o, 'PrometheusRule', 'push-zippchat-push-alerts').spec.groups as Array<{ rules: Rule[] }>).flatMap((g) => g.rules);

  it("the PrometheusRule is the rules file: every alert but the disabled, the release's labels added, runbooks at the base given", () => {
    const rendered = renderedRules(objects(set));
    const expected = fileRules().filter((r) => r.alert !== 'ZippchatPushDown');
    expect(rendered.map((r) => r.alert)).toEqual(expected.map((r) => r.alert));
    for (const [i, rule] of expected.entries()) {
      const got = rendered[i]!;
      expect(got.expr, rule.alert).toBe(rule.expr);
      expect(got.for, rule.alert).toBe(rule.for);
      expect(got.labels, rule.alert).toEqual({ ...rule.labels, team: 'chat' });
      expect(got.annotations.runbook_url, rule.alert).toBe(
        rule.annotations.runbook_url!.replace(
          'https://github.com/zippchat/zippchat-push/blob/main/docs/operations.md',
          'https://wiki.example.org/zippchat-push/operations',
        ),
      );
      expect(got.annotations.summary).toBe(rule.annotations.summary);
    }
    expect(find(objects(set), 'PrometheusRule', 'push-zippchat-push-alerts').metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
  });

  it("with the default runbook base, the PrometheusRule's runbook links are the file's own", async () => {
    const out = await runTool(tool('helm'), templateArgs([], ['--set', 'metrics.prometheusRule.enabled=true']), helmEnv(home));
    expect(out.code, out.stderr).toBe(0);
    const rendered = renderedRules(parseManifests(out.stdout));
    expect(rendered.map((r) => [r.alert, r.annotations.runbook_url])).toEqual(fileRules().map((r) => [r.alert, r.annotations.runbook_url]));
    expect(rendered.map((r) => r.labels)).toEqual(fileRules().map((r) => r.labels));
  });

  it('api, worker and bridge export their spans to the collector given, sampling the share given; migrate never', () => {
    const v = views(set);
    for (const process of ['api', 'worker', 'bridge'] as const) {
      expect(v[process].env, process).toMatchObject({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability.svc:4318',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      });
    }
    expect(Object.keys(v.migrate.env)).not.toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(Object.keys(views('all secrets').worker.env)).not.toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
  });

  it("the dashboard ConfigMap holds docs/grafana-dashboard.json as it is, with the sidecar's label, where the sidecar looks", () => {
    const configMap = objects(set).find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'push-zippchat-push-dashboard') as K8sObject & {
      data: Record<string, string>;
      metadata: { namespace: string };
    };
    expect(configMap.data['grafana-dashboard.json']).toBe(readFileSync(path.join(projectRoot, 'docs', 'grafana-dashboard.json'), 'utf8'));
    expect(configMap.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(configMap.metadata.annotations).toEqual({ grafana_folder: 'ZippChat' });
    expect(configMap.metadata.namespace).toBe('monitoring');
  });

  it('each process has one NetworkPolicy letting in exactly the ports its container serves, from the peers given', () => {
    const o = objects(set);
    for (const [name, from] of [
      ['api', 'ingress-nginx'],
      ['worker', 'monitoring'],
      ['bridge', 'monitoring'],
    ] as const) {
      const deployment = find(o, 'Deployment', `push-zippchat-push-${name}`);
      const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;
      const policies = o.filter(
        (p) => p.kind === 'NetworkPolicy' && Object.entries(p.spec.podSelector.matchLabels).every(([k, v]) => podLabels[k] === v),
      );
      expect(policies, name).toHaveLength(1);
      const ingress = policies[0]!.spec.ingress as Array<{ ports: Array<{ port: number }>; from: unknown[] }>;
      const containerPorts = (deployment.spec.template.spec.containers[0].ports as Array<{ containerPort: number }>).map((p) => p.containerPort);
      expect(sorted(ingress.flatMap((rule) => rule.ports.map((p) => String(p.port)))), name).toEqual(sorted(containerPorts.map(String)));
      expect(
        ingress.every((rule) => JSON.stringify(rule.from).includes(from)),
        name,
      ).toBe(true);
      expect(policies[0]!.spec.policyTypes, name).toEqual(['Ingress', 'Egress']);
    }
  });

  it("the worker scales with KEDA on Temporal's backlog and the signals held back, reading Temporal as the workers do", () => {
    const o = objects(set);
    const worker = find(o, 'Deployment', 'push-zippchat-push-worker');
    expect(worker.spec.replicas).toBeUndefined();
    const scaled = find(o, 'ScaledObject', 'push-zippchat-push-worker');
    expect(scaled.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'push-zippchat-push-worker' });
    expect(scaled.spec).toMatchObject({ minReplicaCount: 2, maxReplicaCount: 6 });
    const [temporal, prometheus] = scaled.spec.triggers as Array<{
      type: string;
      metadata: Record<string, string>;
      authenticationRef?: { name: string };
    }>;
    const env = views(set).worker.env;
    expect(temporal).toMatchObject({
      type: 'temporal',
      metadata: {
        endpoint: env.TEMPORAL_ADDRESS,
        namespace: env.TEMPORAL_NAMESPACE,
        taskQueue: env.TEMPORAL_TASK_QUEUE,
        tlsServerName: env.TEMPORAL_TLS_SERVER_NAME,
      },
    });
    // KEDA reads the same Secrets, with the same keys, that the worker mounts for Temporal.
    const auth = find(o, 'TriggerAuthentication', temporal!.authenticationRef!.name);
    const refs = (auth.spec.secretTargetRef as Array<{ parameter: string; name: string; key: string }>).map(
      (r) => `${r.parameter} ${r.name}:${r.key}`,
    );
    const mounted = views(set).worker.files.filter((f) => f.variable?.startsWith('TEMPORAL_'));
    const byVariable = Object.fromEntries(mounted.map((f) => [f.variable!, `${f.secret}:${f.key}`]));
    expect(sorted(refs)).toEqual(
      sorted([
        `apiKey ${byVariable.TEMPORAL_API_KEY_FILE}`,
        `cert ${byVariable.TEMPORAL_TLS_CERT_FILE}`,
        `key ${byVariable.TEMPORAL_TLS_KEY_FILE}`,
        `ca ${byVariable.TEMPORAL_TLS_CA_FILE}`,
      ]),
    );
    expect(prometheus).toMatchObject({ type: 'prometheus', metadata: { serverAddress: 'http://prometheus-operated.monitoring.svc:9090' } });
    expect(prometheus!.metadata.query).toContain('push_bridge_owed_signals{namespace="chat"}');
  });
});

describe('settings the service would refuse fail the release, with one line naming the value', () => {
  const refused: Array<[string, string[], RegExp]> = [
    [
      'an FCM project without a credential source',
      ['--set', 'fcm.projectId=p1'],
      /fcm\.credentials\.existingSecret or fcm\.adc\.enabled is required with fcm\.projectId/,
    ],
    [
      'two FCM credential sources',
      ['--set', 'fcm.projectId=p1', '--set', 'fcm.credentials.existingSecret=s', '--set', 'fcm.adc.enabled=true'],
      /fcm: set one credential source/,
    ],
    [
      'Application Default Credentials without an FCM project',
      ['--set', 'fcm.adc.enabled=true'],
      /fcm\.projectId is required with fcm\.adc\.enabled/,
    ],
    [
      'a federation credential configuration without Application Default Credentials',
      ['--set', 'fcm.projectId=p1', '--set', 'fcm.credentials.existingSecret=s', '--set', 'fcm.adc.credentialConfig.configMap=c'],
      /fcm\.adc\.enabled is required with fcm\.adc\.credentialConfig\.configMap/,
    ],
    ['a service account without its FCM project', ['--set', 'fcm.credentials.existingSecret=s'], /fcm\.projectId is required/],
    [
      'two ways of authenticating to NATS',
      ['--set', 'nats.token.existingSecret=t', '--set', 'nats.credsFile.existingSecret=c'],
      /nats: set one way of authenticating/,
    ],
    ['a NATS user without a password', ['--set', 'nats.user=u'], /nats\.password\.existingSecret is required with nats\.user/],
    [
      'a VAPID subject without its key',
      ['--set', 'unifiedPush.vapid.subject=mailto:a@b.c'],
      /unifiedPush\.vapid\.privateKey\.existingSecret is required/,
    ],
    ['a misspelt value', ['--set', 'temporal.adress=x:1'], /adress/],
    ['a log level the service does not know', ['--set', 'logLevel=verbose'], /logLevel/],
    ['a grace period a send does not fit in', ['--set', 'terminationGracePeriodSeconds=20'], /terminationGracePeriodSeconds/],
    [
      'worker autoscaling without a trigger',
      ['--set', 'worker.autoscaling.enabled=true', '--set', 'worker.autoscaling.temporalBacklog.enabled=false'],
      /worker\.autoscaling: enable a trigger/,
    ],
    [
      'worker autoscaling on paced signals without Prometheus',
      ['--set', 'worker.autoscaling.enabled=true', '--set', 'worker.autoscaling.pacedSignals.enabled=true'],
      /worker\.autoscaling\.pacedSignals\.serverAddress is required/,
    ],
    [
      'worker autoscaling with fewer replicas at most than at least',
      ['--set', 'worker.autoscaling.enabled=true', '--set', 'worker.autoscaling.minReplicas=5', '--set', 'worker.autoscaling.maxReplicas=3'],
      /worker\.autoscaling\.minReplicas must not exceed/,
    ],
    ['a runbook base with an anchor', ['--set', 'metrics.prometheusRule.runbookBaseUrl=https://x.example/ops#alerts'], /runbookBaseUrl/],
  ];
  it.each(refused)('%s', async (_what, args, message) => {
    const out = await runTool(tool('helm'), templateArgs([], args), helmEnv(home));
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(message);
  });
});

function prefixed(v: Record<Process, ProcessView>): Record<string, ProcessView> {
  return Object.fromEntries(Object.entries(v).map(([k, view]) => [`${k} (variant)`, view]));
}

async function kubeconform(file: string) {
  return runTool(
    tool('kubeconform'),
    ['-strict', '-summary', '-kubernetes-version', schemas.kubernetesVersion.replace(/^v/, ''), '-schema-location', schemas.location, file],
    { PATH: process.env.PATH, HOME: home },
  );
}
