/**
 * The dev stack's local FCM: Google's OAuth token endpoint, the FCM HTTP v1 endpoint and the
 * simulated phones' side, on one loopback port, for one service account:
 *
 *   POST /token                                   OAuth (the key file's token_uri)
 *   POST /v1/projects/<project>/messages:send     FCM (FCM_ENDPOINT is this server's URL)
 *   POST /_device/register, /_device/wakes         simulated phones (fcm-inbox.ts)
 *
 * Tokens it did not mint are answered UNREGISTERED, so the instance prunes them as it would
 * in production.
 */
import { startServer } from '../../simulator/loopback-server.js';
import { createFcmStandIn, type FcmStandIn } from './fcm.js';
import { createGoogleOAuth, type GoogleOAuthStandIn, type ServiceAccount } from './google-oauth.js';

export interface LocalFcm {
  /** The FCM_ENDPOINT to configure, and where simulated phones fetch their wakes. */
  readonly url: string;
  /** The token endpoint (the key file's `token_uri`). */
  readonly tokenUrl: string;
  readonly fcm: FcmStandIn;
  readonly oauth: GoogleOAuthStandIn;
  close(): Promise<void>;
}

export async function startLocalFcm(options: {
  readonly account: ServiceAccount;
  readonly host?: string;
  readonly port?: number;
}): Promise<LocalFcm> {
  const oauth = createGoogleOAuth({ account: options.account });
  const fcm = createFcmStandIn({ projectId: options.account.projectId, isAuthorized: oauth.isValid, knownTokensOnly: true });
  let tokenUrl = '';
  const server = await startServer(
    async (request, response) => {
      const path = new URL(request.path, 'http://x').pathname;
      if (path === '/token') return oauth.handle(request, response, tokenUrl);
      if (fcm.inbox.handle(request, response)) return;
      fcm.handle(request, response);
    },
    options.host ?? '127.0.0.1',
    options.port ?? 0,
  );
  tokenUrl = `${server.url}/token`;
  return {
    url: server.url,
    tokenUrl,
    fcm,
    oauth,
    async close() {
      fcm.inbox.close();
      await server.close();
    },
  };
}
