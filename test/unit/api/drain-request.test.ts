/**
 * The drain's optional body: `parseDrainRequest` accepts exactly what docs/openapi.yaml's
 * `DrainRequest` allows, on values generated from the document (valid ones and near misses),
 * and says what a report means.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lowered, parseDrainRequest } from '../../../src/api/drain-request.js';
import { ApiError } from '../../../src/api/errors.js';
import { valuesOf } from '../../support/schema-arbitrary.js';

const runs = Number(process.env['API_DOCUMENT_RUNS'] ?? 3_000);

describe('parseDrainRequest', () => {
  it('accepts exactly the bodies DrainRequest allows, and names the field of a refusal', () => {
    fc.assert(
      fc.property(valuesOf('/components/schemas/DrainRequest'), ({ value, verdict }) => {
        if (verdict === 'valid') {
          expect(() => parseDrainRequest(value)).not.toThrow();
          return;
        }
        try {
          parseDrainRequest(value);
        } catch (error) {
          expect(error).toBeInstanceOf(ApiError);
          expect((error as ApiError).status).toBe(400);
          expect((error as ApiError).message).toMatch(/^(body|wake|wake\.priority|wake\.original_priority): /);
          return;
        }
        throw new Error(`accepted what the document forbids: ${JSON.stringify(value)}`);
      }),
      { numRuns: runs },
    );
  });

  it('reads no body, {} and unknown fields as a drain that reports nothing', () => {
    for (const body of [undefined, {}, { app: '1.2' }]) expect(parseDrainRequest(body)).toEqual({});
  });

  it('takes a lowered HIGH wake for one, and nothing else', () => {
    const report = (priority: string, original_priority: string) => parseDrainRequest({ wake: { priority, original_priority } }).wake!;
    expect(lowered(report('normal', 'high'))).toBe(true);
    for (const [priority, original] of [
      ['high', 'high'],
      ['normal', 'normal'],
      ['high', 'normal'],
    ])
      expect(lowered(report(priority!, original!))).toBe(false);
  });
});
