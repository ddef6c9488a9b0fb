/**
 * The capacity command over the committed results of `make bench` (bench/results/summary.json):
 * every measured cost comes from the section that measured it, not from a default; --check
 * finds the bench's own runs; and docs/capacity.md quotes exactly what the command prints.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { capacityCommand } from '../../../capacity/command.js';
import { projectRoot } from '../../../src/process/paths.js';

describe('the capacity command on the committed bench summary', () => {
  it('takes every measured cost from a section of the bench (the NATS event size is a constant)', () => {
    const { sources, check, dmLatency } = JSON.parse(capacityCommand(['--json', '--check'])) as {
      sources: Record<string, string>;
      check: { what: string }[];
      dmLatency: { what: string }[];
    };
    const defaults = Object.entries(sources).filter(([, source]) => source.startsWith('default'));
    expect(defaults.map(([field]) => field)).toEqual(['natsEventBytes']);
    expect(check.map((row) => row.what)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^busy channel/), expect.stringMatching(/^fan-out to .* devices: message → last wake/)]),
    );
    expect(dmLatency.map((row) => row.what)).toEqual(expect.arrayContaining([expect.stringMatching(/^dev server, idle$/)]));
  });

  it('prints what docs/capacity.md quotes', () => {
    const page = readFileSync(path.join(projectRoot, 'docs', 'capacity.md'), 'utf8');
    const [, args, output] = /^`npm run -s capacity -- ([^`]+)`, on[^\n]*\n[^\n]*\n\n```\n([\s\S]*?)\n```$/m.exec(page) ?? [];
    expect(args, 'docs/capacity.md quotes a command and its output').toBeDefined();
    expect(capacityCommand(args!.split(' '))).toBe(output);
  });
});
