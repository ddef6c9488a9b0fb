/**
 * The fake Google OAuth 2.0 token endpoint of the tests is the dev stack's stand-in
 * (src/dev/stand-ins/google-oauth.ts) on its own loopback port.
 *
 *   const account = createServiceAccount();
 *   const oauth = await startGoogleOAuth({ account });
 *   env.FCM_CREDENTIALS_JSON = account.keyFile(oauth.url);
 */
export {
  createServiceAccount,
  firebaseMessagingScope,
  startGoogleOAuth,
  type FakeGoogleOAuth,
  type GoogleOAuthOptions,
  type OAuthAnswer,
  type ServiceAccount,
  type TokenRequestRecord,
} from '../../../src/dev/stand-ins/google-oauth.js';
