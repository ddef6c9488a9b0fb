/**
 * The capacity command reports a DM's message → wake latency as `make bench` measured it: each
 * engine's moments (idle, during each fan-out, beside a lively channel), p50 and p99, paced
 * beside not paced, with the p99's spread over repeated runs.
 */
import { describe, expect, it } from 'vitest';
import type { ResultsFile } from '../../../capacity/bench-results.js';
import { dmLatencyFromBench } from '../../../capacity/dm-latency.js';

const reference = (value: number | null) => ({ name: 'reference: not paced', value });

const results: ResultsFile = {
  sections: [
    {
      id: 'dm-latency',
      figures: [
        { name: 'idle: DM message → wake, p50', value: 0.06, reference: reference(0.07) },
        { name: 'idle: DM message → wake, p99', value: 0.2, reference: reference(0.25) },
        { name: 'during a fan-out to 1,000 devices: DM message → wake, p50', value: 0.4, reference: reference(5.2) },
        { name: 'during a fan-out to 1,000 devices: DM message → wake, p99', value: 1.1, reference: reference(9.7) },
        { name: 'fan-out to 1,000 devices: wakes per second', value: 80, reference: reference(82) },
        {
          name: 'beside a lively 10,000-member channel (a message every 2 s): DM message → wake, p99',
          value: 0.9,
          reference: reference(14),
          spread: { runs: 3, value: { min: 0.7, max: 1.3 } },
        },
      ],
    },
    { id: 'dm-latency-server', figures: [{ name: 'idle: DM message → wake, p99', value: 0.3, reference: reference(null) }] },
  ],
};

describe('dmLatencyFromBench', () => {
  it('reads every moment of both engines, paced beside not paced', () => {
    expect(dmLatencyFromBench(results)).toEqual([
      { what: 'dev server, idle', p50: { paced: 0.06, reference: 0.07 }, p99: { paced: 0.2, reference: 0.25 } },
      { what: 'dev server, during a fan-out to 1,000 devices', p50: { paced: 0.4, reference: 5.2 }, p99: { paced: 1.1, reference: 9.7 } },
      {
        what: 'dev server, beside a lively 10,000-member channel (a message every 2 s)',
        p50: { paced: null, reference: null },
        p99: { paced: 0.9, reference: 14 },
        p99Spread: { runs: 3, min: 0.7, max: 1.3 },
      },
      { what: 'real server, idle', p50: { paced: null, reference: null }, p99: { paced: 0.3, reference: null } },
    ]);
  });

  it('is empty for a results file without the sections', () => {
    expect(dmLatencyFromBench(undefined)).toEqual([]);
    expect(dmLatencyFromBench({ sections: [{ id: 'fan-out', figures: [] }] })).toEqual([]);
  });
});
