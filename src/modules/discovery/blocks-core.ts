/**
 * Capabilities blocks about access and money: authentication, rate limits, tiers, pricing,
 * referral rewards. Numbers come from src/lib/tiers.ts, the identity module's constants and
 * the configuration; endpoint lists come from the live route table.
 */
import { FREE_FLOORS, PRICING_BLOCK } from '../billing/pricing';
import {
  NETWORK_DAILY_CAP, PER_REFERRER_DAILY_CAP, REFERRAL_CREDIT_UNITS, REFERRAL_WINDOW_DAYS, REFERRER_MIN_AGE_DAYS,
} from '../billing/referrals';
import type { Config } from '../../config';
import { PASSPORT_CHALLENGE_SCHEME } from '../../lib/signing';
import { TIERS } from '../../lib/tiers';
import { API_KEY_PREFIX, MAX_ACTIVE_SCOPED_KEYS, SESSION_PREFIX, SESSION_TTL_SECONDS } from '../identity/service';
import type { RouteTable } from './route-table';
import { CAPABILITIES } from '../../lib/capabilities';
import { endpointRef, endpointsMatching, scopedKeyNeeds } from './schema-facts';

export interface BlockContext {
  config: Config;
  table: RouteTable;
  baseUrl: string;
  /** The trust log's checkpoint origin and signing key (published so checkpoints can be verified). */
  trustLog?: { origin: string; verifier_key: string; public_key: string };
}

const tierRows = () => Object.values(TIERS);

export function authenticationBlock({ table, baseUrl }: BlockContext) {
  const by = (modes: string[]) => table.all().filter((r) => modes.includes(r.auth)).map((r) => `${r.method} ${r.path}`);
  return {
    header: 'Authorization',
    scheme: 'Bearer',
    api_key_prefix: API_KEY_PREFIX,
    session_token_prefix: SESSION_PREFIX,
    session_token_lifetime_seconds: SESSION_TTL_SECONDS,
    register_url: `${baseUrl}/v1/register`,
    missing_or_invalid: { status: 401, error_code: 'INVALID_API_KEY' },
    root_key_required: {
      status: 403, error_code: 'ROOT_KEY_REQUIRED',
      endpoints: table.all().filter((r) => r.auth === 'root' || r.bearer === 'root').map((r) => `${r.method} ${r.path}`),
    },
    scoped_keys: scopedKeysFacts(table),
    public_endpoints: by(['none']),
    optional_bearer_endpoints: by(['optional']),
    admin: { header: 'X-Admin-Key', endpoints: by(['admin']) },
    passport_session_exchange: {
      scheme: PASSPORT_CHALLENGE_SCHEME,
      steps: ['POST /v1/auth/passport/challenge with agent_id', 'sign sign_payload (UTF-8) with the Ed25519 private key',
        'POST /v1/auth/passport/verify with agent_id, challenge_id and the base64 raw signature'],
      endpoints: endpointsMatching(table, /^\/v1\/auth\/passport\//),
    },
  };
}

/** Scoped API keys: how to make one and which routes each scope opens (from the routes' declared scopes). */
function scopedKeysFacts(table: RouteTable) {
  const routes = table.all();
  const needing = (what: string | null) => routes.filter((r) => scopedKeyNeeds(r) === what).map((r) => `${r.method} ${r.path}`);
  return {
    scopes: [...CAPABILITIES],
    manage: { create: 'POST /v1/me/keys', list: 'GET /v1/me/keys', revoke: 'DELETE /v1/me/keys/{key_id}', auth: 'root key' },
    create_body: { scopes: 'non-empty list of scopes', label: 'optional, at most 100 characters', expires_in: 'optional seconds, 60 to 31536000' },
    max_active_per_agent: MAX_ACTIVE_SCOPED_KEYS,
    limit_error: { status: 409, error_code: 'API_KEY_LIMIT_REACHED' },
    key_shown: 'once, in the creation answer (only its SHA-256 is stored)',
    outside_scopes: { status: 403, error_code: 'SCOPE_NOT_GRANTED', fields: ['required_scope', 'key_scopes'] },
    revoked_or_expired: { status: 401, error_code: 'INVALID_API_KEY' },
    endpoints_by_scope: Object.fromEntries(CAPABILITIES.map((c) => [c, needing(c)])),
    any_key_endpoints: needing('any'),
    refused_endpoints: needing(null),
  };
}

export function rateLimitsBlock({ config }: BlockContext) {
  const perMinute = config.memory.memoryRatePerMinute;
  return {
    // 0 switches the limit off (memory/rate-limit.ts): no limit, not "none allowed".
    memory_requests_per_minute: perMinute > 0 ? perMinute : null,
    memory_rate_limit_error: { status: 429, error_code: 'RATE_LIMIT_EXCEEDED', header: 'Retry-After' },
    parse_per_minute_by_tier: Object.fromEntries(tierRows().map((t) => [t.name, t.parsePerMinute])),
    parse_rate_limit_error: { status: 429, error_code: 'PARSE_RATE_LIMIT' },
  };
}

export function billingTiersBlock() {
  return tierRows().map((t) => ({
    name: t.name,
    label: t.label,
    metering: t.metering,
    search_calls_per_month: t.searchPerMonth,
    browse_calls_per_month: t.browsePerMonth,
    // Credit tiers (the free one included): calls free per rolling 30 days before they cost credit;
    // the published tier table shows the free tier's as its search and browse figures (50, 20).
    free_calls_per_30_days: t.metering === 'credits' ? { search: FREE_FLOORS.search, browse: FREE_FLOORS.browse, memory_write: FREE_FLOORS.memory_write } : null,
    memory_writes_per_month: t.memoryWritesPerMonth,
    memory_storage_bytes: t.memoryStorageBytes,
    blob_storage_bytes: t.blobStorageBytes,
    search_overage_usd_per_call: t.searchOverageUsdPerCall,
    feedback_per_month: t.feedbackPerMonth,
    approval_events_per_month: t.approvalEventsPerMonth,
    parse_ops_per_month: t.parseOpsPerMonth,
    parse_per_minute: t.parsePerMinute,
    min_lifetime_purchase_usd: t.minLifetimePurchaseUnits === null ? null : (t.minLifetimePurchaseUnits / 10_000).toFixed(2),
  }));
}

export const tierDescriptionsBlock = () => Object.fromEntries(tierRows().map((t) => [t.name, t.description]));

/** Prices, floors and the credit slider come from billing's PRICING_BLOCK (one source of truth). */
export function pricingBlock({ table, baseUrl, config: settings }: BlockContext) {
  const config = table.find('GET', '/v1/billing/config');
  const metered = settings.billing.meteringEnabled;
  return {
    model: 'credits',
    ...PRICING_BLOCK,
    free_forever: [...PRICING_BLOCK.free_forever],
    // SVC_METERING_ENABLED=false: nothing is charged or counted against a floor on this instance.
    metering_enabled: metered,
    ...(metered ? {} : {
      free_floors: null,
      price_credits: Object.fromEntries(Object.keys(PRICING_BLOCK.price_credits).map((k) => [k, 0])),
      metering_note: 'Metering is switched off on this instance: every metered action is free, with no floors or credit; storage limits and the free tier\'s monthly memory write cap still apply.',
    }),
    credit_purchase: 'any amount through a volume-discount slider (POST /v1/billing/credits/checkout)',
    credit_tiers: tierRows().filter((t) => t.minLifetimePurchaseUnits !== null).map((t) => ({
      tier: t.name, from_lifetime_purchases_usd: (t.minLifetimePurchaseUnits! / 10_000).toFixed(2),
    })),
    billing_config_url: config ? `${baseUrl}${config.path}` : null,
    endpoints: endpointsMatching(table, /^\/v1\/(billing|usage)/),
  };
}

export function referralRewardsBlock({ table, baseUrl, config }: BlockContext, agentId?: string) {
  const register = table.find('POST', '/v1/register');
  const b = config.billing;
  return {
    how: 'Pass your referral code as referral_agent when another agent registers; it is recorded as deferred.',
    referral_field: 'referral_agent',
    register_url: `${baseUrl}/v1/register`,
    register_endpoint: register ? endpointRef(register) : null,
    // Referrals are always recorded; credit is paid only where the operator enabled payouts (SVC_REFERRAL_PAYOUTS_ENABLED).
    payouts_enabled: b.referralPayoutsEnabled,
    reward_usd_per_validated_signup: (REFERRAL_CREDIT_UNITS / 10_000).toFixed(2),
    activity_window_days: REFERRAL_WINDOW_DAYS,
    min_metered_calls_in_window: b.referralMinActions,
    referrer_min_age_utc_days: REFERRER_MIN_AGE_DAYS,
    reward_credit_expires_after_days: b.referralCreditExpiryDays > 0 ? b.referralCreditExpiryDays : null,
    max_payouts_per_referrer_per_utc_day: PER_REFERRER_DAILY_CAP,
    max_payouts_network_per_utc_day: NETWORK_DAILY_CAP,
    exclusions: ['self-referral', 'same owner_identifier'],
    ...(agentId ? { your_referral_code: agentId } : {}),
  };
}
