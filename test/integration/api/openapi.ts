/**
 * Checks real responses against docs/openapi.yaml: the status must be one the operation
 * documents, and the body and headers must match its schema. Every request the api
 * integration tests make goes through `checked(api)`, so the document cannot drift.
 */
import { expect } from 'vitest';
import type { RequestOptions, TestApi, TestResponse } from '../../support/api.js';
import { nodeAt, openApi, validator } from '../../support/openapi-document.js';

export { openApi, validator };

interface HeaderSpec {
  readonly required?: boolean;
  readonly $ref?: string;
}
interface ResponseSpec {
  readonly content?: Record<string, unknown>;
  readonly headers?: Record<string, HeaderSpec>;
}

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** The documented path template a request path falls under, if any. */
export function documentedTemplate(requestPath: string): string | undefined {
  const pathOnly = requestPath.split('?')[0]!;
  return Object.keys(openApi.paths).find((template) => {
    const pattern = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
    return new RegExp(`^${pattern}$`).test(pathOnly);
  });
}

export function assertDocumented(method: string, requestPath: string, response: TestResponse): void {
  const template = documentedTemplate(requestPath);
  if (template === undefined) return;
  const where = `${method} ${requestPath} → ${response.status} ${response.text.slice(0, 300)}`;
  const verb = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  const operation = openApi.paths[template]![verb];
  if (verb === 'options' && response.status === 200) {
    // The router's own answer: the methods of the path, which must be the documented ones.
    const documented = Object.keys(openApi.paths[template]!).map((m) => m.toUpperCase());
    const allowed = String(response.headers['allow'])
      .split(/,\s*/)
      .filter((m) => m !== 'HEAD');
    expect(allowed.sort(), where).toEqual(documented.sort());
    return;
  }
  if (operation === undefined) {
    expect(response.status, where).toBe(405);
    if (method.toLowerCase() !== 'head') expectValid('/components/schemas/Error', response.json, where);
    return;
  }
  const base = `/paths/${escape(template)}/${verb}/responses/${response.status}`;
  let spec = operation.responses[String(response.status)] as (ResponseSpec & { $ref?: string }) | undefined;
  expect(spec, `undocumented status: ${where}`).toBeDefined();
  let pointer = base;
  if (spec!.$ref !== undefined) {
    pointer = spec!.$ref.slice(1);
    spec = validatorTarget(pointer);
  }
  checkHeaders(spec!, pointer, response, where);
  if (spec!.content === undefined) {
    expect(response.text, `a body where none is documented: ${where}`).toBe('');
    return;
  }
  if (method.toLowerCase() === 'head') return;
  expect(response.headers['content-type'], where).toMatch(/^application\/json/);
  expectValid(`${pointer}/content/application~1json/schema`, response.json, where);
}

function validatorTarget(pointer: string): ResponseSpec {
  return nodeAt(pointer) as ResponseSpec;
}

function checkHeaders(spec: ResponseSpec, pointer: string, response: TestResponse, where: string): void {
  for (const [name, declared] of Object.entries(spec.headers ?? {})) {
    const headerPointer = declared.$ref === undefined ? `${pointer}/headers/${escape(name)}` : declared.$ref.slice(1);
    const header = validatorTarget(headerPointer) as HeaderSpec;
    const value = response.headers[name.toLowerCase()];
    if (value === undefined) {
      expect(header.required ?? false, `missing header ${name}: ${where}`).toBe(false);
      continue;
    }
    const schemaPointer = `${headerPointer}/schema`;
    const schema = validatorTarget(schemaPointer) as { type?: string };
    expectValid(schemaPointer, schema.type === 'integer' ? Number(value) : value, `${name}: ${where}`);
  }
}

function expectValid(pointer: string, value: unknown, where: string): void {
  const validate = validator(pointer);
  const ok = validate(value);
  expect(ok, `${where}\n${JSON.stringify(validate.errors, null, 1)}`).toBe(true);
}

/** `api.request`, with every response checked against the document. */
export function checked(api: TestApi): (method: string, requestPath: string, options?: RequestOptions) => Promise<TestResponse> {
  return async (method, requestPath, options) => {
    const response = await api.request(method, requestPath, options);
    assertDocumented(method, requestPath, response);
    return response;
  };
}
