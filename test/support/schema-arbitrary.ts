/**
 * fast-check arbitraries read off a JSON Schema of docs/openapi.yaml — what a client generator
 * or a contract-testing tool would derive from the document, not hand-written cases.
 *
 * `valuesOf(pointer)` yields values the schema allows (from its `const`, `enum`, `pattern`,
 * lengths, `properties`/`required`, `oneOf`/`anyOf`, `examples`…) mixed with near misses of
 * them: one rule broken — a character inserted, a length one past its bound, a required
 * property dropped, a property of the wrong type or of another branch, the discriminator
 * switched. Which is which is never taken from the generator's intent: `classify` asks the
 * document's own validator. Keywords it does not know make it throw, so the document cannot
 * grow a rule the generator silently ignores.
 */
import fc from 'fast-check';
import { nodeAt, validator } from './openapi-document.js';

type Schema = Record<string, unknown>;

/** Schema keywords this generator understands (annotations included). */
const understood = new Set([
  '$ref',
  'type',
  'const',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'format',
  'properties',
  'required',
  'additionalProperties',
  'oneOf',
  'anyOf',
  'discriminator',
  'examples',
  'description',
  'title',
]);

const resolve = (schema: Schema): Schema => (typeof schema['$ref'] === 'string' ? resolve(nodeAt(schema['$ref'].slice(1)) as Schema) : schema);

function check(schema: Schema): void {
  for (const keyword of Object.keys(schema)) {
    if (!understood.has(keyword)) throw new Error(`schema-arbitrary does not understand "${keyword}" in ${JSON.stringify(schema).slice(0, 200)}`);
  }
}

/** Characters that break one rule or another of the document's string patterns. */
const oddCharacter = fc.oneof(
  fc.constantFrom(' ', '\t', '\n', '\u0000', '\u007f', '\u0085', '\u00a0', '\u2028', '\ufeff', '\ud800', 'é', '😀', 'ü'),
  fc.constantFrom('%', '\\', '@', ':', '[', ']', '#', '?', '/', '=', '.', '"', '{', '|', '^', '`', '<', '>', '+', '~'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);

const anyJson = fc.jsonValue({ maxDepth: 2 });
const jsonOfAnotherKind = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
  fc.string(),
);

/** Values the schema allows (checked against the document: the generator only proposes). */
export function validOf(schema: Schema): fc.Arbitrary<unknown> {
  return proposeValid(schema).filter((value) => accepts(schema, value));
}

/** One arbitrary per schema node: building one (a pattern's parser above all) is the slow part. */
function memoized(
  cache: WeakMap<Schema, fc.Arbitrary<unknown>>,
  build: (schema: Schema) => fc.Arbitrary<unknown>,
): (schema: Schema) => fc.Arbitrary<unknown> {
  return (schemaOrRef) => {
    const schema = resolve(schemaOrRef);
    let arbitrary = cache.get(schema);
    if (arbitrary === undefined) {
      check(schema);
      arbitrary = build(schema);
      cache.set(schema, arbitrary);
    }
    return arbitrary;
  };
}

const proposeValid = memoized(new WeakMap(), (schema) => {
  const examples = Array.isArray(schema['examples']) ? (schema['examples'] as unknown[]) : [];
  const generated = proposeFromKeywords(schema);
  return examples.length === 0 ? generated : fc.oneof({ arbitrary: fc.constantFrom(...examples), weight: 1 }, { arbitrary: generated, weight: 2 });
});

function proposeFromKeywords(schema: Schema): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema['const']);
  if (Array.isArray(schema['enum'])) return fc.constantFrom(...(schema['enum'] as unknown[]));
  const branches = (schema['oneOf'] ?? schema['anyOf']) as Schema[] | undefined;
  const types = typesOf(schema);
  if (branches !== undefined && types.length === 0 && schema['properties'] === undefined) return fc.oneof(...branches.map(proposeValid));
  // Branches beside properties narrow them (e.g. "both keys or neither"): propose from the
  // properties and let the document's validator keep what fits.
  return fc.oneof(...types.map((type) => proposeOfType(schema, type)));
}

function typesOf(schema: Schema): string[] {
  const type = schema['type'];
  if (typeof type === 'string') return [type];
  if (Array.isArray(type)) return type as string[];
  if (schema['properties'] !== undefined) return ['object'];
  return [];
}

function proposeOfType(schema: Schema, type: string): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer();
    case 'string':
      return proposeString(schema);
    case 'object':
      return proposeObject(schema);
    default:
      throw new Error(`schema-arbitrary does not generate type ${type}`);
  }
}

function proposeString(schema: Schema): fc.Arbitrary<string> {
  const minLength = (schema['minLength'] as number | undefined) ?? 0;
  const maxLength = schema['maxLength'] as number | undefined;
  const pattern = schema['pattern'] as string | undefined;
  const base =
    pattern === undefined
      ? fc.string({ unit: 'grapheme', minLength, maxLength: Math.min(maxLength ?? 40, 40) })
      : fc.stringMatching(new RegExp(pattern, 'u'));
  // Also right at the length bounds, where off-by-one rules live.
  const atBounds = maxLength === undefined ? [] : [base.map((text) => stretch(text, maxLength))];
  return fc.oneof({ arbitrary: base, weight: 4 }, ...atBounds.map((arbitrary) => ({ arbitrary, weight: 1 })));
}

/** `text` made exactly `length` code points long by repeating its last character (or cut). */
function stretch(text: string, length: number): string {
  const points = [...text];
  if (points.length === 0) return text;
  if (points.length >= length) return points.slice(0, length).join('');
  return points.join('') + points[points.length - 1]!.repeat(length - points.length);
}

function proposeObject(schema: Schema): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema['properties'] ?? {}) as Record<string, Schema>;
  const required = (schema['required'] ?? []) as string[];
  const record = fc.record(Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, proposeValid(property)])), {
    requiredKeys: required.filter((name) => name in properties),
  });
  if (schema['additionalProperties'] === false) return record;
  // Unknown fields are allowed (and, by the document, ignored): sometimes send some.
  const unknown = fc.dictionary(
    fc.string({ minLength: 1, maxLength: 12 }).filter((name) => !(name in properties) && name !== '__proto__'),
    fc.oneof({ arbitrary: anyJson, weight: 4 }, { arbitrary: fc.nat({ max: 6_000 }).map((n) => 'x'.repeat(n)), weight: 1 }),
    { maxKeys: 3 },
  );
  return fc.tuple(record, fc.option(unknown, { freq: 3 })).map(([known, extra]) => ({ ...(extra ?? {}), ...known }));
}

type Weighted = { arbitrary: fc.Arbitrary<unknown>; weight: number };
const weighted = (weight: number, ...arbitraries: fc.Arbitrary<unknown>[]): Weighted[] => arbitraries.map((arbitrary) => ({ arbitrary, weight }));

/**
 * Near misses of the schema: a valid value with one rule broken (or not: `classify` decides).
 * Weighted towards breaking one leaf inside an otherwise valid value, where a validator and
 * the document are most likely to part ways, over whole values of the wrong kind.
 */
export const nearMissOf = memoized(new WeakMap(), (schema) => {
  const misses: Weighted[] = weighted(1, jsonOfAnotherKind);
  const valid = proposeValid(schema);
  if ('const' in schema || Array.isArray(schema['enum'])) {
    misses.push(
      ...weighted(
        2,
        valid.map((value) => (typeof value === 'string' ? value.toUpperCase() : value)),
        fc.string({ maxLength: 12 }),
      ),
    );
  }
  const branches = (schema['oneOf'] ?? schema['anyOf']) as Schema[] | undefined;
  if (branches !== undefined) misses.push(...weighted(6, ...branches.map(nearMissOf)), ...weighted(1, ...crossBranch(branches)));
  const types = typesOf(schema);
  if (types.includes('string')) misses.push(...stringMisses(schema, valid));
  if (types.includes('object')) misses.push(...objectMisses(schema));
  return fc.oneof(...misses);
});

function stringMisses(schema: Schema, valid: fc.Arbitrary<unknown>): Weighted[] {
  const strings = valid.filter((value): value is string => typeof value === 'string');
  const misses: Weighted[] = [
    ...weighted(1, fc.string({ unit: 'binary', maxLength: 60 })),
    ...weighted(
      4,
      fc.tuple(strings, oddCharacter, fc.nat()).map(([text, odd, at]) => insertAt(text, odd, at)),
    ),
    ...weighted(
      4,
      fc.tuple(strings, oddCharacter, fc.nat()).map(([text, odd, at]) => replaceAt(text, odd, at)),
    ),
    ...weighted(
      1,
      fc.tuple(strings, fc.nat()).map(([text, at]) => removeAt(text, at)),
    ),
  ];
  const maxLength = schema['maxLength'] as number | undefined;
  if (maxLength !== undefined)
    misses.push(
      ...weighted(
        1,
        strings.map((text) => stretch(text, maxLength + 1)),
      ),
    );
  if (((schema['minLength'] as number | undefined) ?? 0) > 0) misses.push(...weighted(1, fc.constant('')));
  return misses;
}

function objectMisses(schema: Schema): Weighted[] {
  const properties = (schema['properties'] ?? {}) as Record<string, Schema>;
  const required = (schema['required'] ?? []) as string[];
  const valid = proposeObject(schema);
  const misses: Weighted[] = [];
  if (required.length > 0) {
    misses.push(
      ...weighted(
        1,
        fc.tuple(valid, fc.constantFrom(...required)).map(([object, name]) => without(object, name)),
      ),
    );
  }
  for (const [name, property] of Object.entries(properties)) {
    misses.push(
      ...weighted(
        3,
        fc.tuple(valid, nearMissOf(property)).map(([object, value]) => ({ ...object, [name]: value })),
      ),
    );
  }
  return misses;
}

/** A value of one branch with the discriminating property of another (`transport` swapped). */
function crossBranch(branches: Schema[]): fc.Arbitrary<unknown>[] {
  if (branches.length < 2) return [];
  const resolved = branches.map(resolve);
  const tags = resolved.map((branch) =>
    Object.entries((branch['properties'] ?? {}) as Record<string, Schema>).find(([, property]) => 'const' in property),
  );
  if (tags.some((tag) => tag === undefined)) return [];
  return resolved.map((branch, index) =>
    fc
      .tuple(proposeValid(branch), fc.constantFrom(...tags.filter((_, other) => other !== index)))
      .map(([value, tag]) => (typeof value === 'object' && value !== null ? { ...value, [tag![0]]: tag![1]['const'] } : value)),
  );
}

const insertAt = (text: string, odd: string, at: number) => {
  const points = [...text];
  const index = at % (points.length + 1);
  return [...points.slice(0, index), odd, ...points.slice(index)].join('');
};
const removeAt = (text: string, at: number) => {
  const points = [...text];
  if (points.length === 0) return text;
  const index = at % points.length;
  return [...points.slice(0, index), ...points.slice(index + 1)].join('');
};
const replaceAt = (text: string, odd: string, at: number) => {
  const points = [...text];
  if (points.length === 0) return odd;
  const index = at % points.length;
  return [...points.slice(0, index), odd, ...points.slice(index + 1)].join('');
};
const without = (object: Record<string, unknown>, name: string) => Object.fromEntries(Object.entries(object).filter(([key]) => key !== name));

function accepts(schema: Schema, value: unknown): boolean {
  const ref = schema['$ref'];
  if (typeof ref !== 'string') throw new Error('validOf and valuesOf take a { $ref } into the document, so that its validator judges');
  return validator(ref.slice(1))(value) === true;
}

/** What the document says of a value. */
export function classify(pointer: string, value: unknown): 'valid' | 'invalid' {
  return validator(pointer)(value) === true ? 'valid' : 'invalid';
}

/** Values for the schema at `pointer`, valid and near misses alike, with the document's verdict. */
export function valuesOf(pointer: string, options: { validWeight?: number } = {}): fc.Arbitrary<{ value: unknown; verdict: 'valid' | 'invalid' }> {
  const schema = { $ref: `#${pointer}` };
  return fc
    .oneof({ arbitrary: validOf(schema), weight: options.validWeight ?? 1 }, { arbitrary: nearMissOf(schema), weight: 1 })
    .map((value) => ({ value, verdict: classify(pointer, value) }));
}
