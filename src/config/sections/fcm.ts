/**
 * FCM (docs/design.md, Configuration). The api only says whether FCM is offered: FCM_PROJECT_ID set.
 * The worker sends: it needs the project and the service account together — a worker given
 * one without the other, or a key of another project, refuses to start (an FCM half-configured
 * would otherwise fail every wake while the api keeps offering FCM).
 */
import { createPrivateKey } from 'node:crypto';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { invalid, text, tryUrl } from '../vars.js';

export interface FcmCredentials {
  readonly clientEmail: string;
  readonly privateKey: string;
  readonly privateKeyId: string | undefined;
  /** Where the OAuth token is fetched: the key file's `token_uri`. */
  readonly tokenUri: string;
}

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

export const workerFcmSection = section(
  { FCM_PROJECT_ID: projectIdVar, FCM_CREDENTIALS_JSON: text(), FCM_ENDPOINT: text() },
  (v): { fcm: WorkerFcmSettings } => {
    const endpoint = v.FCM_ENDPOINT ?? 'https://fcm.googleapis.com';
    const endpointUrl = tryUrl(endpoint);
    if (endpointUrl === undefined || !['https:', 'http:'].includes(endpointUrl.protocol))
      throw new ConfigError('FCM_ENDPOINT', 'must be an http(s) URL');
    const fcm = { endpoint: endpoint.replace(/\/+$/, '') };
    const projectId = v.FCM_PROJECT_ID;
    if (v.FCM_CREDENTIALS_JSON === undefined) {
      if (projectId !== undefined)
        throw new ConfigError('FCM_CREDENTIALS_JSON', 'is required with FCM_PROJECT_ID on the worker (the service account that sends)');
      return { fcm: { ...fcm, projectId: undefined, credentials: undefined } };
    }
    const account = serviceAccount(v.FCM_CREDENTIALS_JSON);
    if (projectId === undefined) throw new ConfigError('FCM_PROJECT_ID', 'is required with FCM_CREDENTIALS_JSON');
    if (account.project_id !== undefined && account.project_id !== projectId) {
      throw new ConfigError('FCM_CREDENTIALS_JSON', `is a key of project "${account.project_id}", not of FCM_PROJECT_ID "${projectId}"`);
    }
    const credentials: FcmCredentials = {
      clientEmail: account.client_email,
      privateKey: account.private_key,
      privateKeyId: account.private_key_id,
      tokenUri: account.token_uri ?? 'https://oauth2.googleapis.com/token',
    };
    return { fcm: { ...fcm, projectId, credentials } };
  },
);

function serviceAccount(json: string): z.infer<typeof serviceAccountSchema> {
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
  return parsed;
}
