/**
 * Every route declares the shared error body (ErrorBody) for each error status it can answer: the
 * ones its configuration implies (auth → 401/403, a body → 400/413/415, parameters → 414, validation
 * → 422, 500 and 503 everywhere) and the ones it names in `config.errors` / `validationCodes`. They
 * are added here, once, when the route is registered, from the same rules the OpenAPI document
 * states (discovery's errorCodesOf), so a module author declares only success bodies and lists the
 * route's own error codes in `config.errors`. A status the route's schema already declares is kept.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { errorCodesOf } from '../modules/discovery/openapi';
import type { RouteInfo } from '../modules/discovery/route-table';
import { ErrorBody } from './response-schemas';

/** The error statuses a route can answer because of its configuration. */
export function configuredErrorStatuses(opts: Pick<RouteOptions, 'schema' | 'config' | 'method'>): number[] {
  const schema = (opts.schema ?? {}) as Record<string, any>;
  const config = (opts.config ?? {}) as Record<string, any>;
  const statuses = new Set<number>();
  for (const method of [opts.method].flat()) {
    const info = {
      method: String(method).toUpperCase(), auth: config.auth ?? 'key', scope: config.scope, bearer: config.bearer,
      params: schema.params, querystring: schema.querystring, body: schema.body, consumes: schema.consumes,
      validationCodes: config.validationCodes ?? {}, errors: config.errors ?? {},
    } as RouteInfo;
    for (const status of errorCodesOf(info).keys()) statuses.add(status);
  }
  return [...statuses].sort((a, b) => a - b);
}

/** A route as registered: what the response schema test reads. */
export interface DeclaredRoute { method: string; url: string; schema: Record<string, any>; config: Record<string, any> }
const declared = new WeakMap<FastifyInstance, DeclaredRoute[]>();

/** Every route registered on the app since installSharedErrorResponses, with its final schema (HEAD twins left out). */
export const declaredRoutes = (app: FastifyInstance): DeclaredRoute[] => [...(declared.get(app) ?? [])];

/** Adds ErrorBody under each configured error status to every route registered after this call. */
export function installSharedErrorResponses(app: FastifyInstance): void {
  const routes: DeclaredRoute[] = [];
  declared.set(app, routes);
  app.addHook('onRoute', (opts) => {
    for (const method of [opts.method].flat()) {
      // Read when asked: a plugin's own onRoute hook, which runs after this one, may still settle them.
      if (method !== 'HEAD') {
        routes.push({
          method, url: opts.url,
          get schema() { return (opts.schema ?? {}) as Record<string, any>; },
          get config() { return (opts.config ?? {}) as Record<string, any>; },
        });
      }
    }
    const schema = (opts.schema ?? {}) as Record<string, any>;
    const response = (schema.response ?? {}) as Record<string, unknown>;
    const added: Record<string, unknown> = {};
    for (const status of configuredErrorStatuses(opts)) if (!(status in response)) added[status] = ErrorBody;
    // A copy: a module may share one response map between routes.
    opts.schema = { ...schema, response: { ...added, ...response } };
  });
}
