/**
 * The numbers the docs give for the service's rules are the code's: each claim below finds a
 * sentence of a doc and holds the number in it to the constant that enforces the rule. A doc
 * reworded so that a claim no longer matches fails here too: say the rule again, or move the claim.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { maxConsecutiveFailures, misconfiguredMaxMs, misconfiguredRetryMs } from '../../../domain/backoff.js';
import { staleRegistrationAfterDays, untouchedPendingAfterDays } from '../../../domain/retention.js';
import { defaultBreaker } from '../../../src/transports/breaker.js';
import { outageDefaults } from '../../../src/transports/outage-detector.js';
import { maintenanceEveryMs } from '../../../temporal/schedule.js';

const minutes = (ms: number) => String(ms / 60_000);

/** A doc's text with emphasis and line breaks taken out, so a claim matches however the prose wraps. */
function docText(name: string): string {
  return readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8')
    .replace(/\*\*/g, '')
    .replace(/\s+/g, ' ');
}

interface Claim {
  readonly doc: string;
  /** Captures each documented number, in order. */
  readonly says: RegExp;
  readonly code: readonly string[];
}

const outageShareIsHalf = outageDefaults.failingShare === 0.5;

const claims: readonly Claim[] = [
  { doc: 'design.md', says: /registrations it served in the last (\d+) minutes/, code: [minutes(outageDefaults.windowMs)] },
  { doc: 'design.md', says: /at least (\d+) of them failing, and at least half/, code: [String(outageDefaults.minFailing)] },
  { doc: 'design.md', says: /one probe per (\d+) s per worker/, code: [String(outageDefaults.probeEveryMs / 1_000)] },
  { doc: 'design.md', says: /Swept every (\d+) minutes/, code: [minutes(maintenanceEveryMs)] },
  { doc: 'design.md', says: /(\d+) consecutive failures of the endpoint/, code: [String(maxConsecutiveFailures)] },
  { doc: 'design.md', says: /not registered again for (\d+) days/, code: [String(staleRegistrationAfterDays)] },
  { doc: 'design.md', says: /untouched for (\d+) days is dropped/, code: [String(untouchedPendingAfterDays)] },
  {
    doc: 'design.md',
    says: /back-off of its own — (\d+) minutes, doubling to an (hour)/,
    code: [minutes(misconfiguredRetryMs), misconfiguredMaxMs === 3_600_000 ? 'hour' : minutes(misconfiguredMaxMs)],
  },
  {
    doc: 'design.md',
    says: /more than (\d+) registrations get such an answer within (\d+) minutes/,
    code: [String(defaultBreaker.floor), minutes(defaultBreaker.windowMs)],
  },
  { doc: 'transports.md', says: /active over the last (\d+) minutes/, code: [minutes(outageDefaults.windowMs)] },
  { doc: 'transports.md', says: /at least (\d+) registrations failing, and at least half/, code: [String(outageDefaults.minFailing)] },
  { doc: 'transports.md', says: /after (\d+) minutes without a result/, code: [minutes(outageDefaults.quietMs)] },
  {
    doc: 'operations.md',
    says: /at least (\d+) and half of its registrations active in (\d+) minutes failing/,
    code: [String(outageDefaults.minFailing), minutes(outageDefaults.windowMs)],
  },
];

describe('the numbers the docs give', () => {
  it('say "half" for the outage share because the code takes half', () => {
    expect(outageShareIsHalf).toBe(true);
  });

  it.each(claims.map((c) => [c.doc, c.says.source, c] as const))('%s: /%s/ holds the code’s numbers', (_doc, _says, claim) => {
    const match = claim.says.exec(docText(claim.doc));
    expect(match, `${claim.doc} no longer says /${claim.says.source}/`).not.toBeNull();
    expect(match!.slice(1)).toEqual(claim.code);
  });
});
