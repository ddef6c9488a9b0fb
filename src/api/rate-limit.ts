/**
 * The api's per-user request limit (contract §6: 50 requests/s): a token bucket per user, in
 * this process's memory. N api replicas therefore allow up to N × the rate unless the load
 * balancer sends each user to one replica; the limit exists to stop a runaway client, not to
 * meter precisely.
 */
import type Koa from 'koa';
import type { AuthenticatedState } from './auth.js';
import { ApiError } from './errors.js';

export interface RateLimitOptions {
  /** Sustained requests per second per user. */
  readonly perSecond: number;
  /** Requests a user may make at once after being idle. */
  readonly burst: number;
  /** Milliseconds; injectable so tests need not race the clock. */
  readonly now?: () => number;
}

export const defaultRateLimit: RateLimitOptions = { perSecond: 50, burst: 50 };

type Decision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly now: () => number;
  private takesSinceSweep = 0;

  constructor(private readonly options: RateLimitOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  take(key: string): Decision {
    const now = this.now();
    this.sweepNow(now);
    const bucket = this.refilled(this.buckets.get(key), now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      this.buckets.set(key, bucket);
      return { allowed: true };
    }
    this.buckets.set(key, bucket);
    const secondsToNextToken = (1 - bucket.tokens) / this.options.perSecond;
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(secondsToNextToken)) };
  }

  /** Users currently tracked (a full bucket is forgotten: it behaves like a new one). */
  get size(): number {
    return this.buckets.size;
  }

  private refilled(bucket: Bucket | undefined, now: number): Bucket {
    if (bucket === undefined) return { tokens: this.options.burst, at: now };
    const elapsedSeconds = Math.max(0, now - bucket.at) / 1000;
    return { tokens: Math.min(this.options.burst, bucket.tokens + elapsedSeconds * this.options.perSecond), at: now };
  }

  /** Now and then, drop buckets that have refilled completely, so memory follows active users. */
  private sweepNow(now: number): void {
    if (++this.takesSinceSweep < 1_000) return;
    this.takesSinceSweep = 0;
    for (const [key, bucket] of this.buckets) {
      if (this.refilled(bucket, now).tokens >= this.options.burst) this.buckets.delete(key);
    }
  }
}

/** Koa middleware, after authentication: one token per request of the calling user. */
export function rateLimitPerUser(buckets: TokenBuckets): Koa.Middleware<AuthenticatedState> {
  return async (ctx, next) => {
    const decision = buckets.take(ctx.state.device.userId);
    if (!decision.allowed) {
      throw new ApiError('rate_limited', 'too many requests; retry later', { 'Retry-After': String(decision.retryAfterSeconds) });
    }
    await next();
  };
}
