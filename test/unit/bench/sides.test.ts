import { describe, expect, it } from 'vitest';
import { sidesInTurn } from '../../../bench/sides.js';

describe('ours and not paced take turns over the runs of a repeated bench', () => {
  it.each([
    [1, ['not paced', 'ours']],
    [2, ['ours', 'not paced']],
    [3, ['not paced', 'ours']],
    [4, ['ours', 'not paced']],
  ])('run %i measures %j in that order', (run, order) => {
    expect(sidesInTurn(run, ['not paced', 'ours'])).toEqual(order);
  });

  it('leaves the sides it was given as they were', () => {
    const sides = ['not paced', 'ours'];
    sidesInTurn(2, sides);
    expect(sides).toEqual(['not paced', 'ours']);
  });
});
