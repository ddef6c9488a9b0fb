/**
 * The capacity model's arithmetic against figures worked out by hand (not by the model): the
 * coalescing formula at its limits, Temporal Cloud's own published billing examples priced by
 * the prices of capacity/inputs.json, and one small deployment whose every figure was
 * computed separately from the formulas of docs/capacity.md.
 */
import { describe, expect, it } from 'vitest';
import { loadCapacityInputs } from '../../../capacity/inputs.js';
import { busyShare, capacity, cloudBill, defaultAssumptions, tieredActionsCost, wakesPerSecond, type Measured } from '../../../capacity/model.js';

const { temporalCloudPricing } = loadCapacityInputs();

describe('wakes of one device', () => {
  it('are one per message when messages are rare, one per interval when they are not', () => {
    // 1 / (15 + e^-0.0015 / 0.0001) = 1 / 10,000.011…
    expect(wakesPerSecond(0.0001, 15)).toBeCloseTo(9.9999888e-5, 10);
    // e^-150 is nothing: 1 / 15
    expect(wakesPerSecond(10, 15)).toBeCloseTo(1 / 15, 12);
    // λ = 1/15: 1 / (15 + 15 e^-1) = 1 / 20.518192
    expect(wakesPerSecond(1 / 15, 15)).toBeCloseTo(0.0487372, 6);
    expect(wakesPerSecond(0, 15)).toBe(0);
    expect(busyShare(1 / 15, 15)).toBeCloseTo(1 - 0.36787944, 7);
  });

  it('give the busy channel of the bench 1 + 299 / 15 wakes in 300 s', () => {
    expect(1 + 299 * wakesPerSecond(1, 15)).toBeCloseTo(20.9333, 3);
  });
});

describe('the Temporal Cloud bill', () => {
  it("prices 11.25M actions as the pricing page's example: $525", () => {
    expect(tieredActionsCost(11.25e6, temporalCloudPricing.actionTiers)).toBeCloseTo(525, 6);
  });

  it('goes down the tiers to $25 a million past 100M actions', () => {
    // 5×50 + 5×45 + 10×40 + 30×35 + 50×30 + 50×25 = 250 + 225 + 400 + 1,050 + 1,500 + 1,250
    expect(tieredActionsCost(150e6, temporalCloudPricing.actionTiers)).toBeCloseTo(4_675, 6);
  });

  it("prices storage beyond the Business plan's allocations as the page's example: $34.02, and the plan at its $500 minimum", () => {
    const bill = cloudBill({ actions: 2.5e6, activeGBh: 720 + 2.5 * 744, retainedGBh: 3_600 + 100 * 744 }, temporalCloudPricing);
    expect(bill.actions).toBe(0);
    expect(bill.storage).toBeCloseTo(30.24 + 3.78, 6);
    expect(bill.plan).toBe(500);
    expect(bill.total).toBeCloseTo(534.02, 6);
  });

  it("charges 10 % of usage for the plan above $5,000 (the page's example: $6,000 → $600)", () => {
    const flat = { ...temporalCloudPricing, actionTiers: [[Number.POSITIVE_INFINITY, 50]] as const, includedActions: 0 };
    const bill = cloudBill({ actions: 120e6, activeGBh: 0, retainedGBh: 0 }, flat);
    expect(bill.actions).toBeCloseTo(6_000, 6);
    expect(bill.plan).toBeCloseTo(600, 6);
  });
});

describe('a small deployment, worked out by hand', () => {
  // 1,000 devices; 2 messages/s, half DMs waking 2 devices, half in channels waking 98:
  // 100 deliveries/s, λ = 0.1 per device. A cycle lasts 15 + e^-1.5/0.1 = 17.2313016 s, so a
  // device is woken 0.0580339 times a second and the deployment 58.0339 times.
  const cycle = { events: 10, actions: 4, workflowTasks: 2, signals: 2, timersFired: 0 };
  const measured: Measured = {
    quietCycle: cycle,
    busyCycle: cycle,
    bytesPerEvent: 100,
    registration: { events: 6, actions: 2, workflowTasks: 1, signals: 1, timersFired: 0, bytes: 1_000 },
    reregistration: { events: 5, actions: 2, workflowTasks: 1, signals: 1, timersFired: 0, bytes: 500, pgCommits: 4, pgRows: 1, walBytes: 500 },
    wakeWrites: { pgCommits: 2, pgRows: 3, walBytes: 1_000 },
    bridgeWalBytesPerRow: 150,
    workerBaseRssMiB: 200,
    workerRssMiBPerCachedWorkflow: 0.25,
    maintenanceRun: { actions: 600, events: 1_200 },
    mibPerMillion: { registrations: 300, pendingRows: 100, ledgerRows: 50 },
    natsEventBytes: 125,
  };
  const c = capacity(
    {
      devices: 1_000,
      messagesPerSecond: 2,
      dmShare: 0.5,
      dmAudience: 2,
      serverAudience: 98,
      appStartsPerDay: 8.64,
      newDevicesPerDay: 864,
      peakFactor: 2,
    },
    measured,
    { ...defaultAssumptions, pricing: temporalCloudPricing, workerRssBudgetMiB: 1_000, cacheWindowSeconds: 10 },
  );
  const close = (value: number, expected: number) => expect(value / expected).toBeCloseTo(1, 6);

  it('wakes', () => {
    close(c.perDevice.messagesPerSecond, 0.1);
    close(c.perDevice.wakesPerSecond, 0.0580339212);
    close(c.wakesPerSecond, 58.0339212);
    close(c.perDevice.wakesPerDay, 5_014.130795);
  });

  it('Temporal: actions, workflow tasks, history', () => {
    // 58.0339 × 4 + 0.1 re-registrations/s × 2 + 0.01 registrations/s × 2 + 144 runs/day × 600 / 86,400
    close(c.temporal.actionsPerSecond, 233.355685);
    close(c.temporal.actionsPerMonth, 233.355685 * 730 * 3600);
    close(c.temporal.workflowTasksPerSecond, 116.177842);
    close(c.temporal.historyEventsPerSecond, 582.899212);
    close(c.temporal.historyBytesPerSecond, 58_289.9212);
  });

  it('history storage: a run ends at 200 wakes, 0.0398873 days; retained 30 days', () => {
    close(c.temporal.runDays, 0.0398872722);
    close(c.temporal.activeStorageGB, 0.101086157);
    close(c.temporal.retainedStorageGB, 150.553524);
  });

  it('shards: 697 peak transitions/s ÷ 50 per shard → 16', () => {
    close(c.temporal.stateTransitionsPerSecondPeak, 697.067055);
    expect(c.temporal.historyShards).toBe(16);
  });

  it('workers: (1,000 − 200) MiB ÷ 0.25 MiB = 3,200 workflows a worker; 440 woken within 10 s', () => {
    expect(c.workers.workflowsPerWorker).toBe(3_200);
    close(c.workers.cachedWorkflows, 440.291526);
    expect(c.workers.workers).toBe(1);
  });

  it('PostgreSQL and NATS', () => {
    // 100 pending rows + 2 ledger rows + 58.0339 × 3 + 0.1 + 0.01
    close(c.postgres.rowsPerSecond, 276.211764);
    close(c.postgres.commitsPerSecond, 118.467842);
    close(c.postgres.walMiBPerSecond, 0.0696982586);
    close(c.postgres.sizeGiB.ledger, 0.03375);
    close(c.nats.bytesPerSecond, 250);
    close(c.nats.streamGiB, 0.0603497028);
  });
});
