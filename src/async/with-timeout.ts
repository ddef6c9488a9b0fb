/**
 * `promise`, or a rejection with `Error("<what> within <ms> ms")` once `ms` have passed,
 * whichever comes first. The timer is cleared either way; a late settlement of `promise` is
 * ignored (the race has already handled it).
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what = 'no answer'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
