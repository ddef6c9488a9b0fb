/**
 * Histories written by earlier workflow code (test/workflow/histories/, see record.ts there)
 * replay on today's: a run in flight when a worker is upgraded must go on where it was, so
 * every change of plan is behind `patched()`. A history that no longer replays fails here
 * with the SDK's non-determinism error, naming the event. They replay with the workflow
 * interceptors every worker bundles (temporal/workflow-tracing.ts): histories recorded before
 * those existed must go on under them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowInterceptorModules, workflowsSourcePath } from '../../temporal/worker.js';
import { workflowSpanSinks } from '../../temporal/tracing.js';

const dir = new URL('histories/', import.meta.url).pathname;
const recorded = readdirSync(dir).filter((name) => name.endsWith('.json'));

describe('histories of earlier workflow code', () => {
  it('are there to replay', () => {
    expect(recorded.length).toBeGreaterThanOrEqual(6);
  });

  it.each(recorded)('%s replays on the current workflow', async (name) => {
    const { workflowId, history } = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { workflowId: string; history: unknown };
    await expect(
      Worker.runReplayHistory(
        {
          workflowsPath: workflowsSourcePath,
          interceptors: { workflowModules: [...workflowInterceptorModules] },
          sinks: workflowSpanSinks(undefined),
        },
        temporal.api.history.v1.History.fromObject(history as object),
        workflowId,
      ),
    ).resolves.toBeUndefined();
  });
});
