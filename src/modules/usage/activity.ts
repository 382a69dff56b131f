/**
 * GET /v1/me/activity: the agent's own events from every registered source (browse, feedback and,
 * once that route exists, approval events), merged newest first and keyset-paginated.
 *
 * Each page asks every source for limit+1 items after the cursor, merges them in the feed's total
 * order (occurred_at desc, kind desc, id desc), and keeps `limit`. The cursor is the last item's
 * (occurred_at, kind, id), base64url JSON, so pages never repeat or skip items even when new
 * events arrive between requests. Searches are never in the feed (by the API contract).
 */
import { ApiError } from '../../http/errors';
import { iso } from '../../lib/clock';
import type { ActivityBound, ActivityItem, ActivitySource } from './activity-types';

/** Kinds the API names; a source for each may or may not be registered yet. */
export const ACTIVITY_KINDS = ['browse', 'feedback', 'approval'] as const;

interface Cursor { at: number; kind: string; id: string }

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.at, c.kind, c.id])).toString('base64url');
}

/** Control characters (NUL among them: PostgreSQL's text cannot hold it, the query failed with a 500) or a lone surrogate. */
const UNSAFE_ID_TEXT = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * A cursor is only what encodeCursor hands out: a non-negative epoch-ms, one of the feed's kinds and
 * an id of 1 to 128 printable characters. Anything else is 400 INVALID_ACTIVITY_CURSOR, decided here
 * before any store sees it (a NUL in the id reached PostgreSQL as a bind value and was a 500).
 */
export function decodeCursor(text: string): Cursor {
  try {
    const v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 3 && Number.isSafeInteger(v[0]) && v[0] >= 0
      && typeof v[1] === 'string' && (ACTIVITY_KINDS as readonly string[]).includes(v[1])
      && typeof v[2] === 'string' && v[2].length >= 1 && v[2].length <= 128 && !UNSAFE_ID_TEXT.test(v[2])) {
      return { at: v[0], kind: v[1], id: v[2] };
    }
  } catch {
    /* fall through */
  }
  throw new ApiError(400, 'INVALID_ACTIVITY_CURSOR', 'cursor is not one this feed handed out; start again without it');
}

/** Where a source of `kind` resumes after the cursor. */
export function boundFor(kind: string, c: Cursor): ActivityBound {
  if (kind < c.kind) return { at: c.at, sameAt: 'all' };
  if (kind > c.kind) return { at: c.at, sameAt: 'none' };
  return { at: c.at, sameAt: { idBelow: c.id } };
}

export function compareItems(a: ActivityItem, b: ActivityItem): number {
  if (a.at !== b.at) return b.at - a.at;
  if (a.kind !== b.kind) return a.kind < b.kind ? 1 : -1;
  return a.id === b.id ? 0 : a.id < b.id ? 1 : -1;
}

export function createActivityFeed(sources: () => ActivitySource[]) {
  return {
    async page(agentId: string, q: { limit: number; cursor?: string; kinds?: string[] }) {
      const cursor = q.cursor ? decodeCursor(q.cursor) : undefined;
      const wanted = sources().filter((s) => !q.kinds || q.kinds.includes(s.kind));
      const lists = await Promise.all(wanted.map((s) => s.page(agentId, q.limit + 1, cursor && boundFor(s.kind, cursor))));
      const merged = lists.flat().sort(compareItems);
      const items = merged.slice(0, q.limit);
      const hasMore = merged.length > q.limit;
      const last = items[items.length - 1];
      return {
        status: 'success',
        items: items.map((i) => ({ kind: i.kind, id: i.id, occurred_at: iso(i.at), [i.kind]: i.data })),
        has_more: hasMore,
        next_cursor: hasMore && last ? encodeCursor({ at: last.at, kind: last.kind, id: last.id }) : null,
      };
    },
  };
}

export type ActivityFeed = ReturnType<typeof createActivityFeed>;
