/**
 * Seeded randomness for the fault scenarios: every random choice (world, messages, which
 * process dies when, for how long) comes from one seed, printed by each scenario, so a failing
 * run can be replayed with `FAULTS_SEED=<seed> npx vitest run --project faults`.
 */
export interface Random {
  readonly seed: number;
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  shuffle<T>(items: readonly T[]): T[];
}

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  // mulberry32: small, fast, and good enough to choose fault points.
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    seed,
    next,
    int,
    pick: (items) => items[int(0, items.length - 1)]!,
    shuffle(items) {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = int(0, i);
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy;
    },
  };
}

/** `FAULTS_SEED` when set (to replay a run), else a fresh one. */
export function scenarioSeed(): number {
  const given = process.env.FAULTS_SEED;
  if (given !== undefined && given.trim() !== '') {
    const seed = Number(given);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`FAULTS_SEED must be an integer from 0 to ${0xffffffff}`);
    return seed;
  }
  return Math.floor(Math.random() * 0xffffffff);
}
