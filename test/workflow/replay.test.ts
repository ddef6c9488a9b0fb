/**
 * Histories written by earlier workflow code (test/workflow/histories/, see record.ts there)
 * replay on today's: a run in flight when a worker is upgraded must go on where it was, so
 * every change of plan is behind `patched()`. A history that no longer replays fails here
 * with the SDK's non-determinism error, naming the event. Each replays on both of today's
 * bundles: a tracing worker's, with the workflow interceptors (temporal/workflow-tracing.ts),
 * and the plain one of a worker that does not trace — a fleet may hold both, and every worker
 * before the plain one had the interceptors.
 *
 * Each release the first release upgrades from in place (test/support/previous-versions.ts)
 * has a history recorded by its own worker for every scenario of record.ts: every path, and
 * every state a run can be in when the workers are replaced. `before-escalation-*` are runs
 * begun before the middle plan, which a deployment of those releases may still hold (an idle
 * device's run never continues as new).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { tracedWorkflowInterceptorModules, workflowsSourcePath } from '../../src/worker/temporal-worker.js';
import { workflowSpanSinks } from '../../temporal/tracing.js';
import { previousVersions } from '../support/previous-versions.js';

const dir = new URL('histories/', import.meta.url).pathname;
const recorded = readdirSync(dir).filter((name) => name.endsWith('.json'));

/** record.ts's scenarios. */
const scenarios = [
  'quiet-cycles',
  'busy-channel',
  'dm-behind-channel-wake',
  'deferred-sends',
  'fcm-budget',
  'continued-run',
  'continued-run-first',
  'at-wake-outstanding',
  'at-dm-pending',
  'at-escalation-due',
  'at-backoff',
  'at-registered-during-backoff',
  'at-outage-first',
  'at-outage-held',
  'at-budget-held',
  'at-misconfigured',
  'deleted',
];

describe('histories of earlier workflow code', () => {
  it('are there to replay: every scenario, recorded by the worker of every release upgraded from', () => {
    for (const version of previousVersions) {
      expect(recorded.filter((name) => name.startsWith(`${version.name}-`)).sort()).toEqual(scenarios.map((s) => `${version.name}-${s}.json`).sort());
    }
    expect(recorded.filter((name) => name.startsWith('before-escalation-')).length).toBeGreaterThanOrEqual(6);
  });

  const bundles: Record<'traced' | 'plain', string> = { traced: '', plain: '' };
  beforeAll(async () => {
    const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error };
    bundles.traced = (
      await bundleWorkflowCode({
        workflowsPath: workflowsSourcePath,
        workflowInterceptorModules: [...tracedWorkflowInterceptorModules],
        logger: quiet,
      })
    ).code;
    bundles.plain = (await bundleWorkflowCode({ workflowsPath: workflowsSourcePath, logger: quiet })).code;
  }, 120_000);

  it.each(recorded.flatMap((name) => (['traced', 'plain'] as const).map((bundle) => [name, bundle] as const)))(
    '%s replays on the current workflow (%s bundle)',
    async (name, bundle) => {
      const { workflowId, history } = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { workflowId: string; history: unknown };
      await expect(
        Worker.runReplayHistory(
          {
            workflowBundle: { code: bundles[bundle] },
            sinks: workflowSpanSinks(undefined),
          },
          temporal.api.history.v1.History.fromObject(history as object),
          workflowId,
        ),
      ).resolves.toBeUndefined();
    },
  );

  // While the workers are being replaced, a run may be begun for a starter of this release
  // (`beginsUnmarked`) by an earlier worker, which ignores the field and records its own plan's
  // markers. Such a history is that worker's own, with the field in the run's input.
  const ofReleases = recorded.filter((name) => previousVersions.some((v) => name.startsWith(`${v.name}-`)));
  it.each(ofReleases)('%s, begun for a starter of this release, replays on the current workflow', async (name) => {
    const { workflowId, history } = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { workflowId: string; history: RecordedHistory };
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { code: bundles.plain }, sinks: workflowSpanSinks(undefined) },
        temporal.api.history.v1.History.fromObject(withInputField(history, 'beginsUnmarked', true) as object),
        workflowId,
      ),
    ).resolves.toBeUndefined();
  });
});

interface RecordedHistory {
  readonly events: readonly {
    readonly workflowExecutionStartedEventAttributes?: { readonly input: { readonly payloads: readonly { readonly data: string }[] } };
  }[];
}

/** The history with `field` added to its run's input (a JSON payload, base64 as recorded). */
function withInputField(history: RecordedHistory, field: string, value: unknown): RecordedHistory {
  const [started, ...rest] = history.events;
  const attributes = started!.workflowExecutionStartedEventAttributes!;
  const [payload] = attributes.input.payloads;
  const input = JSON.parse(Buffer.from(payload!.data, 'base64').toString('utf8')) as Record<string, unknown>;
  const data = Buffer.from(JSON.stringify({ ...input, [field]: value })).toString('base64');
  return {
    events: [{ ...started, workflowExecutionStartedEventAttributes: { ...attributes, input: { payloads: [{ ...payload, data }] } } }, ...rest],
  };
}
