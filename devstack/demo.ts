/**
 * The live demonstration `make dev` ends with: the demo scenario (simulator/demo/) against
 * the stack just started, then how to try things yourself. The demo's phones keep listening
 * afterwards, so a message you publish to them shows up in this terminal too.
 */
import { Client, Connection } from '@temporalio/client';
import { connect } from '@nats-io/transport-node';
import path from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { createDatabasePool } from '../src/db/pool.js';
import { temporalConnectionOptions } from '../temporal/connection.js';
import { projectRoot } from '../src/process/paths.js';
import { myPhone } from '../simulator/demo/host-world.js';
import { runDemoScenario, type DemoReport } from '../simulator/demo/scenario.js';
import type { StackInfo } from './stack.js';

export async function runDemo(info: StackInfo): Promise<void> {
  const write = (line: string) => process.stdout.write(`${line}\n`);
  // The stack's environment as the processes read it (secrets may be files, Temporal may want TLS).
  const api = loadConfig('api', info.env);
  if (api.jwt.key.kind !== 'secret') {
    write("\nNo demonstration: it signs its phones' tokens with JWT_SECRET, and the JWT key in force is a public key.");
    return;
  }
  const jwtSecret = new TextDecoder().decode(api.jwt.key.key);
  const pool = await createDatabasePool(api.databaseUrl, { maximumPoolSize: 2 });
  const nc = await connect({ servers: info.env.NATS_URL!, name: 'zippchat-demo' });
  const connection = await Connection.connect(temporalConnectionOptions(api.temporal));
  try {
    const demo = await runDemoScenario({
      apiUrl: info.urls.api,
      pool,
      temporal: new Client({ connection }),
      namespace: api.temporal.namespace,
      nc,
      jwtSecret,
      fcmStandInUrl: info.urls.fcmStandIn,
      temporalUiUrl: info.urls.temporalUi || undefined,
      write,
    });
    tryItYourself(info, demo.report).forEach(write);
    // demo.stop() is left to the end of the process: the phones keep listening while the stack serves.
  } catch (error) {
    write(`\nThe demonstration failed: ${error instanceof Error ? error.message : String(error)}`);
    write(`The stack keeps running; the logs below and in ${path.relative(projectRoot, path.join(info.dir, 'logs'))} say more.`);
  } finally {
    await nc.drain();
    await connection.close();
    await pool.end();
  }
}

function tryItYourself(info: StackInfo, report: DemoReport): string[] {
  const env = path.relative(projectRoot, path.join(info.dir, 'env'));
  const secret = path.relative(projectRoot, path.join(info.dir, 'jwt-secret'));
  const { users, dmChannelId, crewChannelId } = report.world;
  return [
    '',
    'Try it yourself, in another terminal:',
    `  . ${env}`,
    `  npm run -s push-admin -- device ${users.bob} ${report.deviceIds.bob}        # bob's phone: registration (no secrets), pending, workflow state, Web UI link`,
    '  npm run -s push-admin -- count                                         # registrations by transport',
    `  npm run -s simulate-device -- --api "$API_URL" --jwt-secret-file ${secret} --user ${users.carol} --device ${myPhone}`,
    `  npm run -s demo-say -- --nats "$NATS_URL" --channel ${crewChannelId} --author ${users.alice} 'hello <@${users.carol}>'`,
    `  (DM alice → bob: --channel ${dmChannelId}; --transport fcm --fcm-stand-in "$FCM_ENDPOINT" simulates an FCM phone)`,
    '',
  ];
}
