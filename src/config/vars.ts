/**
 * zod types for single environment variables. Each turns a string (or nothing) into a value,
 * or fails with the problem phrased to follow the variable's name in a ConfigError. Values
 * are quoted back only where they cannot be secret.
 */
import { z } from 'zod';

type Ctx = z.RefinementCtx;

export function invalid(ctx: Ctx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER as never;
}

export const text = () => z.string().optional();

export function integer(fallback: number, min: number, max: number) {
  return z
    .string()
    .optional()
    .transform((value, ctx): number => {
      if (value === undefined) return fallback;
      const trimmed = value.trim();
      if (!/^\d+$/.test(trimmed) || Number(trimmed) < min || Number(trimmed) > max) {
        return invalid(ctx, `must be an integer from ${min} to ${max} (got "${value}")`);
      }
      return Number(trimmed);
    });
}

export const port = (fallback: number) => integer(fallback, 0, 65_535);

export function boolean(fallback: boolean) {
  return z
    .string()
    .optional()
    .transform((value, ctx): boolean => {
      const v = value?.trim().toLowerCase();
      if (v === undefined) return fallback;
      if (['true', '1', 'yes', 'on'].includes(v)) return true;
      if (['false', '0', 'no', 'off'].includes(v)) return false;
      return invalid(ctx, `must be true or false (got "${value}")`);
    });
}

export function oneOf<const T extends string>(allowed: readonly T[], fallback: T) {
  return z
    .string()
    .optional()
    .transform((value, ctx): T => {
      const v = value ?? fallback;
      return (allowed as readonly string[]).includes(v) ? (v as T) : invalid(ctx, `must be one of ${allowed.join(', ')} (got "${value}")`);
    });
}

export function identifier(fallback: string) {
  return z
    .string()
    .optional()
    .transform((value, ctx): string => {
      const v = value ?? fallback;
      return /^[A-Za-z0-9._-]{1,255}$/.test(v) ? v : invalid(ctx, `must be 1-255 characters of letters, digits, '.', '_' or '-' (got "${v}")`);
    });
}

export function hostPort(fallback: string) {
  return z
    .string()
    .optional()
    .transform((value, ctx): string => {
      const v = value ?? fallback;
      const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(v);
      return match !== null && Number(match[2]) >= 1 && Number(match[2]) <= 65_535 ? v : invalid(ctx, `must be host:port (got "${v}")`);
    });
}

export function hostName(fallback: string) {
  return z
    .string()
    .optional()
    .transform((value, ctx): string => {
      const v = value ?? fallback;
      return /^[A-Za-z0-9.:-]+$/.test(v) ? v : invalid(ctx, `must be a host name or IP address (got "${v}")`);
    });
}

/** An optional http(s) URL, without trailing slashes. */
export function httpUrl() {
  return z
    .string()
    .optional()
    .transform((value, ctx): string | undefined => {
      if (value === undefined) return undefined;
      const url = tryUrl(value);
      return url !== undefined && ['http:', 'https:'].includes(url.protocol) ? value.replace(/\/+$/, '') : invalid(ctx, 'must be an http(s) URL');
    });
}

export function tryUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

export function optionalHostName() {
  return z
    .string()
    .optional()
    .transform((value, ctx): string | undefined =>
      value === undefined || /^[A-Za-z0-9.:-]+$/.test(value) ? value : invalid(ctx, `must be a host name or IP address (got "${value}")`),
    );
}
