/**
 * A stand-in for Google's OAuth 2.0 token endpoint for service accounts (RFC 7523 JWT-bearer
 * grant). It checks what Google checks — an RS256 assertion signed by the service account's
 * key, issued by its email, for this endpoint as audience, asking for the firebase.messaging
 * scope, valid for at most an hour — and issues opaque access tokens the FCM stand-in accepts
 * (`isValid`). Anything wrong is answered 400 `invalid_grant` and recorded in `problems`.
 *
 * The dev stack mounts it at `/token` of its local FCM; the tests start it on its own port:
 *
 *   const account = createServiceAccount();
 *   const oauth = await startGoogleOAuth({ account });
 *   env.FCM_CREDENTIALS_JSON = account.keyFile(oauth.url);
 */
import { createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { jwtVerify } from 'jose';
import { z } from 'zod';
import { sendJson, startServer, type FakeRequest } from '../../simulator/loopback-server.js';

export const firebaseMessagingScope = 'https://www.googleapis.com/auth/firebase.messaging';

export interface ServiceAccount {
  readonly projectId: string;
  readonly clientEmail: string;
  readonly privateKeyId: string;
  readonly privateKeyPem: string;
  readonly publicKey: KeyObject;
  /** The key file as Google hands it out (the value of FCM_CREDENTIALS_JSON). */
  keyFile(tokenUri: string): string;
}

/** A fresh service account with its own RSA key. */
export function createServiceAccount(projectId = 'zippchat-test'): ServiceAccount {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return serviceAccount(
    projectId,
    `push@${projectId}.iam.gserviceaccount.com`,
    randomBytes(20).toString('hex'),
    privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  );
}

const keyFileSchema = z.object({ project_id: z.string(), client_email: z.string(), private_key_id: z.string(), private_key: z.string() });

/** The service account of a key file written earlier (the dev stack keeps one under `.dev/`). */
export function serviceAccountFromKeyFile(json: string): ServiceAccount {
  const file = keyFileSchema.parse(JSON.parse(json));
  return serviceAccount(file.project_id, file.client_email, file.private_key_id, file.private_key);
}

function serviceAccount(projectId: string, clientEmail: string, privateKeyId: string, privateKeyPem: string): ServiceAccount {
  return {
    projectId,
    clientEmail,
    privateKeyId,
    privateKeyPem,
    publicKey: createPublicKey(privateKeyPem),
    keyFile: (tokenUri) =>
      JSON.stringify({
        type: 'service_account',
        project_id: projectId,
        private_key_id: privateKeyId,
        private_key: privateKeyPem,
        client_email: clientEmail,
        client_id: '100000000000000000000',
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: tokenUri,
      }),
  };
}

export interface TokenRequestRecord {
  readonly at: Date;
  /** The access token issued, or undefined when the request was refused. */
  readonly issued: string | undefined;
  readonly problem: string | undefined;
}

/** A scripted answer for the next token request instead of a token. */
export interface OAuthAnswer {
  readonly status: number;
  readonly body?: unknown;
}

export interface GoogleOAuthState {
  readonly received: readonly TokenRequestRecord[];
  /** What was wrong with refused requests, in order. */
  readonly problems: readonly string[];
  /** Whether `token` was issued here and not revoked since. */
  isValid(token: string): boolean;
  /** Revokes every token issued so far (as if they had expired early). */
  revokeAll(): void;
  /** Answers the next requests with these, in order, instead of issuing tokens. */
  script(...answers: OAuthAnswer[]): void;
  /** Answers every request with this (after the scripted ones) until called with undefined: the endpoint is down. */
  answerAll(answer: OAuthAnswer | undefined): void;
}

export interface GoogleOAuthStandIn extends GoogleOAuthState {
  /** Answers one token request; `tokenUrl` is this endpoint's own URL (the assertion's audience). */
  handle(request: FakeRequest, response: ServerResponse, tokenUrl: string): Promise<void>;
}

export interface FakeGoogleOAuth extends GoogleOAuthState {
  /** The token endpoint: put it in the key file's `token_uri`. */
  readonly url: string;
  close(): Promise<void>;
}

export interface GoogleOAuthOptions {
  readonly account: ServiceAccount;
  /** `expires_in` of issued tokens (Google: 3599). */
  readonly expiresInSeconds?: number;
}

export function createGoogleOAuth(options: GoogleOAuthOptions): GoogleOAuthStandIn {
  const received: TokenRequestRecord[] = [];
  const problems: string[] = [];
  const valid = new Set<string>();
  const scripted: OAuthAnswer[] = [];
  let always: OAuthAnswer | undefined;
  return {
    received,
    problems,
    isValid: (token) => valid.has(token),
    revokeAll: () => valid.clear(),
    script: (...answers) => void scripted.push(...answers),
    answerAll: (answer) => void (always = answer),
    async handle(request, response, tokenUrl) {
      const problem = await checkTokenRequest(request, options.account, tokenUrl);
      if (problem !== undefined) {
        problems.push(problem);
        received.push({ at: new Date(), issued: undefined, problem });
        return sendJson(response, 400, { error: 'invalid_grant', error_description: problem });
      }
      const answer = scripted.shift() ?? always;
      if (answer !== undefined) {
        received.push({ at: new Date(), issued: undefined, problem: undefined });
        return sendJson(response, answer.status, answer.body ?? { error: 'scripted' });
      }
      const token = `ya29.fake-${randomBytes(24).toString('base64url')}`;
      valid.add(token);
      received.push({ at: new Date(), issued: token, problem: undefined });
      sendJson(response, 200, { access_token: token, expires_in: options.expiresInSeconds ?? 3599, token_type: 'Bearer' });
    },
  };
}

/** The token endpoint alone on a loopback port (tests). */
export async function startGoogleOAuth(options: GoogleOAuthOptions): Promise<FakeGoogleOAuth> {
  const standIn = createGoogleOAuth(options);
  let url = '';
  const server = await startServer((request, response) => standIn.handle(request, response, url));
  url = `${server.url}/token`;
  const { handle: _handle, ...state } = standIn;
  return { ...state, url, close: server.close };
}

/** Why Google would refuse this token request, or undefined when it is right. */
async function checkTokenRequest(request: FakeRequest, account: ServiceAccount, tokenUrl: string): Promise<string | undefined> {
  if (request.method !== 'POST') return `method ${request.method}, expected POST`;
  if (new URL(request.path, 'http://x').pathname !== '/token') return `path ${request.path}, expected /token`;
  if (!(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
    return 'body is not application/x-www-form-urlencoded';
  const form = new URLSearchParams(request.body.toString('utf8'));
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return `grant_type ${form.get('grant_type')}`;
  const assertion = form.get('assertion');
  if (assertion === null) return 'no assertion';
  try {
    const { payload } = await jwtVerify(assertion, account.publicKey, {
      algorithms: ['RS256'],
      issuer: account.clientEmail,
      audience: tokenUrl,
      requiredClaims: ['iat', 'exp', 'scope'],
    });
    const scopes = String(payload.scope).split(' ');
    if (!scopes.includes(firebaseMessagingScope)) return `scope "${String(payload.scope)}" lacks firebase.messaging`;
    if ((payload.exp ?? 0) - (payload.iat ?? 0) > 3600) return 'assertion valid for more than an hour';
  } catch (error) {
    return `assertion rejected: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}
