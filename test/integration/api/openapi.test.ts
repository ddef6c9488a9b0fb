/**
 * docs/openapi.yaml describes exactly the device endpoints the app serves — no more, no
 * fewer — and every schema in it compiles. (That real responses match it is checked by every
 * other api test, through `checked()`.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { nextId } from './host.js';
import { operationById, operations } from '../../support/openapi-document.js';
import { openApi, validator } from './openapi.js';

let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  db = await freshDatabase();
  api = await startTestApi({ db, taskQueue: `api-openapi-${nextId()}` });
});

afterAll(async () => {
  await api?.close();
  await db?.drop();
});

interface RouterLike {
  stack: { path: string; methods: string[] }[];
}

/** `METHOD /path/{param}` of every route the app's routers serve (HEAD comes with GET). */
function servedOperations(): string[] {
  const routers = api.app.middleware.flatMap((middleware) => {
    const router = (middleware as { router?: RouterLike }).router;
    return router === undefined ? [] : [router];
  });
  return routers.flatMap((router) =>
    router.stack.flatMap((layer) =>
      layer.methods.filter((method) => method !== 'HEAD').map((method) => `${method} ${layer.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`),
    ),
  );
}

describe('docs/openapi.yaml', () => {
  it('is OpenAPI 3.1', () => {
    expect(openApi.openapi).toMatch(/^3\.1\.\d+$/);
  });

  it('documents exactly the device endpoints the app serves', () => {
    const documented = Object.entries(openApi.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    const operations = new Set(['/healthz', '/readyz', '/metrics'].map((path) => `GET ${path}`));
    const served = servedOperations().filter((operation) => !operations.has(operation));
    expect(served.sort()).toEqual(documented.sort());
    expect(documented).toHaveLength(7);
  });

  it('has schemas that all compile (JSON Schema 2020-12, as OpenAPI 3.1 uses)', () => {
    for (const name of Object.keys(openApi.components.schemas)) expect(() => validator(`/components/schemas/${name}`)).not.toThrow();
    for (const name of Object.keys(openApi.components.responses)) {
      expect(() => validator(`/components/responses/${name}/content/application~1json/schema`)).not.toThrow();
    }
    for (const name of Object.keys(openApi.components.headers)) expect(() => validator(`/components/headers/${name}/schema`)).not.toThrow();
  });

  it('links a registration to reading, deleting, draining and test-waking it, so stateful tools can chain them', () => {
    const links = (operationById('putRegistration').operation.responses['200']!['links'] ?? {}) as Record<string, { operationId: string }>;
    expect(
      Object.values(links)
        .map((link) => link.operationId)
        .sort(),
    ).toEqual(['deleteRegistration', 'drain', 'getRegistration', 'testWake']);
    for (const link of Object.values(links)) expect(() => operationById(link.operationId)).not.toThrow();
  });

  it('answers each rule checked at run time with a status and error the operation documents', () => {
    const errorCodes = (openApi.components.schemas['Error']!['properties'] as { error: { enum: string[] } }).error.enum;
    for (const { method, template, operation } of operations()) {
      for (const rule of operation['x-checked-at-run-time'] ?? []) {
        const where = `${method} ${template}: ${rule.id}`;
        expect(Object.keys(operation.responses), where).toContain(String(rule.status));
        expect(errorCodes, where).toContain(rule.error);
        expect(rule.message.length, where).toBeGreaterThan(0);
      }
    }
  });

  it('documents a 401 and a 429 for every operation, since every one is authenticated and limited', () => {
    for (const [path, item] of Object.entries(openApi.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '429']));
      }
    }
  });
});
