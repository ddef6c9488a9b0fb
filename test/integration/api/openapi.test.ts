/**
 * docs/openapi.yaml describes exactly the device endpoints the app serves — no more, no
 * fewer — and every schema in it compiles. (That real responses match it is checked by every
 * other api test, through `checked()`.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { nextId } from './host.js';
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
    expect(documented).toHaveLength(6);
  });

  it('has schemas that all compile (JSON Schema 2020-12, as OpenAPI 3.1 uses)', () => {
    for (const name of Object.keys(openApi.components.schemas)) expect(() => validator(`/components/schemas/${name}`)).not.toThrow();
    for (const name of Object.keys(openApi.components.responses)) {
      expect(() => validator(`/components/responses/${name}/content/application~1json/schema`)).not.toThrow();
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
