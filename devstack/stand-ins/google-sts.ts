/**
 * Stand-ins for the two Google endpoints of workload identity federation, on one loopback
 * port, as an `external_account` credential file reaches them:
 *   - `POST /v1/token`, the Security Token Service (RFC 8693 token exchange): checks the grant
 *     and token types, the workload identity provider (`audience`) and the subject token — the
 *     other cloud's OIDC token, which must be the one the test expects right now — and issues
 *     a federated access token;
 *   - `POST /v1/projects/-/serviceAccounts/{email}:generateAccessToken`, IAM Credentials
 *     (service-account impersonation): checks the federated bearer and the firebase.messaging
 *     scope and issues the service account's access token.
 * Anything wrong is answered as Google does (400 `invalid_grant`, 401, 403) and recorded in
 * `problems`. The FCM stand-in accepts the tokens `isFederated` or `isImpersonated` vouches for.
 *
 *   const sts = await startGoogleSts({ audience, subjectToken: () => current });
 *   writeFileSync(file, JSON.stringify(sts.credentialConfig({ subjectTokenFile, impersonate: email })));
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendJson, startServer, type FakeRequest } from '../../simulator/loopback-server.js';
import { firebaseMessagingScope } from './google-oauth.js';

const cloudPlatformScope = 'https://www.googleapis.com/auth/cloud-platform';

export interface StsExchangeRecord {
  readonly subjectToken: string;
  readonly scope: string;
  readonly issued: string | undefined;
}

export interface FakeGoogleSts {
  readonly url: string;
  /** Token exchanges, refused ones too, in order. */
  readonly exchanges: readonly StsExchangeRecord[];
  /** generateAccessToken calls answered with a token, in order. */
  readonly impersonations: readonly string[];
  readonly problems: readonly string[];
  isFederated(token: string): boolean;
  isImpersonated(token: string): boolean;
  /** An `external_account` credential file for this STS, its subject token read from a file. */
  credentialConfig(options: { subjectTokenFile: string; impersonate?: string }): Record<string, unknown>;
  close(): Promise<void>;
}

export interface GoogleStsOptions {
  /** The workload identity pool provider: `//iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/P/providers/K`. */
  readonly audience: string;
  /** The subject token the other cloud currently vouches for (a projected service-account token rotates). */
  readonly subjectToken: () => string;
  readonly expiresInSeconds?: number;
}

export async function startGoogleSts(options: GoogleStsOptions): Promise<FakeGoogleSts> {
  const exchanges: StsExchangeRecord[] = [];
  const impersonations: string[] = [];
  const problems: string[] = [];
  const federated = new Set<string>();
  const impersonated = new Set<string>();
  const lifetime = options.expiresInSeconds ?? 3599;

  const refuse = (response: ServerResponse, status: number, problem: string, error = 'invalid_grant') => {
    problems.push(problem);
    sendJson(response, status, { error, error_description: problem });
  };

  const exchange = (request: FakeRequest, response: ServerResponse) => {
    const form = new URLSearchParams(request.body.toString('utf8'));
    const subjectToken = form.get('subject_token') ?? '';
    const scope = form.get('scope') ?? '';
    const record = (issued: string | undefined) => void exchanges.push({ subjectToken, scope, issued });
    const problem = checkExchange(request, form, options);
    if (problem !== undefined) {
      record(undefined);
      return refuse(response, 400, problem);
    }
    const issued = `ya29.sts-${randomBytes(24).toString('base64url')}`;
    federated.add(issued);
    record(issued);
    sendJson(response, 200, {
      access_token: issued,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: lifetime,
    });
  };

  const impersonate = (request: FakeRequest, response: ServerResponse) => {
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (bearer === undefined || !federated.has(bearer))
      return refuse(response, 401, 'generateAccessToken without a federated token', 'unauthenticated');
    let body: { scope?: unknown; lifetime?: unknown };
    try {
      body = JSON.parse(request.body.toString('utf8')) as typeof body;
    } catch {
      return refuse(response, 400, 'generateAccessToken body is not JSON', 'invalid_argument');
    }
    if (!Array.isArray(body.scope) || !body.scope.includes(firebaseMessagingScope))
      return refuse(response, 403, `generateAccessToken scope ${JSON.stringify(body.scope)} lacks firebase.messaging`, 'permission_denied');
    const issued = `ya29.sa-${randomBytes(24).toString('base64url')}`;
    impersonated.add(issued);
    impersonations.push(issued);
    sendJson(response, 200, { accessToken: issued, expireTime: new Date(Date.now() + lifetime * 1_000).toISOString() });
  };

  const server = await startServer((request, response) => {
    const path = new URL(request.path, 'http://x').pathname;
    if (request.method === 'POST' && path === '/v1/token') return exchange(request, response);
    if (request.method === 'POST' && /^\/v1\/projects\/-\/serviceAccounts\/[^/]+:generateAccessToken$/.test(path))
      return impersonate(request, response);
    refuse(response, 404, `${request.method} ${path}: not a path this stand-in serves`, 'not_found');
  });

  return {
    url: server.url,
    exchanges,
    impersonations,
    problems,
    isFederated: (token) => federated.has(token),
    isImpersonated: (token) => impersonated.has(token),
    credentialConfig: ({ subjectTokenFile, impersonate: account }) => ({
      type: 'external_account',
      audience: options.audience,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: `${server.url}/v1/token`,
      credential_source: { file: subjectTokenFile, format: { type: 'text' } },
      ...(account === undefined
        ? {}
        : { service_account_impersonation_url: `${server.url}/v1/projects/-/serviceAccounts/${account}:generateAccessToken` }),
    }),
    close: server.close,
  };
}

/** Why Google's STS would refuse this exchange, or undefined. */
function checkExchange(request: FakeRequest, form: URLSearchParams, options: GoogleStsOptions): string | undefined {
  if (!(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
    return 'body is not application/x-www-form-urlencoded';
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange') return `grant_type ${form.get('grant_type')}`;
  if (form.get('requested_token_type') !== 'urn:ietf:params:oauth:token-type:access_token')
    return `requested_token_type ${form.get('requested_token_type')}`;
  if (form.get('subject_token_type') !== 'urn:ietf:params:oauth:token-type:jwt') return `subject_token_type ${form.get('subject_token_type')}`;
  if (form.get('audience') !== options.audience) return `audience ${form.get('audience')}, not the workload identity provider`;
  if (form.get('subject_token') !== options.subjectToken()) return 'subject_token is not the one the identity provider issued';
  const scopes = (form.get('scope') ?? '').split(' ');
  if (!scopes.includes(firebaseMessagingScope) && !scopes.includes(cloudPlatformScope))
    return `scope "${form.get('scope')}" allows neither FCM nor impersonation`;
  return undefined;
}
