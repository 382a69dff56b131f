import { Type } from 'typebox';
import { IsoTime, Nullable } from '../../http/response-schemas';

export const ActivityQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page, 1 to 100 (default 20)' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of the previous page' })),
  kinds: Type.Optional(Type.String({
    pattern: '^(browse|feedback|approval)(,(browse|feedback|approval))*$',
    description: 'Comma-separated kinds to include (browse, feedback, approval); default all',
  })),
});

export const ActivityValidationCodes = {
  'querystring.cursor': { status: 400, code: 'INVALID_ACTIVITY_CURSOR', message: 'cursor is not one this feed handed out; start again without it' },
  'querystring.kinds': { status: 422, code: 'INVALID_ACTIVITY_KIND', message: 'kinds is a comma-separated list of browse, feedback, approval' },
};

// ---- responses (objects closed: src/http/response-schemas.ts) ----

const Success = Type.String({ description: 'success' });

/** The top-level `usage` of a search response (search-usage.ts SearchUsage). */
export const SearchUsageSchema = Type.Object({
  calls_total: Type.Integer({ description: 'Search-pool calls (web and blob search) this UTC month' }),
  calls_remaining: Nullable(Type.Integer(), { description: 'Monthly tiers: what is left of the quota; credit tiers: null' }),
  over_limit: Type.Boolean(),
  upgrade_url: Type.String(),
  search_quota_period: Type.String({ description: 'trial_credits or monthly' }),
  search_calls_limit: Nullable(Type.Integer()),
  search_overage_rate_per_call: Nullable(Type.String({ description: 'USD, as a decimal string' })),
});

const PoolUsage = Type.Object({
  calls_this_month: Type.Integer(),
  monthly_limit: Nullable(Type.Integer()),
  remaining_this_month: Nullable(Type.Integer()),
  free_floor_30d: Nullable(Type.Integer()),
  free_remaining_30d: Nullable(Type.Integer()),
});

/** GET /v1/usage (history.ts usageHistory). */
export const UsageResponse = Type.Object({
  status: Success,
  tier: Type.String(),
  metering: Type.String({ description: 'credits or monthly' }),
  month: Type.String({ description: 'YYYY-MM (UTC)' }),
  calls_this_month: Type.Integer(),
  calls_remaining: Nullable(Type.Integer()),
  credits_remaining_usd: Type.String(),
  credits_staked_usd: Type.String(),
  pools: Type.Object({ search: PoolUsage, browse: PoolUsage, memory_write: PoolUsage, parse: PoolUsage }),
  daily: Type.Array(Type.Object({
    date: Type.String({ description: 'YYYY-MM-DD (UTC)' }),
    calls: Type.Integer(), search: Type.Integer(), browse: Type.Integer(), memory_write: Type.Integer(), parse: Type.Integer(),
  }), { minItems: 7, maxItems: 7, description: 'Oldest first, ending today' }),
}, { description: 'Metered calls this UTC month, what is left, and the last 7 days' });

const ActivityBase = { id: Type.String(), occurred_at: IsoTime() };

/** GET /v1/me/activity: items of each kind carry their fields under a property named after the kind. */
export const ActivityResponse = Type.Object({
  status: Success,
  items: Type.Array(Type.Union([
    Type.Object({
      kind: Type.Literal('browse'), ...ActivityBase,
      browse: Type.Object({
        browse_id: Type.String(), url: Type.String(), final_url: Type.String(), mode: Type.String(), http_status: Type.Integer(),
        content_type: Type.String(), title: Nullable(Type.String()), response_time_ms: Type.Integer(),
      }),
    }),
    Type.Object({
      kind: Type.Literal('feedback'), ...ActivityBase,
      feedback: Type.Object({ feedback_id: Type.String(), ref_type: Type.String(), ref_id: Type.String(), signal: Type.String(), note: Nullable(Type.String()) }),
    }),
    Type.Object({
      kind: Type.Literal('approval'), ...ActivityBase,
      approval: Type.Object({
        approval_id: Type.String(), action: Type.String(), decision: Type.String(), approver: Nullable(Type.String()), tool: Nullable(Type.String()),
        risk_class: Nullable(Type.String()), note: Nullable(Type.String()), decided_at: IsoTime(),
      }),
    }),
  ])),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last' })),
}, { description: 'A page of your activity, newest first' });

/** A monthly cap's standing (monthly-cap.ts capStanding), spread into feedback and approval answers. */
export const CapStandingFields = {
  month: Type.String({ description: 'YYYY-MM (UTC)' }),
  used_this_month: Type.Integer(),
  limit: Type.Integer(),
  remaining: Type.Integer(),
  resets_at: IsoTime(),
};
