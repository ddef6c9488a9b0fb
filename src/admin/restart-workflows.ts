/**
 * The way back for a registration workflow that cannot make progress (temporal/wedged-workflows.ts):
 * end its run and start the device's workflow anew from its PostgreSQL row — `push-admin restart`.
 *
 * PostgreSQL is the truth (the registration, its pending rows, its outstanding wake); a run only
 * caches it, so nothing is lost with one:
 *   - the new run looks at PostgreSQL at once (a fresh run always does), so messages whose
 *     signals went to the old run, or arrive while it is replaced, are woken by that look;
 *   - a wake PostgreSQL holds outstanding is sent once more by the new run (it never recorded
 *     that claim: DeviceState.onObserved), since the old run's last claim may never have gone out;
 *   - a registration that is gone is never brought back: without a row the run is only ended,
 *     and a row deleted after the check is found gone by the new run's first look, which ends it.
 * The end and the start are one call (restartRegistrationWorkflow). Safe to repeat and beside
 * the api, the bridge and maintenance: a restart of a healthy run costs one look.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import { settleAll } from '../async/concurrency.js';
import type { DatabasePool } from '../db/pool.js';
import { transportNameSchema, type DeviceIdentity } from '../../domain/vocabulary.js';
import { registrationWorkflowId } from '../../temporal/names.js';
import { restartRegistrationWorkflow } from '../../temporal/registration-workflows.js';
import { listWedgedRegistrations, reportedProblems, type WedgedRegistration } from '../../temporal/wedged-workflows.js';

export interface RestartDeps {
  readonly pool: DatabasePool;
  readonly temporal: Client;
  readonly taskQueue: string;
}

/**
 * - `restarted`: the running run ended and a new one started;
 * - `started`: none was running, a new one started;
 * - `ended`: no registration: the running run ended, none started;
 * - `absent`: no registration and no running run: nothing to do;
 * - `skipped`: the wedged run listed is no longer the current run or no longer flagged (another
 *   restart, or a fixed worker, came first): left alone.
 */
export type RestartOutcome = 'restarted' | 'started' | 'ended' | 'absent' | 'skipped';

export interface RestartResult extends DeviceIdentity {
  readonly outcome: RestartOutcome;
  readonly endedRunId?: string;
  readonly runId?: string;
}

/** Restarts one device's workflow; with `wedgedRun`, only if that run is still current and still flagged. */
export async function restartRegistration(deps: RestartDeps, { userId, deviceId }: DeviceIdentity, wedgedRun?: string): Promise<RestartResult> {
  const device = { userId, deviceId };
  const current = await runningRun(deps.temporal, device);
  if (wedgedRun !== undefined && (current?.runId !== wedgedRun || !current.wedged)) return { ...device, outcome: 'skipped' };
  const transport = await deps.pool.maybeOneFirst(sql.type(z.object({ transport: transportNameSchema }))`
    SELECT transport FROM push_registrations WHERE user_id = ${device.userId} AND device_id = ${device.deviceId}`);
  if (transport === null) {
    if (current === undefined) return { ...device, outcome: 'absent' };
    await deps.temporal.workflow
      .getHandle(registrationWorkflowId(device.userId, device.deviceId), current.runId)
      .terminate('push-admin restart: the registration is gone')
      .catch((error: unknown) => {
        if (!(error instanceof WorkflowNotFoundError)) throw error; // ended meanwhile
      });
    return { ...device, outcome: 'ended', endedRunId: current.runId };
  }
  const runId = await restartRegistrationWorkflow(deps.temporal, deps.taskQueue, device, transport);
  return current === undefined ? { ...device, outcome: 'started', runId } : { ...device, outcome: 'restarted', endedRunId: current.runId, runId };
}

export interface WedgedRestarts {
  readonly results: readonly (RestartResult & { readonly problems: readonly string[] })[];
  readonly failures: readonly { readonly workflowId: string; readonly error: string }[];
}

/**
 * Restarts every wedged registration workflow on the task queue, `concurrency` at a time, as
 * Temporal lists them (a page of 1,000 at a time: any fleet size). Calls `progress` after each.
 */
export async function restartWedged(
  deps: RestartDeps,
  options: { readonly concurrency?: number; readonly progress?: (result: RestartResult) => void } = {},
): Promise<WedgedRestarts> {
  const results: (RestartResult & { problems: readonly string[] })[] = [];
  const failures: { workflowId: string; error: string }[] = [];
  let page: WedgedRegistration[] = [];
  const flush = async () => {
    const batch = page;
    page = [];
    await settleAll(batch, options.concurrency ?? 16, async (wedged) => {
      try {
        const result = { ...(await restartRegistration(deps, wedged, wedged.runId)), problems: wedged.problems };
        results.push(result);
        options.progress?.(result);
      } catch (error) {
        failures.push({ workflowId: wedged.workflowId, error: error instanceof Error ? error.message : String(error) });
      }
    });
  };
  for await (const wedged of listWedgedRegistrations(deps.temporal, deps.taskQueue)) {
    page.push(wedged);
    if (page.length >= 1_000) await flush();
  }
  await flush();
  return { results, failures };
}

/** The device's running run, and whether Temporal flags it; undefined when none is running. */
async function runningRun(client: Client, device: DeviceIdentity): Promise<{ runId: string; wedged: boolean } | undefined> {
  try {
    const described = await client.workflow.getHandle(registrationWorkflowId(device.userId, device.deviceId)).describe();
    if (described.status.name !== 'RUNNING') return undefined;
    return { runId: described.runId, wedged: reportedProblems(described).length > 0 };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}
