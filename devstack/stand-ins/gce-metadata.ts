/**
 * A stand-in for the metadata server of GKE Workload Identity (and of Compute Engine), as
 * google-auth-library reaches it when GCE_METADATA_HOST names it. It answers as GKE's does:
 *   - every request must carry `Metadata-Flavor: Google` and no `X-Forwarded-For` (a request
 *     relayed by a proxy); otherwise 403, and the problem is recorded;
 *   - every answer carries `Metadata-Flavor: Google` (the library refuses one without it);
 *   - `GET /computeMetadata/v1/instance/service-accounts/default/token?scopes=…` issues an
 *     opaque access token of the pod's Google service account:
 *     `{"access_token","expires_in","token_type":"Bearer"}`; the FCM stand-in accepts it
 *     while `isValid`;
 *   - `GET /computeMetadata/v1/instance` (the library's "is there a metadata server" probe)
 *     and `…/service-accounts/default/email` answer as on a node.
 *
 *   const metadata = await startGceMetadata({ serviceAccount: 'push@proj.iam.gserviceaccount.com' });
 *   process.env.GCE_METADATA_HOST = metadata.host;
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { startServer, type FakeRequest } from '../../simulator/loopback-server.js';
import { firebaseMessagingScope } from './google-oauth.js';

export interface MetadataTokenRecord {
  readonly at: Date;
  readonly scopes: readonly string[];
  readonly issued: string;
}

export interface FakeGceMetadata {
  /** `127.0.0.1:<port>`: the value of GCE_METADATA_HOST. */
  readonly host: string;
  /** Token requests answered with a token, in order. */
  readonly tokens: readonly MetadataTokenRecord[];
  /** Requests refused, and why (a missing Metadata-Flavor header, a wrong path…). */
  readonly problems: readonly string[];
  isValid(token: string): boolean;
  /** Revokes every token issued so far (as if they had expired early). */
  revokeAll(): void;
  close(): Promise<void>;
}

export interface GceMetadataOptions {
  /** The Google service account the Kubernetes service account is bound to. */
  readonly serviceAccount: string;
  /** `expires_in` of issued tokens (GKE: up to 3599, counting down as the cached token ages). */
  readonly expiresInSeconds?: number;
  /** The loopback port to listen on (a free one by default): a server that comes up where a worker already looks. */
  readonly port?: number;
}

const tokenPath = '/computeMetadata/v1/instance/service-accounts/default/token';
const flavor = { 'metadata-flavor': 'Google' };

export async function startGceMetadata(options: GceMetadataOptions): Promise<FakeGceMetadata> {
  const tokens: MetadataTokenRecord[] = [];
  const problems: string[] = [];
  const valid = new Set<string>();

  const handle = (request: FakeRequest, response: ServerResponse): void => {
    const refusal = refuse(request);
    if (refusal !== undefined) {
      problems.push(refusal);
      return text(response, 403, refusal);
    }
    const url = new URL(request.path, 'http://metadata.google.internal');
    const path = url.pathname.replace(/\/$/, '');
    if (path === tokenPath) {
      const scopes = (url.searchParams.get('scopes') ?? '').split(',').filter((s) => s !== '');
      if (!scopes.includes(firebaseMessagingScope)) {
        problems.push(`token asked for scopes "${scopes.join(',')}", without firebase.messaging`);
        return text(response, 400, 'scopes lack firebase.messaging');
      }
      const issued = `ya29.gke-${randomBytes(24).toString('base64url')}`;
      valid.add(issued);
      tokens.push({ at: new Date(), scopes, issued });
      return json(response, { access_token: issued, expires_in: options.expiresInSeconds ?? 3599, token_type: 'Bearer' });
    }
    if (path === '/computeMetadata/v1/instance/service-accounts/default/email') return text(response, 200, options.serviceAccount);
    if (path === '/computeMetadata/v1/instance') return text(response, 200, 'attributes/\nhostname\nid\nservice-accounts/\nzone\n');
    problems.push(`${request.method} ${url.pathname}: not a path this stand-in serves`);
    return text(response, 404, 'Not Found');
  };

  const server = await startServer(handle, '127.0.0.1', options.port ?? 0);
  return {
    host: new URL(server.url).host,
    tokens,
    problems,
    isValid: (token) => valid.has(token),
    revokeAll: () => valid.clear(),
    close: server.close,
  };
}

/** Why GKE's metadata server would refuse this request, or undefined. */
function refuse(request: FakeRequest): string | undefined {
  if (request.method !== 'GET') return `method ${request.method}, expected GET`;
  if (request.headers['metadata-flavor'] !== 'Google') return 'Missing Metadata-Flavor:Google header.';
  if (request.headers['x-forwarded-for'] !== undefined) return 'Request relayed by a proxy (X-Forwarded-For).';
  return undefined;
}

function text(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...flavor }).end(body);
}

function json(response: ServerResponse, body: unknown): void {
  const payload = JSON.stringify(body);
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...flavor }).end(payload);
}
