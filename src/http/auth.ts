import type { FastifyInstance, FastifyRequest } from 'fastify';
import { safeEqual } from '../lib/hash';
import { ApiError } from './errors';
import type { AuthContext, AuthMode } from './route-config';

export interface Authenticator {
  /** Resolves a presented Bearer token (root key, scoped key or session token); undefined when invalid. */
  authenticate(token: string): Promise<AuthContext | undefined>;
}

// A 401 names the scheme it wants (RFC 9110 15.5.2): Bearer, with an svc_ key or svc_session_ token.
const invalidKey = (registerUrl = '/v1/register') =>
  new ApiError(401, 'INVALID_API_KEY', 'Missing or invalid API key: send Authorization: Bearer svc_...', {
    register_url: registerUrl,
  }, { 'www-authenticate': 'Bearer realm="svc"' });

/** Node keeps only the first of several Authorization headers; a proxy in front may read another. */
function authorizationHeaders(request: FastifyRequest): number {
  const raw = request.raw.rawHeaders;
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 13 && raw[i].toLowerCase() === 'authorization') n++;
  return n;
}

/**
 * The Bearer token; '' for an Authorization header that holds none and for two headers, whatever they
 * hold (an empty first one included: Node keeps it, a proxy in front may read the second); undefined
 * without one (or with one empty header).
 */
function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  if (authorizationHeaders(request) !== 1) return '';
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : '';
}

export function authModeOf(request: FastifyRequest): AuthMode {
  return request.routeOptions.config?.auth ?? 'key';
}

/**
 * One onRequest hook enforces the route's declared auth mode; handlers read `request.auth`.
 * Unknown routes (404) are left to the not-found handler.
 */
export function installAuth(app: FastifyInstance, deps: {
  authenticator: Authenticator; adminKey?: string; baseUrl?: string;
  /** The tools (MCP names) whose actions call a route (method, OpenAPI path): a delegated key's write_set is checked against them. */
  toolsOfRoute?: (method: string, path: string) => readonly string[];
}): void {
  // Absolute, like every other link svc hands out.
  const refused = () => invalidKey(deps.baseUrl ? `${deps.baseUrl}/v1/register` : undefined);
  app.addHook('onRequest', async (request) => {
    if (request.is404) return;
    const mode = authModeOf(request);
    if (mode === 'none') return;
    if (mode === 'admin') {
      if (!deps.adminKey) throw new ApiError(503, 'ADMIN_NOT_CONFIGURED', 'Admin routes are disabled: SVC_ADMIN_KEY is not set');
      const given = request.headers['x-admin-key'];
      if (typeof given !== 'string' || !safeEqual(given, deps.adminKey)) {
        throw new ApiError(401, 'INVALID_ADMIN_KEY', 'Missing or invalid X-Admin-Key');
      }
      return;
    }
    const token = bearerOf(request);
    if (token === undefined) {
      if (mode === 'optional') return;
      throw refused();
    }
    const ctx = token ? await deps.authenticator.authenticate(token) : undefined;
    if (!ctx) throw refused();
    if ((mode === 'root' || request.routeOptions.config?.bearer === 'root') && ctx.keyKind !== 'root') {
      throw new ApiError(403, 'ROOT_KEY_REQUIRED', 'This route needs the root API key; a scoped key or session token does not suffice');
    }
    if (ctx.keyKind === 'scoped') scopeCheck(request, mode, ctx);
    if (ctx.tools) writeSetCheck(request, ctx.tools, deps.toolsOfRoute);
    request.auth = ctx;
  });
}

/**
 * A scoped key calls only routes within its scopes: a route's `scope` names the capability it needs
 * ('any': every key of the agent). A 'key' route without one is closed to scoped keys; an
 * 'optional' route without one is open. Outside its scopes: 403 SCOPE_NOT_GRANTED naming the scope.
 */
function scopeCheck(request: FastifyRequest, mode: AuthMode, ctx: AuthContext): void {
  const scope = request.routeOptions.config?.scope;
  if (scope === 'any' || (scope === undefined && mode === 'optional')) return;
  if (scope !== undefined && ctx.scopes.includes(scope)) return;
  throw new ApiError(403, 'SCOPE_NOT_GRANTED', scope === undefined
    ? 'This route is not open to scoped keys: use the root API key or a passport session token'
    : `This scoped key does not grant ${scope}: create a key with that scope (POST /v1/me/keys) or use the root API key`,
  { required_scope: scope ?? null, key_scopes: ctx.scopes });
}

/**
 * A delegated key uses only the tools of its write_set: a route that is an action of some tool must be
 * an action of one of them (403 SCOPE_NOT_GRANTED naming the tools that would do); a route of no tool
 * (the MCP endpoint, usage) follows the scope rules alone.
 */
function writeSetCheck(request: FastifyRequest, writeSet: string[], toolsOfRoute?: (method: string, path: string) => readonly string[]): void {
  if (!toolsOfRoute) return;
  const method = request.method === 'HEAD' ? 'GET' : request.method;
  const tools = toolsOfRoute(method, (request.routeOptions.url ?? '').replace(/:([A-Za-z0-9_]+)/g, '{$1}'));
  if (tools.length === 0 || tools.some((t) => writeSet.includes(t))) return;
  throw new ApiError(403, 'SCOPE_NOT_GRANTED', `This delegated key may use only the tools of its write_set (${writeSet.join(', ')}); this route belongs to ${tools.join(', ')}`,
    { required_scope: request.routeOptions.config?.scope ?? null, required_tools: [...tools], key_write_set: writeSet });
}

/** The authenticated agent of a 'key'/'root' route (the hook guarantees it). */
export function agentOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw invalidKey();
  return request.auth;
}
