/**
 * docs/openapi.yaml, parsed, with a JSON Schema 2020-12 validator (ajv, as OpenAPI 3.1 uses)
 * for any schema in it by JSON pointer: the document's own judgement of what is valid.
 *
 *   const valid = validator('/components/schemas/RegistrationRequest');
 *   valid({ transport: 'fcm', token: 'dQw4w9WgXcQ:APA91bx' }); // true
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { projectRoot } from '../../src/process/paths.js';

type Json = Record<string, unknown>;

export interface RunTimeRule {
  readonly id: string;
  readonly description: string;
  readonly status: number;
  readonly error: string;
  /** What the answer's `message` starts with. */
  readonly message: string;
}

export interface Operation {
  readonly operationId: string;
  readonly parameters?: readonly Json[];
  readonly requestBody?: { readonly content: Record<string, { schema: Json }> };
  readonly responses: Record<string, Json>;
  readonly 'x-checked-at-run-time'?: readonly RunTimeRule[];
}

export const openApi = parse(readFileSync(path.join(projectRoot, 'docs', 'openapi.yaml'), 'utf8')) as {
  openapi: string;
  components: { schemas: Record<string, Json>; responses: Record<string, unknown>; headers: Record<string, unknown> };
  paths: Record<string, Record<string, Operation>>;
};

// Not strict: the document also holds OpenAPI keywords (discriminator, x-…) ajv does not know.
const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormatsModule as unknown as (instance: Ajv2020) => void)(ajv);
ajv.addSchema(openApi, 'openapi.json');

/** `/a/b~1c` for the path segments a, b/c. */
export const pointerOf = (...segments: string[]): string => segments.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

const compiled = new Map<string, ValidateFunction>();
export function validator(pointer: string): ValidateFunction {
  let validate = compiled.get(pointer);
  if (validate === undefined) {
    validate = ajv.getSchema(`openapi.json#${pointer}`);
    if (validate === undefined) throw new Error(`openapi.yaml has no schema at ${pointer}`);
    compiled.set(pointer, validate);
  }
  return validate;
}

/** The node at a JSON pointer into the document. */
export function nodeAt(pointer: string): unknown {
  let node: unknown = openApi;
  for (const segment of pointer.split('/').slice(1)) node = (node as Json)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
  return node;
}

/** Every operation with its method and path template. */
export function operations(): { method: string; template: string; operation: Operation }[] {
  return Object.entries(openApi.paths).flatMap(([template, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), template, operation })),
  );
}

export function operationById(operationId: string): { method: string; template: string; operation: Operation } {
  const found = operations().find((entry) => entry.operation.operationId === operationId);
  if (found === undefined) throw new Error(`openapi.yaml has no operation ${operationId}`);
  return found;
}
