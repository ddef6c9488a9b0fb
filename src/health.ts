/** Readiness: every dependency answers within a short deadline. */
export type Check = () => Promise<void>;

export interface Readiness {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, 'ok' | 'failing'>>;
}

export async function checkReadiness(checks: Readonly<Record<string, Check>>, timeoutMs = 3_000): Promise<Readiness> {
  const names = Object.keys(checks);
  const results = await Promise.all(names.map((name) => withTimeout(checks[name]!(), timeoutMs).then(() => 'ok' as const, () => 'failing' as const)));
  const byName = Object.fromEntries(names.map((name, i) => [name, results[i]!]));
  return { ready: results.every((r) => r === 'ok'), checks: byName };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
