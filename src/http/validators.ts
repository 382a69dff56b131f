/**
 * Request validation: JSON bodies are checked against their schema's types exactly; query strings
 * and path parameters are text, so their values are coerced (`?num_results=5` is the integer 5).
 *
 * Fastify's one Ajv instance coerces every part alike, so a body's `"agree_to_terms": "true"` or
 * `1` passed as the boolean true and `"agent_name": 123` was stored as the name "123". Bodies now
 * get an Ajv of the same options but `coerceTypes: false`: a value of the wrong JSON type is the
 * field's validation error (its route's code). Everything else (formats, defaults, dropping unknown
 * fields: docs/decisions.md) is Fastify's default for both.
 */
import { AjvCompiler, type ValidatorFactory } from '@fastify/ajv-compiler';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema';

type Options = { customOptions?: Record<string, unknown> };
/** What the pool's compilers take at run time (its published types say a bare schema). */
type RouteCompiler = (route: FastifyRouteSchemaDef<unknown>) => unknown;
type Validate = ((data: unknown, ...rest: unknown[]) => boolean) & { errors?: unknown[] | null; schemaEnv?: unknown };

/**
 * A body schema's `minProperties` counts only the properties the schema names. Ajv counts every key,
 * and a field the schema does not name is ignored by the handler (docs/decisions.md), so `{"a":1}`
 * passed `minProperties: 1` and reached the store as nothing to change (an UPDATE with no SET: 500).
 * Such a body is the schema's failure: 422 VALIDATION_FAILED, naming the fields it may carry.
 */
function knownPropertiesCounted(route: FastifyRouteSchemaDef<unknown>, validate: Validate): Validate {
  const schema = route.schema as { minProperties?: number; properties?: Record<string, unknown> } | undefined;
  const min = schema?.minProperties;
  if (typeof min !== 'number' || !schema?.properties) return validate;
  const known = Object.keys(schema.properties);
  const checked: Validate = (data, ...rest) => {
    if (!validate(data, ...rest)) {
      checked.errors = validate.errors;
      return false;
    }
    if (data !== null && typeof data === 'object' && !Array.isArray(data) && known.filter((k) => Object.hasOwn(data, k)).length < min) {
      checked.errors = [{
        keyword: 'minProperties', instancePath: '', schemaPath: '#/minProperties', params: { limit: min },
        message: `must have at least ${min} of the fields ${known.join(', ')}`,
      }];
      return false;
    }
    checked.errors = null;
    return true;
  };
  // Fastify passes the parent object (Ajv may replace the root value) only to validators that have one.
  checked.schemaEnv = validate.schemaEnv;
  return checked;
}

/**
 * Compiled validators, kept for the whole process per Ajv options and shared schemas (as JSON), per
 * request part and schema object: a route's schemas are module constants, and every app built in the
 * process (tests build hundreds) would otherwise compile each again (about a tenth of a second per
 * app). A validator depends on its schema, its part (bodies are exact, the other parts coerce) and
 * those options only, never on the route or the app.
 */
const compiled = new Map<string, WeakMap<object, unknown>>();
const pool = AjvCompiler();

export function exactBodyValidators(): ValidatorFactory {
  const build = (externalSchemas: Record<string, never>, options?: Options): RouteCompiler => {
    const compilerFor = (o?: Options) => pool(externalSchemas, o) as unknown as RouteCompiler;
    const coercing = compilerFor(options);
    const exact = compilerFor({ ...options, customOptions: { ...options?.customOptions, coerceTypes: false } });
    const context = JSON.stringify([externalSchemas ?? {}, options ?? {}]);
    const make = (route: FastifyRouteSchemaDef<unknown>) =>
      route.httpPart === 'body' ? knownPropertiesCounted(route, exact(route) as Validate) : coercing(route);
    return (route) => {
      const schema = route.schema as unknown;
      if (schema === null || typeof schema !== 'object') return make(route);
      const key = `${route.httpPart}|${context}`;
      let cache = compiled.get(key);
      if (!cache) compiled.set(key, (cache = new WeakMap()));
      let validate = cache.get(schema);
      if (validate === undefined) cache.set(schema, (validate = make(route)));
      return validate;
    };
  };
  return build as unknown as ValidatorFactory;
}
