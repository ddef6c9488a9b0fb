/**
 * JSON schemas of Kubernetes objects for kubeconform, made offline from the pinned sources of
 * deploy/kubernetes-schemas.txt (files of Go modules that deploy/kubernetes-schemas.sh put in
 * Go's module cache): the API's OpenAPI document for built-in kinds, and CRDs for the rest.
 *
 * The conversion is the one behind the published kubernetes-json-schema sets
 * (openapi2jsonschema --kubernetes --strict): definitions become JSON schemas, int-or-string
 * becomes "string or integer", a Quantity "string or number", and every object that lists its
 * properties allows no others (what `kubectl --validate=strict` and the API server's field
 * validation refuse), unless it says it keeps unknown fields.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../../src/process/paths.js';

type Schema = { [key: string]: unknown };

interface Source {
  readonly name: string;
  readonly module: string;
  readonly file: string;
}

export function schemaSources(): Source[] {
  const text = readFileSync(path.join(projectRoot, 'deploy', 'kubernetes-schemas.txt'), 'utf8');
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [name, module, file] = line.split(/\s+/);
      return { name: name!, module: module!, file: file! };
    });
}

/** The file of a source, from Go's module cache; never from the network (GOPROXY=off). */
export function sourceFile(source: Source): string {
  let out: string;
  try {
    out = execFileSync('go', ['mod', 'download', '-json', source.module], {
      env: { ...process.env, GOPROXY: 'off', GOFLAGS: '-mod=mod' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const detail = (error as { stdout?: string }).stdout ?? String(error);
    throw new Error(`${source.module} is not in Go's module cache: run deploy/kubernetes-schemas.sh (make test does) — ${detail.trim()}`, {
      cause: error,
    });
  }
  const { Dir: dir } = JSON.parse(out) as { Dir: string };
  return path.join(dir, source.file);
}

export interface SchemaSet {
  /** kubeconform's -schema-location for this set. */
  readonly location: string;
  /** The Kubernetes version the built-in kinds come from, e.g. "v1.37.2". */
  readonly kubernetesVersion: string;
}

/**
 * Writes one schema file per kind named `<kind>-<group prefix>-<version>.json` (kubeconform's
 * `{{.ResourceKind}}{{.KindSuffix}}` naming) into `dir`, for every built-in kind of the
 * Kubernetes source and every version of the CRD sources.
 */
export function writeSchemaSet(dir: string): SchemaSet {
  mkdirSync(dir, { recursive: true });
  let kubernetesVersion = '';
  for (const source of schemaSources()) {
    const file = sourceFile(source);
    if (file.endsWith('swagger.json')) {
      kubernetesVersion = source.module.slice(source.module.lastIndexOf('@') + 1);
      writeBuiltInSchemas(dir, JSON.parse(readFileSync(file, 'utf8')) as { definitions: Record<string, Schema> });
    } else {
      writeCrdSchemas(dir, parse(readFileSync(file, 'utf8')) as CustomResourceDefinition);
    }
  }
  if (kubernetesVersion === '') throw new Error('deploy/kubernetes-schemas.txt names no Kubernetes OpenAPI document');
  return { location: path.join(dir, '{{.ResourceKind}}{{.KindSuffix}}.json'), kubernetesVersion };
}

function fileName(group: string, version: string, kind: string): string {
  // kubeconform: "-" + first label of the group (none for the core group) + "-" + version.
  const prefix = group === '' ? '' : `-${group.split('.')[0]!.toLowerCase()}`;
  return `${kind.toLowerCase()}${prefix}-${version.toLowerCase()}.json`;
}

const intOrString = { oneOf: [{ type: 'string' }, { type: 'integer' }] };
const quantity = { oneOf: [{ type: 'string' }, { type: 'number' }] };

function writeBuiltInSchemas(dir: string, document: { definitions: Record<string, Schema> }): void {
  const definitions: Record<string, Schema> = {};
  for (const [name, definition] of Object.entries(document.definitions)) {
    if (name === 'io.k8s.apimachinery.pkg.util.intstr.IntOrString') definitions[name] = intOrString;
    else if (name === 'io.k8s.apimachinery.pkg.api.resource.Quantity') definitions[name] = quantity;
    else definitions[name] = strict(definition) as Schema;
  }
  for (const [name, definition] of Object.entries(document.definitions)) {
    const kinds = definition['x-kubernetes-group-version-kind'] as Array<{ group: string; version: string; kind: string }> | undefined;
    for (const gvk of kinds ?? []) {
      const reachable = closure(name, definitions);
      const schema = { $schema: 'http://json-schema.org/draft-07/schema#', $ref: `#/definitions/${name}`, definitions: reachable };
      writeFileSync(path.join(dir, fileName(gvk.group, gvk.version, gvk.kind)), JSON.stringify(schema));
    }
  }
}

interface CustomResourceDefinition {
  readonly spec: {
    readonly group: string;
    readonly names: { readonly kind: string };
    readonly versions: ReadonlyArray<{ readonly name: string; readonly schema: { readonly openAPIV3Schema: Schema } }>;
  };
}

function writeCrdSchemas(dir: string, crd: CustomResourceDefinition): void {
  for (const version of crd.spec.versions) {
    const schema = { $schema: 'http://json-schema.org/draft-07/schema#', ...(strict(version.schema.openAPIV3Schema) as Schema) };
    writeFileSync(path.join(dir, fileName(crd.spec.group, version.name, crd.spec.names.kind)), JSON.stringify(schema));
  }
}

/** The schema with no unknown properties allowed where it lists properties, and int-or-string spelled out. */
function strict(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strict);
  if (node === null || typeof node !== 'object') return node;
  const schema = node as Schema;
  if (schema['x-kubernetes-int-or-string'] === true || schema.format === 'int-or-string') return intOrString;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) out[key] = key === 'enum' || key === 'default' || key === 'example' ? value : strict(value);
  if ('properties' in schema && !('additionalProperties' in schema) && schema['x-kubernetes-preserve-unknown-fields'] !== true)
    out.additionalProperties = false;
  return out;
}

/** The definitions `name` needs, itself included. */
function closure(name: string, definitions: Record<string, Schema>): Record<string, Schema> {
  const found: Record<string, Schema> = {};
  const pending = [name];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (next in found) continue;
    const definition = definitions[next];
    if (definition === undefined) throw new Error(`the OpenAPI document refers to a missing definition ${next}`);
    found[next] = definition;
    for (const match of JSON.stringify(definition).matchAll(/"#\/definitions\/([^"]+)"/g)) pending.push(match[1]!);
  }
  return found;
}
