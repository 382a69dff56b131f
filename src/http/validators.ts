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

export function exactBodyValidators(): ValidatorFactory {
  const pool = AjvCompiler();
  const build = (externalSchemas: Record<string, never>, options?: Options): RouteCompiler => {
    const compilerFor = (o?: Options) => pool(externalSchemas, o) as unknown as RouteCompiler;
    const coercing = compilerFor(options);
    const exact = compilerFor({ ...options, customOptions: { ...options?.customOptions, coerceTypes: false } });
    return (route) => (route.httpPart === 'body' ? exact : coercing)(route);
  };
  return build as unknown as ValidatorFactory;
}
