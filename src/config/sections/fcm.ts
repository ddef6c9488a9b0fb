/**
 * FCM (docs/design.md, Configuration and Self-hosted instances). The api only says whether FCM is offered: FCM_PROJECT_ID set.
 * The worker sends: it needs the project and exactly one credential source together — the
 * service-account key (FCM_CREDENTIALS_JSON) or Application Default Credentials
 * (FCM_USE_ADC=true). A worker given a project without a source, a source without a project,
 * both sources, or a key of another project refuses to start: an FCM half-configured would
 * otherwise fail every wake while the api keeps offering FCM.
 */
import { createPrivateKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { readFile } from '../env.js';
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { boolean, invalid, text, tryUrl } from '../vars.js';

/** Google's OAuth token endpoint: a key file's `token_uri` when it names none. */
export const googleTokenUri = 'https://oauth2.googleapis.com/token';

export interface ServiceAccountKey {
  readonly clientEmail: string;
  readonly privateKey: string;
  readonly privateKeyId: string | undefined;
  /** Where the OAuth token is fetched: the key file's `token_uri`. */
  readonly tokenUri: string;
}

/** Where the worker's FCM bearer comes from; either way google-auth-library fetches it. */
export type FcmCredentials =
  | { readonly kind: 'key'; readonly key: ServiceAccountKey }
  /** Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS's file, or the metadata server. */
  | { readonly kind: 'adc'; readonly credentialFile: string | undefined };

export interface WorkerFcmSettings {
  /** Both set, or both unset (FCM disabled on this worker). */
  readonly projectId: string | undefined;
  readonly credentials: FcmCredentials | undefined;
  readonly endpoint: string;
}

const projectIdVar = text().transform((v, ctx) =>
  v === undefined || /^[a-z0-9-]{1,100}$/i.test(v) ? v : invalid(ctx, `is not a Firebase project id (got "${v}")`),
);

/** api: `GET /api/push/config` reports `fcm: true` exactly when FCM_PROJECT_ID is set. */
export const apiFcmSection = section({ FCM_PROJECT_ID: projectIdVar }, (v) => ({ fcm: { projectId: v.FCM_PROJECT_ID } }));

const serviceAccountSchema = z.object({
  client_email: z.string().min(1),
  private_key: z.string().min(1),
  private_key_id: z.string().optional(),
  project_id: z.string().optional(),
  token_uri: z.string().url().optional(),
});

/** The credential files google-auth-library reads as Application Default Credentials. */
const adcFileTypes = ['service_account', 'external_account', 'impersonated_service_account', 'authorized_user', 'external_account_authorized_user'];

const sourceHint = 'set FCM_CREDENTIALS_JSON (or FCM_CREDENTIALS_JSON_FILE) or FCM_USE_ADC=true';

export const workerFcmSection = section(
  {
    FCM_PROJECT_ID: projectIdVar,
    FCM_CREDENTIALS_JSON: text(),
    FCM_USE_ADC: boolean(false),
    GOOGLE_APPLICATION_CREDENTIALS: text(),
    GOOGLE_SDK_NODE_LOGGING: text(),
    FCM_ENDPOINT: text(),
  },
  (v): { fcm: WorkerFcmSettings } => {
    const endpoint = v.FCM_ENDPOINT ?? 'https://fcm.googleapis.com';
    const endpointUrl = tryUrl(endpoint);
    if (endpointUrl === undefined || !['https:', 'http:'].includes(endpointUrl.protocol))
      throw new ConfigError('FCM_ENDPOINT', 'must be an http(s) URL');
    const fcm = { endpoint: endpoint.replace(/\/+$/, '') };
    const projectId = v.FCM_PROJECT_ID;
    const hasKey = v.FCM_CREDENTIALS_JSON !== undefined;
    if (hasKey && v.FCM_USE_ADC)
      throw new ConfigError('FCM_USE_ADC', 'must not be true together with FCM_CREDENTIALS_JSON: the worker takes one FCM credential source');
    if (!hasKey && !v.FCM_USE_ADC) {
      if (projectId !== undefined) throw new ConfigError('FCM_PROJECT_ID', `needs a credential source on the worker: ${sourceHint}`);
      return { fcm: { ...fcm, projectId: undefined, credentials: undefined } };
    }
    if (v.GOOGLE_SDK_NODE_LOGGING !== undefined)
      throw new ConfigError(
        'GOOGLE_SDK_NODE_LOGGING',
        "must be unset on a worker that sends with FCM: google-auth-library's debug log prints access tokens",
      );
    if (v.FCM_CREDENTIALS_JSON !== undefined) {
      const key = serviceAccountKey(v.FCM_CREDENTIALS_JSON, projectId);
      return { fcm: { ...fcm, projectId: key.projectId, credentials: { kind: 'key', key: key.key } } };
    }
    if (projectId === undefined) throw new ConfigError('FCM_PROJECT_ID', 'is required with FCM_USE_ADC');
    const credentialFile = v.GOOGLE_APPLICATION_CREDENTIALS;
    if (credentialFile !== undefined) checkCredentialFile(credentialFile);
    return { fcm: { ...fcm, projectId, credentials: { kind: 'adc', credentialFile } } };
  },
);

function serviceAccountKey(json: string, projectId: string | undefined): { projectId: string; key: ServiceAccountKey } {
  let parsed: z.infer<typeof serviceAccountSchema>;
  try {
    parsed = serviceAccountSchema.parse(JSON.parse(json));
  } catch {
    throw new ConfigError('FCM_CREDENTIALS_JSON', 'must be a service-account key JSON with client_email and private_key');
  }
  try {
    createPrivateKey(parsed.private_key);
  } catch {
    throw new ConfigError('FCM_CREDENTIALS_JSON', 'has a private_key that is not a PEM private key');
  }
  if (projectId === undefined) throw new ConfigError('FCM_PROJECT_ID', 'is required with FCM_CREDENTIALS_JSON');
  if (parsed.project_id !== undefined && parsed.project_id !== projectId) {
    throw new ConfigError('FCM_CREDENTIALS_JSON', `is a key of project "${parsed.project_id}", not of FCM_PROJECT_ID "${projectId}"`);
  }
  const key = {
    clientEmail: parsed.client_email,
    privateKey: parsed.private_key,
    privateKeyId: parsed.private_key_id,
    tokenUri: parsed.token_uri ?? googleTokenUri,
  };
  return { projectId, key };
}

/**
 * The file GOOGLE_APPLICATION_CREDENTIALS names is one google-auth-library reads; its content is
 * never quoted. A file that is not there yet is no error: a volume or a sidecar may write it
 * after the worker started, and the worker reads it when it comes (src/transports/fcm-auth.ts;
 * until then each try logs and counts a failed token fetch).
 */
function checkCredentialFile(file: string): void {
  if (!existsSync(file)) return;
  const content = readFile('GOOGLE_APPLICATION_CREDENTIALS', file);
  let type: unknown;
  try {
    type = (JSON.parse(content.toString('utf8')) as { type?: unknown }).type;
  } catch {
    throw new ConfigError('GOOGLE_APPLICATION_CREDENTIALS', `names a file that is not JSON (${file})`);
  }
  if (typeof type !== 'string' || !adcFileTypes.includes(type)) {
    throw new ConfigError(
      'GOOGLE_APPLICATION_CREDENTIALS',
      `names a file that is not a Google credential file of type ${adcFileTypes.join(', ')} (${file})`,
    );
  }
}
