/**
 * Processes: `kill -9` of an api, a worker and a bridge replica — one at a time, each
 * twice, at seeded points of a fan-out — and a restart of each, while two replicas of every
 * process run. Afterwards every device has been woken for what was pending, every published
 * event is accounted for, and duplicate wakes stay within the bound (verdict.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultStack, type AppKind, type FaultStack } from '../support/fault-stack.js';
import { scenarioSeed, seededRandom, type Random } from './random.js';
import { runScenario, scenarioEnv, type Fault, type FaultHooks } from './scenario.js';

const events = 140;

let stack: FaultStack;
beforeAll(async () => {
  stack = await startFaultStack({ apps: { api: 2, worker: 2, bridge: 2 }, env: scenarioEnv });
});
afterAll(async () => {
  await stack?.close();
});

/**
 * Each kind twice, in a seeded order, at seeded events, down a seeded while; api and bridge
 * replicas seeded too. A worker is killed the moment one of its claims commits — that worker
 * is then between the claim and its POST, or between the POST and the end of the workflow
 * task: the windows where a wake can be lost or sent twice.
 */
function kills(random: Random, hooks: FaultHooks): Fault[] {
  const kinds = random.shuffle<AppKind>(['worker', 'bridge', 'api', 'worker', 'bridge', 'api']);
  const points = kinds.map(() => random.int(3, events - 20)).sort((a, b) => a - b);
  return kinds.map((kind, i) => {
    const seeded = random.pick(stack.appsOf(kind)).name;
    const downMs = random.int(200, 1_500);
    return {
      atEvent: points[i]!,
      losesWorkflowTasks: kind === 'worker',
      label: kind === 'worker' ? `kill -9 the worker of the next claim, down ${downMs} ms` : `kill -9 ${seeded}, down ${downMs} ms`,
      async run(striking) {
        const claimer = kind === 'worker' ? await hooks.nextClaim() : undefined;
        const victim = claimer?.startsWith('worker-') ? claimer : seeded;
        striking();
        await stack.kill(victim);
        await new Promise((resolve) => setTimeout(resolve, downMs)); // the fault's length, not synchronisation
        await stack.start(victim);
        return `kill -9 ${victim}${claimer === victim ? ' as it sent a claimed wake' : ''}, down ${downMs} ms`;
      },
    };
  });
}

describe('kill -9 of api, worker and bridge replicas during a fan-out (two replicas of each)', () => {
  it('wakes every device for what was pending, loses no event, and duplicates only what retries explain', async () => {
    const random = seededRandom(scenarioSeed());
    console.log(`process kills: seed ${random.seed} (replay with FAULTS_SEED=${random.seed})`);
    const result = await runScenario({ stack, random, users: 30, events, paceMs: [80, 220], faults: kills });
    console.log(`process kills:\n${result.report}`);
    expect(result.faults).toHaveLength(6);
    expect(result.verdict.violations).toEqual([]);
    expect(result.verdict.resends).toBeLessThanOrEqual(result.verdict.resendBound);
    expect(result.verdict.rewakeDuplicates).toBeLessThanOrEqual(result.verdict.rewakeBound);
    expect(result.verdict.wakes).toBeGreaterThan(result.devices);
  });
});
