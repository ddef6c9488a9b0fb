/**
 * Services: NATS, PostgreSQL and the Temporal dev server each stopped and started
 * again (same data directory, same port) at seeded points of a fan-out, one at a time, while
 * two replicas of every process keep running. Nothing is restarted by hand: the processes
 * must ride out each outage. Afterwards every device has been woken for what was pending,
 * every published event is accounted for, and duplicate wakes stay within the bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultStack, type BackingService, type FaultStack } from '../support/fault-stack.js';
import { scenarioSeed, seededRandom, type Random } from './random.js';
import { runScenario, scenarioEnv, type Fault } from './scenario.js';

const events = 120;

let stack: FaultStack;
beforeAll(async () => {
  stack = await startFaultStack({ apps: { api: 2, worker: 2, bridge: 2 }, env: scenarioEnv });
});
afterAll(async () => {
  await stack?.close();
});

/** Each service once, in a seeded order, at seeded events, down a seeded while. */
function restarts(random: Random): Fault[] {
  const services = random.shuffle<BackingService>(['nats', 'postgres', 'temporal']);
  const points = services.map(() => random.int(5, events - 30)).sort((a, b) => a - b);
  return services.map((service, i) => {
    const downMs = random.int(500, 3_000);
    return {
      atEvent: points[i]!,
      losesWorkflowTasks: service === 'temporal',
      label: `restart ${service}, down ${downMs} ms`,
      async run(striking) {
        striking();
        await stack.stopService(service);
        await new Promise((resolve) => setTimeout(resolve, downMs)); // the outage's length, not synchronisation
        await stack.startService(service);
      },
    };
  });
}

describe('restarts of NATS, PostgreSQL and Temporal while events flow (two replicas of each process)', () => {
  it('every process rides out each outage; every device is woken, no event is lost, duplicates stay within the bound', async () => {
    const random = seededRandom(scenarioSeed());
    console.log(`service restarts: seed ${random.seed} (replay with FAULTS_SEED=${random.seed})`);
    const result = await runScenario({ stack, random, users: 30, events, paceMs: [80, 220], faults: restarts });
    console.log(`service restarts:\n${result.report}`);
    expect(result.faults).toHaveLength(3);
    for (const app of stack.apps) expect(stack.isRunning(app.name), `${app.name} exited:\n${stack.logTail(app.name)}`).toBe(true);
    expect(result.verdict.violations).toEqual([]);
    expect(result.verdict.resends).toBeLessThanOrEqual(result.verdict.resendBound);
    expect(result.verdict.rewakeDuplicates).toBeLessThanOrEqual(result.verdict.rewakeBound);
    expect(result.verdict.wakes).toBeGreaterThan(result.devices);
  });
});
