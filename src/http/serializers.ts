/**
 * Response serialisers, compiled once per schema object in the process. Every route declares the
 * shared error body (ErrorBody) for each of its error statuses (src/http/error-responses.ts): about
 * nine hundred status/route pairs that name the same schema object, and the success schemas are
 * module constants that every app built in the process (tests build hundreds) names again. Fastify
 * asks its compiler once per pair and app, and fast-json-stringify builds a new function each time
 * (about a tenth of a second of every app's start). A serialiser depends only on its schema, the
 * serialiser options and the app's shared schemas, never on the route, so one function per schema
 * object serves every route and app that share those.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Factory = ReturnType<typeof SerializerSelector>;
type Compile = ReturnType<Factory>;
type Serialize = ReturnType<Compile>;

/** Per options and shared schemas (as JSON), per schema object. */
const compiled = new Map<string, WeakMap<object, Serialize>>();
const select = SerializerSelector();

export function sharedSerializers(): Factory {
  return ((externalSchemas: Parameters<Factory>[0], options: Parameters<Factory>[1]) => {
    const compile = select(externalSchemas, options);
    const context = JSON.stringify([externalSchemas ?? {}, options ?? {}]);
    let bySchema = compiled.get(context);
    if (!bySchema) compiled.set(context, (bySchema = new WeakMap()));
    return ((route: Parameters<Compile>[0]) => {
      const schema = route.schema as unknown;
      if (schema === null || typeof schema !== 'object') return compile(route);
      let serialize = bySchema.get(schema);
      if (!serialize) {
        serialize = compile(route);
        bySchema.set(schema, serialize);
      }
      return serialize;
    }) as Compile;
  }) as Factory;
}
