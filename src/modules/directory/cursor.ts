/**
 * Directory cursors (GET /v1/agents next_cursor): opaque to clients, MACed by svc.
 *
 *   cursor  = base64url(payload JSON) "." base64url(HMAC-SHA256(key, "svc.directory.cursor.v1\n" + base64url(payload JSON)))
 *   payload = { v: 1, s: directory version the walk pages, t: when the walk began (ms),
 *               f: [agent_type, domain, bridge_only 0|1] the walk's filters, k: [order_score, created_at, agent_id] of the last row }
 *
 * Any change to a byte breaks the MAC; a cursor is also refused for other filters than its walk's
 * and once the walk is older than the cursor lifetime. Every refusal is 400 INVALID_DIRECTORY_CURSOR
 * with a `reason` (malformed, signature, filters, expired).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../../http/errors';
import { isUuid } from '../../lib/ids';

const SCHEME = 'svc.directory.cursor.v1\n';

export type Filters = [agentType: string | null, domain: string | null, bridgeOnly: 0 | 1];
export interface RankKey { order: number; created: number; id: string }
export interface CursorState { version: number; walkStart: number; filters: Filters; after: RankKey }

const refuse = (reason: string, message: string) => new ApiError(400, 'INVALID_DIRECTORY_CURSOR', message, { reason, field: 'querystring.cursor' });

export function createCursorCodec(key: string, ttlMs: number) {
  const mac = (body: string) => createHmac('sha256', key).update(SCHEME).update(body).digest();

  return {
    encode(c: CursorState): string {
      const body = Buffer.from(JSON.stringify({ v: 1, s: c.version, t: c.walkStart, f: c.filters, k: [c.after.order, c.after.created, c.after.id] })).toString('base64url');
      return `${body}.${mac(body).toString('base64url')}`;
    },

    /** The walk a cursor continues; refused unless svc made it, for these filters, within the lifetime. */
    decode(cursor: string, filters: Filters, now: number): CursorState {
      const parts = cursor.split('.');
      if (parts.length !== 2 || !/^[A-Za-z0-9_-]+$/.test(parts[0]) || !/^[A-Za-z0-9_-]{43}$/.test(parts[1])) {
        throw refuse('malformed', 'cursor is not a next_cursor this directory handed out; start again without it');
      }
      const given = Buffer.from(parts[1], 'base64url');
      const want = mac(parts[0]);
      if (given.length !== want.length || !timingSafeEqual(given, want)) {
        throw refuse('signature', 'cursor was not made by this directory or was altered; start again without it');
      }
      const p = parse(parts[0]);
      if (!p) throw refuse('malformed', 'cursor is not a next_cursor this directory handed out; start again without it');
      if (p.filters[0] !== filters[0] || p.filters[1] !== filters[1] || p.filters[2] !== filters[2]) {
        throw refuse('filters', 'cursor belongs to a walk with other filters (agent_type, domain, bridge_only): send the same filters, or start again without a cursor');
      }
      if (now - p.walkStart > ttlMs || p.walkStart - now > 60_000) {
        throw refuse('expired', `cursor expired: a walk of the directory lasts at most ${Math.round(ttlMs / 1000)} s from its first page; start again without a cursor`);
      }
      return p;
    },
  };
}

export type CursorCodec = ReturnType<typeof createCursorCodec>;

const int = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
const label = (x: unknown): x is string | null => x === null || (typeof x === 'string' && x.length <= 64);

function parse(body: string): CursorState | undefined {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const o = v as { v?: unknown; s?: unknown; t?: unknown; f?: unknown; k?: unknown };
  if (typeof v !== 'object' || v === null || o.v !== 1 || !int(o.s) || !int(o.t)) return undefined;
  const f = o.f as unknown[];
  const k = o.k as unknown[];
  if (!Array.isArray(f) || f.length !== 3 || !label(f[0]) || !label(f[1]) || (f[2] !== 0 && f[2] !== 1)) return undefined;
  if (!Array.isArray(k) || k.length !== 3 || !int(k[0]) || !int(k[1]) || !isUuid(k[2])) return undefined;
  return { version: o.s, walkStart: o.t, filters: [f[0], f[1], f[2]] as Filters, after: { order: k[0], created: k[1], id: k[2] } };
}
