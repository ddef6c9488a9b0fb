/**
 * A fake Google OAuth 2.0 token endpoint for service accounts (RFC 7523 JWT-bearer grant),
 * on loopback. It checks what Google checks — an RS256 assertion signed by the service
 * account's key, issued by its email, for this endpoint as audience, asking for the
 * firebase.messaging scope, valid for at most an hour — and issues opaque access tokens the
 * fake FCM accepts (`isValid`). Anything wrong is answered 400 `invalid_grant` and recorded
 * in `problems`, so a test (or the live demo) can show what it was.
 *
 *   const account = createServiceAccount();
 *   const oauth = await startGoogleOAuth({ account });
 *   env.FCM_CREDENTIALS_JSON = account.keyFile(oauth.url);
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { jwtVerify } from 'jose';
import { sendJson, startServer, type FakeRequest } from './server.js';

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
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const clientEmail = `push@${projectId}.iam.gserviceaccount.com`;
  const privateKeyId = randomBytes(20).toString('hex');
  return {
    projectId,
    clientEmail,
    privateKeyId,
    privateKeyPem,
    publicKey,
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

export interface FakeGoogleOAuth {
  /** The token endpoint: put it in the key file's `token_uri`. */
  readonly url: string;
  readonly received: readonly TokenRequestRecord[];
  /** What was wrong with refused requests, in order. */
  readonly problems: readonly string[];
  /** Whether `token` was issued here and not revoked since. */
  isValid(token: string): boolean;
  /** Revokes every token issued so far (as if they had expired early). */
  revokeAll(): void;
  /** Answers the next requests with these, in order, instead of issuing tokens. */
  script(...answers: OAuthAnswer[]): void;
  close(): Promise<void>;
}

export interface GoogleOAuthOptions {
  readonly account: ServiceAccount;
  /** `expires_in` of issued tokens (Google: 3599). */
  readonly expiresInSeconds?: number;
}

export async function startGoogleOAuth(options: GoogleOAuthOptions): Promise<FakeGoogleOAuth> {
  const received: TokenRequestRecord[] = [];
  const problems: string[] = [];
  const valid = new Set<string>();
  const scripted: OAuthAnswer[] = [];
  let url = '';

  const server = await startServer(async (request, response) => {
    const problem = await checkTokenRequest(request, options.account, url);
    const answer = problem === undefined ? scripted.shift() : undefined;
    if (problem !== undefined) {
      problems.push(problem);
      received.push({ at: new Date(), issued: undefined, problem });
      return sendJson(response, 400, { error: 'invalid_grant', error_description: problem });
    }
    if (answer !== undefined) {
      received.push({ at: new Date(), issued: undefined, problem: undefined });
      return sendJson(response, answer.status, answer.body ?? { error: 'scripted' });
    }
    const token = `ya29.fake-${randomBytes(24).toString('base64url')}`;
    valid.add(token);
    received.push({ at: new Date(), issued: token, problem: undefined });
    sendJson(response, 200, { access_token: token, expires_in: options.expiresInSeconds ?? 3599, token_type: 'Bearer' });
  });
  url = `${server.url}/token`;

  return {
    url,
    received,
    problems,
    isValid: (token) => valid.has(token),
    revokeAll: () => valid.clear(),
    script: (...answers) => void scripted.push(...answers),
    close: server.close,
  };
}

/** Why Google would refuse this token request, or undefined when it is right. */
async function checkTokenRequest(request: FakeRequest, account: ServiceAccount, tokenUrl: string): Promise<string | undefined> {
  if (request.method !== 'POST') return `method ${request.method}, expected POST`;
  if (new URL(request.path, 'http://x').pathname !== '/token') return `path ${request.path}, expected /token`;
  if (!(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return 'body is not application/x-www-form-urlencoded';
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
