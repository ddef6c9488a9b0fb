/**
 * The one way to describe an error in a log line (always under the key `err`) without its
 * secrets. Not the error itself: slonik's query errors carry the query's bound `values` (and
 * `row`), and PostgreSQL's `detail` quotes the failing row — for a registration that is the
 * push token and keys. Only names, messages, schema names and a few stack frames, down the
 * `cause` chain. Where even a message may quote a token or an endpoint (a transport's errors),
 * `{ message: false }` leaves the messages out.
 */
export function errorSummary(error: unknown, options: { readonly message?: boolean } = {}): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error };
  const fields = error as Error & { code?: unknown; constraint?: unknown; table?: unknown; column?: unknown };
  // slonik's errors keep the name 'Error'; their class says what they are.
  const name = error.name === 'Error' ? error.constructor.name : error.name;
  const summary: Record<string, unknown> = options.message === false ? { name } : { name, message: error.message };
  for (const key of ['code', 'constraint', 'table', 'column'] as const) {
    if (typeof fields[key] === 'string') summary[key] = fields[key];
  }
  if (error.stack !== undefined) summary['stack'] = error.stack.split('\n').slice(1, 6).join('\n');
  if (error.cause !== undefined) summary['cause'] = errorSummary(error.cause, options);
  return summary;
}
