/**
 * The live route table: every route registered on the app, collected with an onRoute hook that
 * app.ts installs before any module registers. Capabilities, OpenAPI decoration, MCP tool
 * definitions and the route-auth test all read this one list, so a route added later by any
 * module appears everywhere without anyone editing a document.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { AuthMode, InputRule, RouteScope } from '../../http/route-config';

export type JsonSchema = Record<string, any>;

export interface RouteInfo {
  method: string;
  /** Fastify form, e.g. /v1/memory/:key */
  url: string;
  /** OpenAPI form, e.g. /v1/memory/{key} */
  path: string;
  auth: AuthMode;
  /** What a scoped key needs (route config `scope`); undefined: a 'key' route closed to scoped keys, an open 'optional' one. */
  scope?: RouteScope;
  /** 'root': an 'optional' route that takes only the root key as Bearer (route config `bearer`). */
  bearer?: 'root';
  summary: string;
  description?: string;
  params?: JsonSchema;
  querystring?: JsonSchema;
  body?: JsonSchema;
  response?: Record<string, JsonSchema>;
  validationCodes: Record<string, { status: number; code: string; message?: string }>;
  /** Success statuses (default [200]). */
  success: number[];
  /** Errors of the route's own work (route config `errors`). */
  errors: Record<number, string[]>;
  /** Routes whose body is not JSON (blob upload) say which media types they take. */
  consumes?: string[];
  /** What the handler checks beyond the schema (route config `inputRules`). */
  inputRules: InputRule[];
}

export interface RouteTable {
  all(): RouteInfo[];
  find(method: string, path: string): RouteInfo | undefined;
}

export const toOpenApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function infoOf(opts: RouteOptions, method: string, url: string): RouteInfo {
  const schema = (opts.schema ?? {}) as Record<string, any>;
  const config = (opts.config ?? {}) as Record<string, any>;
  return {
    method,
    url,
    path: toOpenApiPath(url),
    auth: (config.auth as AuthMode | undefined) ?? 'key',
    scope: config.scope as RouteScope | undefined,
    bearer: config.bearer as 'root' | undefined,
    summary: schema.summary ?? config.summary ?? '',
    description: schema.description,
    params: schema.params,
    querystring: schema.querystring,
    body: schema.body,
    response: schema.response,
    validationCodes: config.validationCodes ?? {},
    success: config.success ?? [200],
    errors: config.errors ?? {},
    consumes: schema.consumes,
    inputRules: config.inputRules ?? [],
  };
}

/**
 * Installs the collecting hook; call before registering any module. A route's options are read when
 * the table is first asked, not when the route is added: a plugin's own onRoute hook runs after this
 * one and may still settle them. A hidden route (`schema.hide`: the reference page's assets) is not
 * an operation.
 */
export function createRouteTable(app: FastifyInstance): RouteTable {
  const added: { opts: RouteOptions; method: string; url: string }[] = [];
  let routes: RouteInfo[] | undefined;
  app.addHook('onRoute', (opts) => {
    const methods = Array.isArray(opts.method) ? opts.method : [opts.method];
    for (const m of methods) {
      // Fastify adds a HEAD twin to every GET; it is not a route of its own. An OPTIONS route answers
      // a browser's CORS preflight (/mcp): plumbing, not an operation.
      if (m === 'HEAD' || m === 'OPTIONS') continue;
      // The URL as added: Fastify rewrites opts.url when it adds a prefix's trailing-slash twin (/docs/).
      added.push({ opts, method: m.toUpperCase(), url: opts.url });
      routes = undefined;
    }
  });
  const current = (): RouteInfo[] => (routes ??= added
    .filter(({ opts }) => !(opts.schema as { hide?: boolean } | undefined)?.hide)
    .map(({ opts, method, url }) => infoOf(opts, method, url))
    .sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method)));
  const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
  return {
    all: () => [...current()],
    find(method, path) {
      const k = key(method, toOpenApiPath(path));
      return current().find((r) => key(r.method, r.path) === k);
    },
  };
}
