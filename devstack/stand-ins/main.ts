/**
 * `node dist-tools/devstack/stand-ins/main.js --port P --key-file F`: the dev stack's local FCM as
 * a process of its own (the stack starts it before the worker, whose FCM_ENDPOINT and
 * FCM_CREDENTIALS_JSON point here). Logs one JSON line per send — never the token.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { serviceAccountFromKeyFile } from './google-oauth.js';
import { startLocalFcm } from './local-fcm.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { port: { type: 'string' }, host: { type: 'string', default: '127.0.0.1' }, 'key-file': { type: 'string' } },
  });
  if (values.port === undefined || values['key-file'] === undefined) throw new Error('usage: main --port P --key-file F [--host H]');
  const account = serviceAccountFromKeyFile(readFileSync(values['key-file'], 'utf8'));
  const local = await startLocalFcm({ account, host: values.host, port: Number(values.port) });
  const line = (fields: Record<string, unknown>) =>
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), service: 'fcm-stand-in', ...fields })}\n`);
  line({ msg: 'local FCM listening', url: local.url, project: account.projectId });
  let seen = 0;
  const report = setInterval(() => {
    for (const record of local.fcm.received.slice(seen))
      line({ msg: 'FCM send', status: record.answered, priority: record.priority, bytes: record.bodyBytes });
    seen = local.fcm.received.length;
  }, 250);
  const stop = () => {
    clearInterval(report);
    void local.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`fcm-stand-in: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
