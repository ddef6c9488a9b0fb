/**
 * capacity/inputs.json is read and validated at start-up: the file in the repository gives
 * the model the prices and defaults it was written with, and a malformed file is refused with
 * one line that names the file and the bad field, before any figure is computed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InputsError, inputsFile, loadCapacityInputs } from '../../../capacity/inputs.js';

const dir = mkdtempSync(path.join(tmpdir(), 'capacity-inputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The repository's inputs with the field at `where` set to `value` (undefined: left out), written
 * to a file of their own.
 */
function inputsWith(where: readonly (string | number)[], value: unknown): string {
  const inputs: unknown = JSON.parse(readFileSync(inputsFile, 'utf8'));
  const parent = where.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], inputs);
  (parent as Record<string | number, unknown>)[where.at(-1)!] = value;
  const file = path.join(dir, `inputs-${where.join('-')}.json`);
  writeFileSync(file, JSON.stringify(inputs));
  return file;
}

/** The error loading `file` raises: an InputsError of one line. */
function refusal(file: string): string {
  try {
    loadCapacityInputs(file);
  } catch (error) {
    expect(error).toBeInstanceOf(InputsError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    return message;
  }
  throw new Error(`${file} was accepted`);
}

describe("the repository's inputs", () => {
  it('give the published tiers as sizes, the page as the report names it, and the measured defaults', () => {
    const { temporalCloudPricing, measuredDefaults } = loadCapacityInputs();
    expect(temporalCloudPricing.actionTiers).toEqual([
      [5e6, 50],
      [5e6, 45],
      [10e6, 40],
      [30e6, 35],
      [50e6, 30],
      [Number.POSITIVE_INFINITY, 25],
    ]);
    expect(temporalCloudPricing.source).toBe(
      'Temporal Cloud Pay-As-You-Go, Business plan: docs.temporal.io/cloud/pricing (temporalio/documentation docs/evaluate/cloud/pricing.mdx, read 2026-12-03)',
    );
    expect(measuredDefaults.quietCycle).toEqual({ events: 6.07, actions: 2.07, workflowTasks: 1, signals: 1, timersFired: 0 });
    expect(measuredDefaults.natsEventBytes).toBe(125);
  });
});

describe('a malformed inputs file is refused, naming the file and the field', () => {
  it('a price that is not a number', () => {
    const file = inputsWith(['temporalCloudPricing', 'activeStoragePerGBh'], '0.042');
    expect(refusal(file)).toMatch(new RegExp(`^${file}: temporalCloudPricing\\.activeStoragePerGBh: .*expected number`));
  });

  it('a day the price was read on that is not a date', () => {
    const file = inputsWith(['temporalCloudPricing', 'readOn'], '3 December 2026');
    expect(refusal(file)).toMatch(/: temporalCloudPricing\.readOn: /);
  });

  it('a source that is not an https URL', () => {
    const file = inputsWith(['temporalCloudPricing', 'url'], 'docs.temporal.io/cloud/pricing');
    expect(refusal(file)).toMatch(/: temporalCloudPricing\.url: /);
  });

  it('tiers whose bounds do not rise, or whose last tier is bounded', () => {
    const falling = inputsWith(['temporalCloudPricing', 'actionTiers', 2, 'upToMillionActions'], 8);
    expect(refusal(falling)).toMatch(/: temporalCloudPricing\.actionTiers\[2\]\.upToMillionActions: must be above the tier before \(10\)$/);
    const bounded = inputsWith(['temporalCloudPricing', 'actionTiers', 5, 'upToMillionActions'], 200);
    expect(refusal(bounded)).toMatch(/: temporalCloudPricing\.actionTiers\[5\]\.upToMillionActions: the last tier must be open-ended \(null\)$/);
  });

  it('a measured default without its figure, or from a run the file does not list', () => {
    const missing = inputsWith(['measuredDefaults', 'costs', 'busyCycle', 'value', 'actions'], undefined);
    expect(refusal(missing)).toMatch(/: measuredDefaults\.costs\.busyCycle\.value\.actions: /);
    const unlisted = inputsWith(['measuredDefaults', 'costs', 'quietCycle', 'run'], 'full-2026-11-30');
    expect(refusal(unlisted)).toMatch(/: measuredDefaults\.costs\.quietCycle\.run: names no entry of runs \("full-2026-11-30"\)$/);
  });

  it('a misspelt field, rather than ignoring it', () => {
    const file = inputsWith(['temporalCloudPricing', 'planMinimumPerMonht'], 500);
    expect(refusal(file)).toMatch(/: temporalCloudPricing: .*planMinimumPerMonht/);
  });

  it('a file that is not JSON', () => {
    const file = path.join(dir, 'not-json.json');
    writeFileSync(file, '{ "temporalCloudPricing": ');
    expect(refusal(file)).toMatch(new RegExp(`^${file}: .*JSON`));
  });
});
