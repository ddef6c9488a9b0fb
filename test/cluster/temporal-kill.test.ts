/**
 * The fault scenario of the faults tier on the real Temporal server (PostgreSQL,
 * mTLS) — its process killed with SIGKILL at a seeded point of a fan-out and started again,
 * while two replicas of every process keep running. Nothing is lost and duplicate wakes stay
 * within the bound of docs/architecture.md "Crashes and duplicate wakes".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultStack, type FaultStack } from '../support/fault-stack.js';
import { scenarioSeed, seededRandom, type Random } from '../faults/random.js';
import { runScenario, scenarioEnv, type Fault } from '../faults/scenario.js';

const events = 100;

let stack: FaultStack;
beforeAll(async () => {
  stack = await startFaultStack({ apps: { api: 2, worker: 2, bridge: 2 }, env: scenarioEnv, temporal: 'server', name: 'test-cluster-kill' });
});
afterAll(async () => {
  await stack?.close();
});

function killTemporal(random: Random): Fault[] {
  const atEvent = random.int(15, events - 30);
  const downMs = random.int(500, 3_000);
  return [
    {
      atEvent,
      losesWorkflowTasks: true,
      label: `kill -9 of the Temporal server, down ${downMs} ms`,
      async run(striking) {
        striking();
        await stack.killService('temporal');
        await new Promise((resolve) => setTimeout(resolve, downMs)); // the outage's length, not synchronisation
        await stack.startService('temporal');
      },
    },
  ];
}

describe('kill -9 of the real Temporal server mid fan-out (two replicas of each process)', () => {
  it('every device is woken for what was pending, no event is lost, duplicates stay within the bound', async () => {
    const random = seededRandom(scenarioSeed());
    console.log(`temporal kill: seed ${random.seed} (replay with FAULTS_SEED=${random.seed})`);
    const result = await runScenario({ stack, random, users: 24, events, paceMs: [80, 220], faults: killTemporal });
    console.log(`temporal kill:\n${result.report}`);
    expect(result.faults).toHaveLength(1);
    for (const app of stack.apps) expect(stack.isRunning(app.name), `${app.name} exited:\n${stack.logTail(app.name)}`).toBe(true);
    expect(result.verdict.violations).toEqual([]);
    expect(result.verdict.resends).toBeLessThanOrEqual(result.verdict.resendBound);
    expect(result.verdict.rewakeDuplicates).toBeLessThanOrEqual(result.verdict.rewakeBound);
    expect(result.verdict.wakes).toBeGreaterThan(result.devices);
  });
});
