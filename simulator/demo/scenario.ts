/**
 * The live demonstration `make dev` ends with, against a running api, worker and bridge:
 * a small world in the host tables, four simulated Android phones, messages published as
 * NATS events, and what each phone receives, drains and would show. Two rounds:
 *
 *   1. alice writes in #crew (mentioning carol) and DMs bob: bob (UnifiedPush, encrypted) and
 *      carol (FCM) are woken; dave (denied #crew) and erin (muted #crew) get nothing.
 *   2. alice sends three quick messages in #crew, inside both phones' 15 s minimum interval:
 *      each phone gets one wake for all three when its interval ends.
 *
 * Returns what happened, so the test suite can hold the demo to it.
 */
import type { Client } from '@temporalio/client';
import type { NatsConnection } from '@nats-io/transport-node';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool.js';
import { waitFor } from '../../devstack/daemons.js';
import { registrationWorkflowId } from '../../temporal/names.js';
import { stateQuery } from '../../temporal/registration-messages.js';
import { webUiLink } from '../../src/admin/device-report.js';
import { deviceApi } from '../api-client.js';
import { signDeviceJwt } from '../dev-token.js';
import { startDistributor, type LocalDistributor } from '../distributor.js';
import { fcmSource } from '../fcm-source.js';
import { simulatedPhone } from '../phone.js';
import { unifiedPushSource } from '../unifiedpush-source.js';
import { DemoPhone } from './demo-phone.js';
import { createDemoWorld, demoPeople, idGenerator, removeEarlierDemoWorlds, type DemoPerson, type DemoWorld } from './host-world.js';
import { messagePublisher, PlaintextStore, type MessagePublisher } from './messages.js';
import { demoOutput, type DemoOutput } from './output.js';
import { withTimeout } from '../../src/async/with-timeout.js';

export interface DemoDeps {
  readonly apiUrl: string;
  readonly pool: DatabasePool;
  readonly temporal: Client;
  readonly namespace: string;
  readonly nc: NatsConnection;
  /** '' in production; tests give their bridge a prefix of its own. */
  readonly subjectPrefix?: string;
  readonly jwtSecret: string;
  /** The local FCM stand-in the worker's FCM_ENDPOINT points at; undefined when the FCM in force is another (the phones then use UnifiedPush). */
  readonly fcmStandInUrl: string | undefined;
  readonly temporalUiUrl: string | undefined;
  readonly write: (line: string) => void;
  /** How long one phone may take to receive and drain a round's messages. */
  readonly roundTimeoutMs?: number;
}

export interface SilentPhoneReport {
  readonly wakes: number;
  readonly pendingRows: number;
  /** Wakes its workflow sent this run, from the `state` query (undefined if it did not answer). */
  readonly workflowWakes: number | undefined;
}

export interface DemoReport {
  readonly world: DemoWorld;
  readonly deviceIds: Readonly<Record<Exclude<DemoPerson, 'alice'>, string>>;
  readonly phones: Readonly<
    Record<'bob' | 'carol', { readonly wakes: number; readonly drained: readonly string[]; readonly shown: readonly string[] }>
  >;
  readonly silent: Readonly<Record<'dave' | 'erin', SilentPhoneReport>>;
  readonly webUi: Readonly<Record<string, string | undefined>>;
  /** The ids of the messages published: round 1 (`mention`, `dm`), round 2 (`burst`). */
  readonly messages: { readonly mention: string; readonly dm: string; readonly burst: readonly string[] };
  readonly durationMs: number;
}

export interface RunningDemo {
  readonly report: DemoReport;
  /** The phones keep listening (and printing) until stopped; their registrations stay. */
  stop(): Promise<void>;
}

type Phoned = Exclude<DemoPerson, 'alice'>;
const transports: Readonly<Record<Phoned, { transport: 'unifiedpush' | 'fcm'; label: string }>> = {
  bob: { transport: 'unifiedpush', label: 'UnifiedPush with RFC 8291 keys' },
  carol: { transport: 'fcm', label: 'FCM' },
  dave: { transport: 'unifiedpush', label: 'UnifiedPush with RFC 8291 keys' },
  erin: { transport: 'fcm', label: 'FCM' },
};

export async function runDemoScenario(deps: DemoDeps): Promise<RunningDemo> {
  const out = demoOutput(deps.write);
  const nextId = idGenerator();
  out.line('━━ Live demonstration ━━ real api, worker, bridge, PostgreSQL, NATS JetStream and Temporal; simulated Android phones');
  const removed = await removeEarlierDemoWorlds(deps.pool, deps.temporal);
  const deviceIds = Object.fromEntries((['bob', 'carol', 'dave', 'erin'] as const).map((p) => [p, `${p}-pixel-${nextId().slice(-4)}`])) as Record<
    Phoned,
    string
  >;
  const world = await createDemoWorld(deps.pool, nextId, { alice: 'alice-laptop', ...deviceIds });
  describeWorld(out, world, removed);
  const store = new PlaintextStore();
  const distributor = await startDistributor();
  const phones = await startPhones(deps, out, world, deviceIds, store, distributor);
  const webUi = Object.fromEntries(
    (['bob', 'carol', 'dave', 'erin'] as const).map((p) => [
      p,
      webUiLink(deps.temporalUiUrl, deps.namespace, registrationWorkflowId(world.users[p], deviceIds[p])),
    ]),
  );
  const stop = async () => {
    await Promise.all(Object.values(phones).map((phone) => phone.close()));
    await distributor.close();
  };
  try {
    const publisher = messagePublisher(deps.nc, store, nextId, deps.subjectPrefix);
    const timeout = deps.roundTimeoutMs ?? 45_000;
    const { mention, dm } = await roundOne(deps.pool, out, world, publisher, phones, timeout);
    const burst = await roundTwo(out, world, publisher, phones, timeout);
    const silent = { dave: await silence(deps, world, deviceIds, phones, 'dave'), erin: await silence(deps, world, deviceIds, phones, 'erin') };
    reportSilence(out, silent);
    out.line();
    out.line('Each phone is one Temporal workflow (signals, durable timers, the `state` query):');
    for (const person of ['bob', 'carol', 'dave', 'erin'] as const)
      out.line(`  ${person.padEnd(6)} ${webUi[person] ?? registrationWorkflowId(world.users[person], deviceIds[person])}`);
    const report: DemoReport = {
      world,
      deviceIds,
      phones: { bob: summary(phones.bob), carol: summary(phones.carol) },
      silent,
      webUi,
      messages: { mention, dm, burst },
      durationMs: out.elapsedMs(),
    };
    out.line(`Demonstration done in ${(report.durationMs / 1000).toFixed(1)} s.`);
    return { report, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function describeWorld(out: DemoOutput, world: DemoWorld, removed: number): void {
  out.line(
    `Host data, written straight into the dev database (the chat server owns these tables in production)${removed > 0 ? `; the previous demo's ${removed} registration(s) removed first` : ''}:`,
  );
  out.line(`  users    ${demoPeople.map((p) => `${p} ${world.users[p]}`).join(', ')}`);
  out.line('  server   "Zipp HQ" (owner alice; @everyone may view channels); role "crew": bob, carol, erin');
  out.line(
    `  #crew    ${world.crewChannelId}: overwrites deny @everyone VIEW_CHANNEL and allow crew — dave is a member of Zipp HQ but may not see it`,
  );
  out.line(`  DM       ${world.dmChannelId}: alice ↔ bob;   mute: erin muted #crew`);
  out.line('Message text lives only in a local stand-in of what each phone fetches and decrypts itself: the push service never has plaintext.');
  out.line();
}

async function startPhones(
  deps: DemoDeps,
  out: DemoOutput,
  world: DemoWorld,
  deviceIds: Readonly<Record<Phoned, string>>,
  store: PlaintextStore,
  distributor: LocalDistributor,
): Promise<Record<Phoned, DemoPhone>> {
  const names = new Map(demoPeople.map((p) => [world.users[p], p]));
  const fcmEnabled = deps.fcmStandInUrl !== undefined && (await deviceApi(deps.apiUrl, await jwtFor(deps, world, deviceIds, 'bob')).config()).fcm;
  const phones = {} as Record<Phoned, DemoPhone>;
  for (const person of ['bob', 'carol', 'dave', 'erin'] as const) {
    const { transport, label } = fcmEnabled ? transports[person] : transports.bob;
    const source = transport === 'fcm' && deps.fcmStandInUrl !== undefined ? await fcmSource(deps.fcmStandInUrl) : unifiedPushSource(distributor);
    const phone = simulatedPhone({ apiUrl: deps.apiUrl, jwt: await jwtFor(deps, world, deviceIds, person), source });
    await phone.register();
    phones[person] = new DemoPhone(phone, {
      name: person,
      userId: world.users[person],
      store,
      names,
      channelNames: world.channelNames,
      isMuted: (userId, channelId) => world.mutes.has(`${userId}:${channelId}`),
      out,
    });
    out.event(person, `phone ${deviceIds[person]} registered: ${label} — ${source.description}`);
  }
  return phones;
}

function jwtFor(deps: DemoDeps, world: DemoWorld, deviceIds: Readonly<Record<Phoned, string>>, person: Phoned): Promise<string> {
  return signDeviceJwt({ secret: deps.jwtSecret, userId: world.users[person], deviceId: deviceIds[person] });
}

async function roundOne(
  pool: DatabasePool,
  out: DemoOutput,
  world: DemoWorld,
  publisher: MessagePublisher,
  phones: Record<Phoned, DemoPhone>,
  timeoutMs: number,
): Promise<{ mention: string; dm: string }> {
  out.line();
  out.line('Round 1 — alice DMs bob and posts in #crew (mentioning carol); each is a JetStream publish on channel.<id>.MESSAGE_CREATE');
  const dm = await publisher.post(world.dmChannelId, world.users.alice, 'Lunch at 1?');
  out.event('alice', `→ DM bob  message ${dm.id}`);
  // The DM is recorded before #crew is posted, so whichever wakes bob first carries the DM's
  // high priority (bob is in #crew too; the other order would race the two events).
  await recorded(pool, dm.id, timeoutMs);
  const crew = await publisher.post(world.crewChannelId, world.users.alice, `Deploy is done — <@${world.users.carol}> can you check the dashboards?`);
  out.event('alice', `→ #crew   message ${crew.id}`);
  await Promise.all([phones.bob.drainedAll([crew.id, dm.id], timeoutMs), phones.carol.drainedAll([crew.id], timeoutMs)]);
  return { mention: crew.id, dm: dm.id };
}

/** Waits until the bridge has recorded the message (its exactly-once ledger). */
async function recorded(pool: DatabasePool, messageId: string, timeoutMs: number): Promise<void> {
  await waitFor(
    `message ${messageId} recorded`,
    async () => (await pool.exists(sql.unsafe`SELECT 1 FROM push_processed_events WHERE message_id = ${messageId}`)) || undefined,
    timeoutMs,
  );
}

async function roundTwo(
  out: DemoOutput,
  world: DemoWorld,
  publisher: MessagePublisher,
  phones: Record<Phoned, DemoPhone>,
  timeoutMs: number,
): Promise<string[]> {
  out.line();
  out.line("Round 2 — three quick messages in #crew, inside bob's and carol's 15 s minimum interval: held, not lost, one wake each when it ends");
  const ids: string[] = [];
  for (const text of ['Retro moved to 4 pm', 'Agenda is in the doc', '@everyone please be on time']) {
    const message = await publisher.post(world.crewChannelId, world.users.alice, text);
    ids.push(message.id);
    out.event('alice', `→ #crew   message ${message.id}`);
  }
  await Promise.all([phones.bob.drainedAll(ids, timeoutMs), phones.carol.drainedAll(ids, timeoutMs)]);
  return ids;
}

const pendingCount = z.object({ count: z.number() });

async function silence(
  deps: DemoDeps,
  world: DemoWorld,
  deviceIds: Readonly<Record<Phoned, string>>,
  phones: Record<Phoned, DemoPhone>,
  person: 'dave' | 'erin',
): Promise<SilentPhoneReport> {
  const [userId, deviceId] = [world.users[person], deviceIds[person]];
  const pendingRows = await deps.pool.oneFirst(sql.type(pendingCount)`
    SELECT count(*)::int AS count FROM push_pending p JOIN push_registrations r ON r.id = p.registration_id
    WHERE r.user_id = ${userId} AND r.device_id = ${deviceId}`);
  const state = await withTimeout(deps.temporal.workflow.getHandle(registrationWorkflowId(userId, deviceId)).query(stateQuery), 5_000).catch(
    () => undefined,
  );
  return { wakes: phones[person].handled.length, pendingRows, workflowWakes: state?.wakesThisRun };
}

function reportSilence(out: DemoOutput, silent: DemoReport['silent']): void {
  out.line();
  out.line('Who got nothing, and why:');
  const line = (s: SilentPhoneReport) => `${s.wakes} wake(s), ${s.pendingRows} pending row(s), workflow sent ${s.workflowWakes ?? '?'} wake(s)`;
  out.event(
    'dave',
    `${line(silent.dave)} — denied VIEW_CHANNEL on #crew: the bridge never records #crew for him, so no wake and no drain can reveal that #crew exists`,
  );
  out.event('erin', `${line(silent.erin)} — muted #crew: a muted channel never wakes the phone at all (the battery win of muting server-side)`);
}

function summary(phone: DemoPhone): { wakes: number; drained: string[]; shown: string[] } {
  const shown = phone.handled.flatMap((h) => h.decisions.filter((d) => d.decision.notify).map((d) => d.message.id));
  return { wakes: phone.handled.length, drained: [...phone.drainedIds], shown };
}
