/**
 * Item 8 — memory of a worker process (dist/src/bin/worker.js, production settings) holding
 * N registration workflows in its cache, against the same process holding none: resident set
 * size from /proc (workflow code runs in worker threads of the same process, so only the RSS
 * sees their heaps), the main thread's V8 heap from the worker's /metrics, and the SDK's own
 * sticky-cache gauge as the proof of what is cached.
 */
import { readFileSync } from 'node:fs';
import { registrationWorkflowId, settleAll, signalRegistered } from '../../src/testing.js';
import { settledHistoryLengths } from '../devices.js';
import type { DistributorTap } from '../distributor-tap.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { devicesFor, insertRegistrations, seedUsers } from '../seed.js';
import type { BenchStack, RunningApps } from '../stack.js';
import { median, sleep } from '../stats.js';

const warmUp = 10;
const samplesPerReading = 10;
const taskQueue = 'bench-memory';

interface Sample {
  readonly cached: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  readonly stickyCache: number | null;
}

export async function measureWorkerMemory(stack: BenchStack, report: Report, settings: BenchSettings, tap: DistributorTap): Promise<void> {
  const section = report.section('worker-memory', '8. Worker memory per 1,000 cached workflows');
  const steps = settings.workerMemory.steps;
  const total = steps.at(-1)!;
  const devices = devicesFor(await seedUsers(stack.pool, total), tap.distributor);
  await insertRegistrations(stack.pool, devices);
  let apps: RunningApps | undefined;
  const samples: Sample[] = [];
  try {
    apps = await stack.startApps({ label: 'memory', taskQueue, apps: ['worker'], sdkMetrics: true });
    const pid = apps.pid('worker');
    let started = 0;
    const startUpTo = async (count: number) => {
      const batch = devices.slice(started, count);
      const failures = await settleAll(batch, 16, (d) =>
        signalRegistered(stack.temporal, taskQueue, { userId: d.userId, deviceId: d.deviceId }, 'unifiedpush'),
      );
      if (failures.length > 0) throw new Error(`${failures.length} workflow starts failed: ${String(failures[0])}`);
      await settledHistoryLengths(
        stack.temporal,
        batch.map((d) => registrationWorkflowId(d.userId, d.deviceId)),
      );
      started = count;
    };
    // A few workflows first: the workflow threads and the bundle load on the first activation.
    await startUpTo(warmUp);
    samples.push(await sample(apps, pid, warmUp));
    for (const step of steps) {
      process.stdout.write(`  starting workflows up to ${step}…\n`);
      await startUpTo(step);
      samples.push(await sample(apps, pid, step));
    }
  } finally {
    await apps?.stop();
  }
  const base = samples[0]!;
  const last = samples.at(-1)!;
  // What the SDK says it holds (a start beyond maxCachedWorkflows evicts another).
  const held = (s: Sample) => s.stickyCache ?? s.cached;
  const perThousand = (key: 'rssMiB' | 'heapUsedMiB') => ((last[key] - base[key]) / (held(last) - held(base))) * 1000;
  report.figure(section, {
    name: `worker RSS with ${held(last).toLocaleString('en-US')} cached workflows`,
    value: last.rssMiB,
    unit: 'MiB',
    reference: { name: `the same process with ${held(base)}, workflow threads loaded`, value: base.rssMiB },
    headline: '8. worker memory',
  });
  report.figure(section, { name: 'RSS per 1,000 cached workflows', value: perThousand('rssMiB'), unit: 'MiB', headline: '8. worker memory' });
  report.figure(section, {
    name: 'main-thread V8 heap per 1,000 cached workflows',
    value: perThousand('heapUsedMiB'),
    unit: 'MiB',
    note: 'the main thread only: activities, gRPC, metrics; workflow code runs in a worker thread, whose heap only the RSS shows',
  });
  section.tables.push({
    title: `Readings (${samplesPerReading} samples one second apart, after the cache filled and five seconds of rest; RSS: their median, heap: their least):`,
    header: ['workflows started', 'SDK sticky cache', 'RSS (MiB)', 'main-thread heap used (MiB)'],
    rows: samples.map((s) => [s.cached, s.stickyCache === null ? 'n/a' : s.stickyCache, s.rssMiB, s.heapUsedMiB]),
  });
  section.setup.push(setupProse('worker-memory', { warmUp, steps: steps.map((s) => s.toLocaleString('en-US')).join(' and then ') }));
  section.details.samples = samples;
}

async function sample(apps: RunningApps, pid: number, cached: number): Promise<Sample> {
  await sleep(5_000);
  const readings: Sample[] = [];
  for (let i = 0; i < samplesPerReading; i++) {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN);
    const metrics = await (await fetch(apps.workerMetricsUrl)).text();
    const sdk = await (await fetch(apps.workerSdkMetricsUrl)).text().catch(() => '');
    readings.push({
      cached,
      rssMiB: rssKiB / 1024,
      heapUsedMiB: gauge(metrics, 'nodejs_heap_size_used_bytes') / 2 ** 20,
      stickyCache: gaugeOrNull(sdk, 'temporal_sticky_cache_size'),
    });
    await sleep(1_000);
  }
  // RSS: the median. Heap: the least reading, the one closest after a collection.
  const rssMiB = median(readings.map((r) => r.rssMiB));
  const heapUsedMiB = Math.min(...readings.map((r) => r.heapUsedMiB));
  const sticky = readings.at(-1)!.stickyCache;
  process.stdout.write(`  ${cached} workflows: RSS ${rssMiB.toFixed(1)} MiB, heap ${heapUsedMiB.toFixed(1)} MiB, sticky cache ${sticky ?? 'n/a'}\n`);
  return { cached, rssMiB, heapUsedMiB, stickyCache: sticky };
}

function gaugeOrNull(text: string, name: string): number | null {
  const values = text
    .split('\n')
    .filter((line) => line.startsWith(name) && !line.startsWith('#'))
    .map((line) => Number(line.trim().split(/\s+/).at(-1)));
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0);
}

function gauge(text: string, name: string): number {
  return gaugeOrNull(text, name) ?? Number.NaN;
}
