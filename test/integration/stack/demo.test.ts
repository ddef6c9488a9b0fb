/**
 * The live demonstration of `make dev`, run against the real api, worker (FCM through the
 * local stand-in) and bridge: it must show what it claims — each phone woken, draining
 * exactly its messages, showing what the table of docs/design.md, Recipients, says, and the denied and the muted
 * member getting nothing at all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDemoScenario, type RunningDemo } from '../../../simulator/demo/scenario.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { testJwtSecret } from '../../support/jwt.js';
import { productHarness, type ProductHarness } from './harness.js';

let db: TestDatabase;
let h: ProductHarness;
let demo: RunningDemo | undefined;
const output: string[] = [];

beforeAll(async () => {
  db = await freshDatabase();
  h = await productHarness(db);
});
afterAll(async () => {
  await demo?.stop();
  await h?.close();
  await db?.drop();
});

describe('the live demonstration', () => {
  it('runs end to end and reports what each phone received, drained and would show', async () => {
    demo = await runDemoScenario({
      apiUrl: h.api.url,
      pool: db.pool,
      temporal: h.client,
      namespace: 'default',
      nc: h.nc,
      subjectPrefix: h.subjectPrefix,
      jwtSecret: testJwtSecret,
      fcmStandInUrl: h.fcm.url,
      temporalUiUrl: 'http://ui.example:8233',
      write: (line) => void output.push(line),
    });
    const { report } = demo;
    const { mention, dm, burst } = report.messages;

    // bob (UnifiedPush, encrypted): the DM and all of #crew; shows the DM and the @everyone.
    expect(new Set(report.phones.bob.drained)).toEqual(new Set([mention, dm, ...burst]));
    expect(report.phones.bob.shown).toEqual([dm, burst[2]]);
    // carol (FCM): #crew only; shows the message mentioning her and the @everyone.
    expect(new Set(report.phones.carol.drained)).toEqual(new Set([mention, ...burst]));
    expect(report.phones.carol.shown).toEqual([mention, burst[2]]);
    // Round 2 came after round 1 was drained: a wake of its own (the three messages share one).
    expect(report.phones.bob.wakes).toBeGreaterThanOrEqual(2);
    expect(report.phones.carol.wakes).toBeGreaterThanOrEqual(2);

    // dave is denied #crew, erin muted it: no wake, nothing recorded, nothing sent by their workflows.
    expect(report.silent).toEqual({ dave: { wakes: 0, pendingRows: 0, workflowWakes: 0 }, erin: { wakes: 0, pendingRows: 0, workflowWakes: 0 } });

    const text = output.join('\n');
    expect(text).toMatch(
      /bob +← wake via UnifiedPush, Urgency high, 123-byte RFC 8291 record, decrypted with the phone's key: \{"v":"1","t":"wake"\}/,
    );
    expect(text).toMatch(/carol +← wake via FCM, priority NORMAL, data \{"v":"1","t":"wake"\}/);
    expect(text).toContain('drain → #crew: 3 messages');
    expect(text).toMatch(/wake → drain \d+ ms; message → drain \d+\.\d s/);
    expect(text).toContain('the push service never has plaintext');
    expect(report.webUi.bob).toBe(
      `http://ui.example:8233/namespaces/default/workflows/${encodeURIComponent(`push-device:${report.world.users.bob}:${report.deviceIds.bob}`)}`,
    );
    expect(text).toContain(report.webUi.erin);
    expect(text).toMatch(/Demonstration done in \d+\.\d s\./);
  });

  it('prints no push token or endpoint path, only the distributor and stand-in origins', async () => {
    const secrets = h.fcm.fcm.received.map((r) => r.token).filter((t): t is string => t !== undefined);
    expect(secrets.length).toBeGreaterThan(0);
    const text = output.join('\n');
    for (const token of secrets) expect(text).not.toContain(token);
    expect(text).not.toMatch(/\/up\/[A-Za-z0-9_-]{8,}/);
  });
});
