import { describe, expect, it } from 'vitest';
import { SchemaValidationError } from 'slonik';
import { sql } from 'slonik';
import { errorSummary } from '../../../src/observability/error-summary.js';

describe('errorSummary', () => {
  it("keeps names and messages but never a query's bound values, row or PostgreSQL's detail", () => {
    const endpoint = 'https://ntfy.example/up/very-secret-topic';
    const query = sql.unsafe`INSERT INTO push_registrations (token) VALUES (${endpoint})`;
    const cause = Object.assign(new Error('new row violates check constraint "push_registrations_keys_together"'), {
      code: '23514',
      constraint: 'push_registrations_keys_together',
      table: 'push_registrations',
      detail: `Failing row contains (1, 2, phone, unifiedpush, ${endpoint}).`,
    });
    const error = new SchemaValidationError({ sql: query.sql, values: query.values }, { token: endpoint }, []);
    Object.defineProperty(error, 'cause', { value: cause });

    const summary = errorSummary(error);
    expect(JSON.stringify(summary)).not.toContain('very-secret-topic');
    expect(summary).toMatchObject({
      name: 'SchemaValidationError',
      cause: { message: cause.message, code: '23514', constraint: 'push_registrations_keys_together', table: 'push_registrations' },
    });
  });

  it('leaves every message out when asked (a transport error may quote the endpoint)', () => {
    const error = new Error('cannot post to https://ntfy.example/up/very-secret-topic', {
      cause: new Error('https://ntfy.example/up/very-secret-topic refused'),
    });
    const summary = errorSummary(error, { message: false });
    expect(JSON.stringify(summary)).not.toContain('very-secret-topic');
    expect(summary).toMatchObject({ name: 'Error', cause: { name: 'Error' } });
  });

  it('describes what is not an Error by its type only', () => {
    expect(errorSummary('https://ntfy.example/secret')).toEqual({ type: 'string' });
  });
});
