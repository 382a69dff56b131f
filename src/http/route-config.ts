// Brings @fastify/swagger's schema fields (summary, description, tags) into FastifySchema.
import type {} from '@fastify/swagger';
import type { ValidationCode } from './errors';
import type { Capability } from '../lib/capabilities';

/**
 * How a route authenticates. Unset means 'key': a route is protected unless it says otherwise.
 * none: public. optional: a valid Bearer is used when present (an invalid one is refused).
 * key: root key, scoped key or session token. root: the root key only. admin: X-Admin-Key.
 */
export type AuthMode = 'none' | 'optional' | 'key' | 'root' | 'admin';

export type KeyKind = 'root' | 'scoped' | 'session';

/**
 * What a scoped API key needs to call a route (route config `scope`): a capability URI the key must
 * hold, or 'any' for a route every key of the agent may call (its own record, usage, feedback).
 * A 'key' route that declares none is closed to scoped keys (root key and session tokens only);
 * an 'optional' route that declares none is open to them.
 */
export type RouteScope = Capability | 'any';

/**
 * A rule a route's handler enforces beyond its JSON schema, kept out of the schema so that the route
 * answers its own code (a blank search q is MEMORY_QUERY_REQUIRED, not VALIDATION_FAILED). Declared
 * on the route (config `inputRules`) so discovery states it in the tool definitions and the OpenAPI
 * document: a client that validates against them is not refused for input they allowed.
 */
export interface InputRule {
  part: 'params' | 'querystring' | 'body';
  field: string;
  required?: boolean;
  /** JSON Schema keywords added to the field's schema (to each non-null member of a union). */
  schema?: Record<string, unknown>;
}

export interface AuthContext {
  agentId: string;
  keyKind: KeyKind;
  scopes: string[];
  tier: string;
  createdAt: number;
  /** The request is made with an ephemeral passport's session (trust level `ephemeral`). */
  ephemeral?: boolean;
  /** The ephemeral passport whose session token made the request. */
  ephemeralPassportId?: string;
  /** A delegated key's write_set: it may use only routes of these tools (MCP tool names). */
  tools?: string[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    /** The capability a scoped key needs for this route (RouteScope); checked by the auth hook, stated by discovery. */
    scope?: RouteScope;
    /**
     * 'root': an 'optional' route whose Bearer, when one is sent, must be the root key (a scoped key or
     * session token gets 403 ROOT_KEY_REQUIRED); without one the handler authenticates the request
     * itself (a passport signature in the body).
     */
    bearer?: 'root';
    validationCodes?: Record<string, ValidationCode>;
    /** The answer to a body over the size limit, when one field is what makes a body large (memory PUT's value). */
    bodyTooLarge?: ValidationCode;
    /** Tags used by discovery (OpenAPI, capabilities, MCP). */
    summary?: string;
    /** For discovery (OpenAPI): the success statuses when not just 200, e.g. [201] or [201, 200]. */
    success?: number[];
    /** For discovery (OpenAPI): errors the route's own work can answer, beyond auth and input validation. */
    errors?: Record<number, string[]>;
    /** For discovery (tools, OpenAPI): what the handler checks beyond the schema (InputRule). */
    inputRules?: InputRule[];
    /**
     * Why this route's success body has no response schema (a body whose shape is not svc's, such as a
     * proxied stream): the test-mode response checks (src/http/response-validation.ts) and the
     * response schema test skip it. A route that sends HTML or bytes declares them instead:
     * `response: { 200: { description, content: { 'text/html': { schema: { type: 'string' } } } } }`.
     */
    responseSchemaExempt?: string;
  }
  interface FastifyRequest {
    auth?: AuthContext;
  }
}
