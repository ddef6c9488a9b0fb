/**
 * How a maintenance scan walks a table of any size: window after window along a key, each
 * window one short set-based statement, the position kept in PostgreSQL
 * (`push_maintenance_cursors`) at the end of each slice: one activity call handles a slice of
 * windows; the workflow calls again until the pass is complete or the run's budget is spent,
 * and the next run goes on from the stored position. A crash repeats at most one slice
 * (every window's work is idempotent); saving once per slice, not per window, keeps a commit
 * (an fsync) out of every window.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../src/db/pool.js';
import type { Logger } from '../src/observability/log.js';
import { passCompleted } from './metrics.js';

export type ScanName = 'no-session' | 'untouched-pending' | 'stranded' | 'orphan-workflows' | 'missing-workflows';

export interface SliceInput {
  /** Rows (or workflows) per window: one statement, one Temporal list page. */
  readonly windowSize: number;
  /** Windows one activity call handles at most. */
  readonly windowsPerSlice: number;
  /** Milliseconds after which an activity call stops at the end of its current window. */
  readonly sliceMs: number;
}

export interface SliceResult {
  /** Rows deleted, registrations signalled, workflows ended or started. */
  readonly affected: number;
  /** The pass reached the end; the next call starts a new one from the beginning. */
  readonly passComplete: boolean;
}

export interface WindowResult {
  readonly affected: number;
  /** The window's last key: where the next window starts (exclusive). */
  readonly last: string | undefined;
  /** The window was short: nothing lies beyond it. */
  readonly end: boolean;
}

/** The stored position; '' is the beginning of a pass. */
export async function loadPosition(pool: DatabasePool, scan: ScanName): Promise<string> {
  const position = await pool.maybeOneFirst(sql.type(z.object({ position: z.string() }))`
    SELECT position FROM push_maintenance_cursors WHERE scan = ${scan}`);
  return position ?? '';
}

async function savePosition(pool: DatabasePool, scan: ScanName, position: string): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO push_maintenance_cursors (scan, position) VALUES (${scan}, ${position})
    ON CONFLICT (scan) DO UPDATE SET position = excluded.position, updated_at = now()`);
}

/** Back to the beginning; returns how long the completed pass took, in seconds. */
async function completePass(pool: DatabasePool, scan: ScanName): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ seconds: z.number() }))`
    INSERT INTO push_maintenance_cursors (scan, position, last_pass_at) VALUES (${scan}, '', now())
    ON CONFLICT (scan) DO UPDATE SET position = '', last_pass_at = now(), pass_started_at = now(), updated_at = now()
    RETURNING extract(epoch FROM now() - (
      SELECT coalesce(min(pass_started_at), now()) FROM push_maintenance_cursors WHERE scan = ${scan}))::float8 AS seconds`);
}

/**
 * Runs windows of `scan` from its stored position until the pass ends or the slice is used
 * up. `window(after)` does one window after key `after` ('' = from the start).
 */
export async function runSlice(
  deps: { readonly pool: DatabasePool; readonly log: Logger },
  scan: ScanName,
  input: SliceInput,
  window: (after: string) => Promise<WindowResult>,
): Promise<SliceResult> {
  const started = Date.now();
  const from = await loadPosition(deps.pool, scan);
  let position = from;
  let affected = 0;
  try {
    for (let windows = 1; ; windows++) {
      const result = await window(position);
      affected += result.affected;
      if (result.end || result.last === undefined) {
        const seconds = await completePass(deps.pool, scan);
        passCompleted.set({ scan }, Date.now() / 1000);
        deps.log.info({ scan, seconds }, 'maintenance pass complete');
        return { affected, passComplete: true };
      }
      position = result.last;
      if (windows >= input.windowsPerSlice || Date.now() - started >= input.sliceMs) {
        await savePosition(deps.pool, scan, position);
        return { affected, passComplete: false };
      }
    }
  } catch (error) {
    // Keep what was done; the retry goes on from there.
    if (position !== from) await savePosition(deps.pool, scan, position).catch(() => undefined);
    throw error;
  }
}
