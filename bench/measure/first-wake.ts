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
import { sql } from 'slonik';
import { forkHelper } from '../children/ipc.js';
import type { DistributorTap } from '../distributor-tap.js';
import type { Report } from '../report.js';
import { insertRegistrations, seedServer, type ServerWorld } from '../seed.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import type { BenchStack, TemporalEngine } from '../stack.js';
import { quantile, sleep } from '../stats.js';
import { runCeiling, runOurs as runFanOut, signalConcurrency, type Arrivals } from './fan-out.js';

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
  const ceiling = await runCeilingRounds(stack, samples + 1, members);
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

/** The product's bridge and worker (fan-out.ts's side): one message per world, one at a time; ms from publishing to the world's first wake. */
async function runOurs(stack: BenchStack, tap: DistributorTap, worlds: readonly ServerWorld[]): Promise<number[]> {
  const apps = await stack.startApps({ label: 'first-wake', taskQueue: 'bench-first-wake', apps: ['worker', 'bridge'] });
  const firsts: number[] = [];
  try {
    for (const world of worlds) {
      firsts.push(first(await runFanOut(stack, tap, world, sampleDeadlineMs), 'ours'));
      await sleep(quietMs);
    }
  } finally {
    await apps.stop();
    await stack.pool.query(sql.unsafe`DELETE FROM push_signal_outbox`);
  }
  return firsts;
}

/** The engine ceiling's rounds (fan-out.ts's): `members` signal-with-starts each; ms to the round's first no-op. */
async function runCeilingRounds(stack: BenchStack, rounds: number, members: number): Promise<number[]> {
  const helper = forkHelper(stack.dir, 'ceiling-worker');
  const firsts: number[] = [];
  try {
    await helper.call('start', { temporalEnv: stack.temporalEnv, taskQueue: 'bench-ceiling' });
    for (let round = 0; round < rounds; round++) {
      const { arrivals } = await runCeiling(stack, helper, `first-wake-${round}`, members, sampleDeadlineMs);
      firsts.push(first(arrivals, 'the ceiling'));
      await sleep(quietMs);
    }
  } finally {
    await helper.stop();
  }
  return firsts;
}

/** A sample's first arrival; a sample that did not complete fails the measurement. */
function first(arrivals: Arrivals, who: string): number {
  if (!arrivals.completed)
    throw new Error(`first wake: ${who} had ${arrivals.offsets.length} of ${arrivals.expected} wakes within ${sampleDeadlineMs / 1000} s`);
  return arrivals.offsets[0]!;
}

function describe(ms: readonly number[]): string {
  return `median ${quantile(ms, 0.5).toFixed(0)} ms, p90 ${quantile(ms, 0.9).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms`;
}
