/**
 * Reads facts out of the live route table (enums, bounds, defaults of a route's schema), so the
 * capabilities document quotes what the routes actually validate instead of a second copy.
 * Everything returns undefined/[] when the route is not registered on this instance.
 */
import type { JsonSchema, RouteInfo, RouteTable } from './route-table';

export interface EndpointRef {
  method: string;
  path: string;
  auth: string;
  /** What a scoped key needs: a capability URI, or 'any' (every key of the agent). Absent on a key route: closed to scoped keys. */
  scope?: string;
  /** 'root': an optional route whose Bearer, when sent, must be the root key. */
  bearer?: 'root';
  summary: string;
}

export const endpointRef = (r: RouteInfo): EndpointRef => ({
  method: r.method, path: r.path, auth: r.auth, ...(r.scope !== undefined ? { scope: r.scope } : {}), ...(r.bearer ? { bearer: r.bearer } : {}), summary: r.summary,
});

/**
 * What a scoped key needs to call the route: a capability URI, 'any' (every key of the agent), or
 * null when scoped keys are refused (root routes; optional routes that take only the root key as
 * Bearer; key routes that declare no scope). Undefined for
 * routes that take no Bearer (public, admin).
 */
export function scopedKeyNeeds(r: Pick<RouteInfo, 'auth' | 'scope' | 'bearer'>): string | null | undefined {
  if (r.auth === 'none' || r.auth === 'admin') return undefined;
  if (r.auth === 'root' || r.bearer === 'root') return null;
  if (r.auth === 'optional') return r.scope ?? 'any';
  return r.scope ?? null;
}

/** Endpoints whose path matches, in table order. */
export function endpointsMatching(table: RouteTable, re: RegExp): EndpointRef[] {
  return table.all().filter((r) => re.test(r.path)).map(endpointRef);
}

type Part = 'params' | 'querystring' | 'body';

/** The schema of one field of a route, or undefined. */
export function fieldSchema(table: RouteTable, method: string, path: string, part: Part, field: string): JsonSchema | undefined {
  const r = table.find(method, path);
  return r?.[part]?.properties?.[field];
}

/** Allowed values of an enum-like field (enum, or a union of constants). */
export function enumOf(s: JsonSchema | undefined): string[] | undefined {
  if (!s) return undefined;
  if (Array.isArray(s.enum)) return s.enum;
  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts)) {
    const out = alts.flatMap((a: JsonSchema) => (a.const !== undefined ? [a.const] : Array.isArray(a.enum) ? a.enum : []));
    return out.length ? out : undefined;
  }
  return undefined;
}

/** min/max/default of a numeric or string field, as the schema states them. */
export function boundsOf(s: JsonSchema | undefined): Record<string, unknown> | undefined {
  if (!s) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of ['minimum', 'maximum', 'minLength', 'maxLength', 'default', 'pattern']) if (s[k] !== undefined) out[k] = s[k];
  return Object.keys(out).length ? out : undefined;
}

/** A copy of `s` with the rule's keywords; for a union, on each member that is not null. */
export function tightened(s: JsonSchema | undefined, extra: JsonSchema | undefined): JsonSchema | undefined {
  if (!s || !extra) return s;
  const alts = Array.isArray(s.anyOf) ? 'anyOf' : Array.isArray(s.oneOf) ? 'oneOf' : undefined;
  if (alts) return { ...s, [alts]: s[alts].map((m: JsonSchema) => (m.type === 'null' ? m : { ...m, ...extra })) };
  return { ...s, ...extra };
}
