/**
 * Capabilities blocks about the service's features: search credibility, feedback, browse,
 * memory, documents, commons and MCP. Allowed values and bounds are read from the live route
 * schemas (schema-facts.ts), limits from the configuration and the tier table.
 */
import { credibilityScore } from '../../infra/search-providers/credibility';
import { MAX_NOTE_CHARS } from '../feedback/schemas';
import { TIERS } from '../../lib/tiers';
import { MAX_TTL_SECONDS, MAX_VALUE_BYTES } from '../memory/schemas';
import type { BlockContext } from './blocks-core';
import { hostFeatures } from './host-features';
import { boundsOf, endpointsMatching, enumOf, fieldSchema } from './schema-facts';
import { TOOL_SPECS, toolFile, toolName, toolServed } from './tool-map';

export function credibilityScoringBlock({ config }: BlockContext) {
  const news = config.search.newsDomains;
  // Scored by the same function search uses, on one representative host per class.
  const score = (host: string) => credibilityScore(host, news);
  return {
    field: 'credibility_score',
    range: [0.5, 1.0],
    rules: [
      { match: '.gov (and gov/gouv/gob under a country code)', score: score('example.gov') },
      { match: '.edu (and edu/ac under a country code)', score: score('example.edu') },
      { match: 'major news sources', score: news.length ? score(news[0]) : 0.8 },
      { match: '.org', score: score('example.org') },
      { match: 'all others', score: score('example.com') },
    ],
    news_domains: news,
  };
}

/** Web search on this host: whether a provider answers, which, and if none, why (the settings to set). */
export function webSearchBlock({ config, table }: BlockContext) {
  const s = hostFeatures(config).web_search;
  return {
    available: s.available,
    primary_provider: s.primary,
    fallback_provider: s.fallback,
    unavailable_reason: s.reason,
    unavailable_error: s.available ? null : { status: 503, error_code: 'SEARCH_PROVIDER_UNCONFIGURED' },
    endpoints: endpointsMatching(table, /^\/v1\/search$/),
  };
}

export function feedbackBlock({ table }: BlockContext) {
  const f = (field: string) => fieldSchema(table, 'POST', '/v1/feedback', 'body', field);
  return {
    ref_types: enumOf(f('ref_type')) ?? null,
    signals: enumOf(f('signal')) ?? null,
    // Checked by the service (code points, NOTE_TOO_LONG), so the schema carries no maxLength.
    note: { max_characters: MAX_NOTE_CHARS, counted_in: 'Unicode code points', nullable: true },
    per_utc_month_by_tier: Object.fromEntries(Object.values(TIERS).map((t) => [t.name, t.feedbackPerMonth])),
    endpoints: endpointsMatching(table, /^\/v1\/feedback/),
  };
}

export function browserBlock({ config, table }: BlockContext) {
  const dynamic = hostFeatures(config).dynamic_browse;
  return {
    modes: enumOf(fieldSchema(table, 'POST', '/v1/browse', 'body', 'mode')) ?? ['static', 'dynamic'],
    // The renderer's own rule: unset means /usr/bin/chromium when it exists (else BROWSE_PROVIDER_UNCONFIGURED).
    dynamic_mode_configured: dynamic.available,
    dynamic_mode_unavailable_reason: dynamic.reason,
    robots_txt: 'enforced, no exceptions (BROWSE_ROBOTS_DISALLOW)',
    public_web_only: true,
    max_response_bytes: config.web.browseMaxBytes,
    timeout_ms: config.web.browseTimeoutMs,
    render_timeout_ms: config.web.renderTimeoutMs,
    allowed_ports: config.web.outboundAllowedPorts,
    not_supported: ['cookies', 'logins', 'forms', 'PDFs inside pages', 'screenshots', 'arbitrary script execution'],
    endpoints: endpointsMatching(table, /^\/v1\/browse/),
  };
}

export function memoryLedgerBlock({ table }: BlockContext) {
  const put = (field: string) => fieldSchema(table, 'PUT', '/v1/memory/{key}', 'body', field);
  const key = fieldSchema(table, 'PUT', '/v1/memory/{key}', 'params', 'key');
  return {
    model: 'append-only ledger per key; reads return the latest live value; delete appends a tombstone',
    public_version_listing: false,
    versions: {
      etag: 'GET and PUT /v1/memory/{key} answer the live version as a strong ETag: "<version>"',
      if_match: 'PUT with If-Match: "<version>" (a list, or *) writes only over that live version; otherwise 409 MEMORY_LEDGER_VERSION_CONFLICT with current_version, and nothing is written or counted',
      conflict_error: { status: 409, error_code: 'MEMORY_LEDGER_VERSION_CONFLICT' },
    },
    unavailable_error: { status: 503, error_code: 'MEMORY_LEDGER_UNAVAILABLE', when: 'the ledger cannot be read or written (PostgreSQL out of reach, SQLite unable to write its file); other routes answer DATABASE_UNAVAILABLE' },
    key: boundsOf(key) ?? null,
    max_value_bytes: MAX_VALUE_BYTES,
    max_ttl_seconds: MAX_TTL_SECONDS,
    importance: enumOf(put('importance')) ?? null,
    derived_from: put('derived_from') ? 'inclusive range {start_version, end_version} of source versions' : null,
    content_trust: 'untrusted_data on every authenticated read',
    write_quota_per_month_by_tier: Object.fromEntries(Object.values(TIERS).map((t) => [t.name, t.memoryWritesPerMonth])),
    storage_bytes_by_tier: Object.fromEntries(Object.values(TIERS).map((t) => [t.name, t.memoryStorageBytes])),
    endpoints: endpointsMatching(table, /^\/v1\/memory/),
  };
}

export function documentStorageBlock({ config, table }: BlockContext) {
  const b = config.blobs;
  return {
    blob_id_format: 'b_ followed by 16 hex characters (content-addressed)',
    max_blob_bytes: b.maxBytes,
    storage_bytes_by_tier: Object.fromEntries(Object.values(TIERS).map((t) => [t.name, t.blobStorageBytes])),
    parse_types: ['application/pdf', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'text/csv',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
    parse_sync_max_bytes: b.parseSyncMaxBytes,
    parse_async_enabled: b.parseAsyncEnabled,
    callback_replay_enabled: b.callbackReplayEnabled,
    signed_url_seconds: { default: b.signedUrlDefaultSeconds, max: b.signedUrlMaxSeconds },
    soft_delete_grace_seconds: b.deleteGraceSeconds,
    parse_ops_per_month_by_tier: Object.fromEntries(Object.values(TIERS).map((t) => [t.name, t.parseOpsPerMonth])),
    blob_search: 'counts as one call in the search pool',
    endpoints: endpointsMatching(table, /^\/v1\/blobs/),
  };
}

export function commonsBlock({ table }: BlockContext) {
  return {
    description: 'Shared opt-in memory area; reading is never debited.',
    endpoints: endpointsMatching(table, /^\/v1\/commons/),
  };
}

export function mcpBlock({ baseUrl, table }: BlockContext) {
  const manifest = table.find('GET', '/v1/mcp/manifest');
  return {
    endpoint: `${baseUrl}/mcp`,
    transport: 'streamable-http',
    authentication: 'Authorization: Bearer <API key or session token>',
    manifest_url: manifest ? `${baseUrl}/v1/mcp/manifest` : null,
    tool_definitions_base: `${baseUrl}/mcp/v1/`,
    legacy_alias: { base: `${baseUrl}/mcp/`, header: 'X-Svc-Deprecation' },
    // Every tool has a definition file; `served` says whether tools/list offers it here.
    tools: TOOL_SPECS.map((t) => ({ id: t.id, name: toolName(t.id), url: `${baseUrl}/mcp/v1/${toolFile(t.id)}`, served: toolServed(t, table) })),
  };
}
