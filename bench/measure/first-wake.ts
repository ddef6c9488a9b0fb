/**
 * A channel message's first wake against the engine's, sampled: a single fan-out's first wake
 * is one sample, and the engine's own first no-op swings threefold from one run to the next on
 * two shared cores, so a ratio of two single samples says little. Here many small channels'
 * messages, one at a time on a quiet stack, against as many rounds of the engine ceiling's
 * signal-with-starts (fan-out.ts): the medians and the slow tail of each.
 *
 * Per engine: the dev server (section `first-wake`) or the real Temporal server
 * (`first-wake-server`).
 */
import { jetstream } from '@nats-io/jetstream';
import { sql } from 'slonik';
import { forkHelper, type Helper } from '../children/ipc.js';
import type { DistributorTap } from '../distributor-tap.js';
import type { Report } from '../report.js';
import { insertRegistrations, messageEvent, seedServer, type ServerWorld } from '../seed.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import type { BenchStack, TemporalEngine } from '../stack.js';
import { quantile, sleep } from '../stats.js';
import { signalConcurrency, startCeilingWorkflows } from './fan-out.js';

/** Between two samples: the previous one's workflow tasks are done, and the stack is quiet. */
const quietMs = 300;
/** A sample that has not woken all its members by then fails the measurement. */
const sampleDeadlineMs = 30_000;

const sectionId: Readonly<Record<TemporalEngine, string>> = { 'dev-server': 'first-wake', server: 'first-wake-server' };
const sectionTitle: Readonly<Record<TemporalEngine, string>> = {
  'dev-server': "A channel message's first wake, sampled, against the engine's",
  server: "A channel message's first wake on the real Temporal server, sampled, against the engine's",
};

export async function measureFirstWake(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const { samples, members } = settings.firstWake;
  const section = report.section(sectionId[stack.engine], sectionTitle[stack.engine]);
  section.setup.push(setupProse('first-wake', { samples, members, quietMs, signalConcurrency }));
  // One more world than samples: the first warms each side up (first activations load code).
  const worlds: ServerWorld[] = [];
  for (let i = 0; i <= samples; i++) {
    const world = await seedServer(stack.pool, { members, channels: 1, distributor: tap.distributor });
    await insertRegistrations(stack.pool, world.devices);
    worlds.push(world);
  }
  await stack.pool.query(sql.unsafe`VACUUM ANALYZE`);

  const ours = await runOurs(stack, tap, worlds);
  const ceiling = await runCeiling(stack, samples + 1, members);
  const counted = { ours: ours.slice(1), ceiling: ceiling.slice(1) };
  process.stdout.write(`  ours: ${describe(counted.ours)}\n  ceiling: ${describe(counted.ceiling)}\n`);
  const name = (what: string) => `a ${members}-member channel: message → first wake, ${what} of ${samples} messages`;
  for (const [what, q] of [
    ['median', 0.5],
    ['p90', 0.9],
  ] as const) {
    report.figure(section, {
      name: name(what),
      value: quantile(counted.ours, q) / 1000,
      unit: 's',
      reference: {
        name: `engine ceiling: the same of ${samples} rounds of ${members} signal-with-starts`,
        value: quantile(counted.ceiling, q) / 1000,
      },
      ...(what === 'median' ? { headline: stack.engine === 'server' ? 'first wake (real server)' : 'first wake' } : {}),
    });
  }
  Object.assign(section.details, { members, samples, oursMs: counted.ours, ceilingMs: counted.ceiling });
}

/** The product's bridge and worker: one message per world, one at a time; ms from publishing to the world's first wake. */
async function runOurs(stack: BenchStack, tap: DistributorTap, worlds: readonly ServerWorld[]): Promise<number[]> {
  const apps = await stack.startApps({ label: 'first-wake', taskQueue: 'bench-first-wake', apps: ['worker', 'bridge'] });
  const firsts: number[] = [];
  try {
    for (const world of worlds) {
      const endpoints = new Set(world.devices.map((d) => d.endpoint));
      const offsets: number[] = [];
      const started = Date.now();
      tap.listen((message) => {
        if (endpoints.has(message.endpoint)) offsets.push(Date.now() - started);
      });
      const message = messageEvent(world.channelIds[0]!, world.ownerId);
      await jetstream(stack.nats).publish(`channel.${world.channelIds[0]}.MESSAGE_CREATE`, message.body, { msgID: `message-${message.id}` });
      await waitUntil(
        () => offsets.length >= endpoints.size,
        () => `ours: ${offsets.length} of ${endpoints.size} wakes`,
      );
      tap.listen(undefined);
      firsts.push(Math.min(...offsets));
      await sleep(quietMs);
    }
  } finally {
    tap.listen(undefined);
    await apps.stop();
    await stack.pool.query(sql.unsafe`DELETE FROM push_signal_outbox`);
  }
  return firsts;
}

/** The engine ceiling's rounds: `members` signal-with-starts each, `signalConcurrency` at a time; ms to the round's first no-op. */
async function runCeiling(stack: BenchStack, rounds: number, members: number): Promise<number[]> {
  const helper: Helper = forkHelper(stack.dir, 'ceiling-worker');
  const firsts: number[] = [];
  try {
    await helper.call('start', { temporalEnv: stack.temporalEnv, taskQueue: 'bench-first-wake-ceiling' });
    for (let round = 0; round < rounds; round++) {
      await helper.call('take');
      const ids = Array.from({ length: members }, (_, i) => `bench-first-wake-ceiling:${round}:${i}`);
      const started = Date.now();
      await startCeilingWorkflows(stack, 'bench-first-wake-ceiling', ids);
      await waitUntil(
        async () => (await helper.call<number>('count')) >= members,
        () => `ceiling round ${round}`,
      );
      const times = await helper.call<number[]>('take');
      firsts.push(Math.min(...times) - started);
      await sleep(quietMs);
    }
  } finally {
    await helper.stop();
  }
  return firsts;
}

async function waitUntil(done: () => boolean | Promise<boolean>, what: () => string): Promise<void> {
  const deadline = Date.now() + sampleDeadlineMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`first wake: not done within ${sampleDeadlineMs / 1000} s (${what()})`);
    await sleep(10);
  }
}

function describe(ms: readonly number[]): string {
  return `median ${quantile(ms, 0.5).toFixed(0)} ms, p90 ${quantile(ms, 0.9).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms`;
}
