/**
 * GET /v1/guide and GET /v1/agent-template. The guide is the API's list of first steps; each step names
 * the request to make, and the method/path/auth of that request are checked against the live
 * route table (`served: false` marks a step whose route this instance does not have).
 */
import { SVC_VERSION } from '../../version';
import type { HostFeature, HostFeatures } from './host-features';
import type { RouteTable } from './route-table';
import { TOOL_SPECS, toolName, toolServed } from './tool-map';

interface Step {
  step: string;
  why: string;
  method: string;
  path: string;
  query?: Record<string, string | number>;
  body?: unknown;
  headers?: Record<string, string>;
  raw_body?: string;
}

const KEY = { authorization: 'Bearer <api_key>' };

const STEPS: { group: string; steps: Step[] }[] = [
  { group: 'start', steps: [
    { step: 'discover', why: 'Learn every endpoint, limit and price of this instance.', method: 'GET', path: '/v1/capabilities' },
    { step: 'register', why: 'Get an API key (shown once) and an Ed25519 passport. Generate your own keypair and send only the public key.', method: 'POST', path: '/v1/register',
      body: { agent_name: 'my-agent', owner_identifier: 'owner@example.com', agree_to_terms: true, passport_public_key: '<PEM SPKI or base64 raw Ed25519 public key>' } },
    { step: 'referral', why: 'Your referral code is your agent_id; another agent passes it as referral_agent when registering.', method: 'GET', path: '/v1/me', headers: KEY },
  ] },
  { group: 'use', steps: [
    { step: 'search', why: 'Web search with credibility scores; keep _svc.search_id for feedback.', method: 'GET', path: '/v1/search', query: { q: 'latest EU AI act guidance', num_results: 5 }, headers: KEY },
    { step: 'feedback', why: 'Tell svc whether a result helped.', method: 'POST', path: '/v1/feedback', headers: KEY,
      body: { ref_type: 'search_id', ref_id: '<_svc.search_id>', signal: 'helpful', note: 'optional, at most 500 characters' } },
    { step: 'check usage', why: 'Calls this month and the 7-day breakdown.', method: 'GET', path: '/v1/usage', headers: KEY },
    { step: 'upgrade', why: 'Buy credits in any amount past the free floors; payment completes on the billing page.', method: 'POST', path: '/v1/billing/credits/checkout', headers: KEY, body: { credits: 1000 } },
  ] },
  { group: 'memory', steps: [
    { step: 'store', why: 'Save JSON under a key (one path segment; use . or :).', method: 'PUT', path: '/v1/memory/project.notes', headers: KEY, body: { value: { summary: 'what I learned' }, importance: 'high', source: 'search' } },
    { step: 'retrieve', why: 'Read the latest live value; its ETag is the live version.', method: 'GET', path: '/v1/memory/project.notes', headers: KEY },
    { step: 'update safely', why: 'Write only over the version you read (If-Match: the ETag); another writer in between gives 409 MEMORY_LEDGER_VERSION_CONFLICT instead of a lost update.', method: 'PUT', path: '/v1/memory/project.notes',
      headers: { ...KEY, 'if-match': '"<version from the ETag>"' }, body: { value: { summary: 'what I learned, revised' } } },
    { step: 'list', why: 'Metadata of your keys (no values).', method: 'GET', path: '/v1/memory', query: { prefix: 'project.', per_page: 50 }, headers: KEY },
    { step: 'stats', why: 'Write quota and storage used.', method: 'GET', path: '/v1/memory/stats', headers: KEY },
    { step: 'context', why: 'Reload the most important, most recent memories at the start of a session.', method: 'GET', path: '/v1/memory/context', query: { limit: 10 }, headers: KEY },
    { step: 'semantic search', why: 'Find memories by meaning.', method: 'GET', path: '/v1/memory/search', query: { q: 'what did I learn about pricing', limit: 5 }, headers: KEY },
  ] },
  { group: 'trust', steps: [
    { step: 'list yourself', why: 'Opt in to the public directory with a short bio, skills and the kind and field of your work (unlisted by default).', method: 'POST', path: '/v1/agents/passport/description', headers: KEY,
      body: { listed: true, bio: 'What I do, in a sentence.', skills: ['research', 'summarising'], agent_type: 'research', domain: 'finance' } },
    { step: 'find agents', why: 'The public directory: listed agents, best reputation first; follow next_cursor for the next page (filters: agent_type, domain, bridge_only).', method: 'GET', path: '/v1/agents', query: { limit: 20, domain: 'finance' } },
    { step: 'rate an interaction', why: 'After working with another agent, rate it; the rating is an entry of the public trust log.', method: 'POST', path: '/v1/feedback/interaction', headers: KEY,
      body: { subject_agent_id: '<agent_id>', ref_type: 'task', ref_id: '<your id of the task>', outcome: 'approved', category: 'task_completion' } },
    { step: 'reputation', why: 'An agent\'s reputation in its current custody epoch, with its rated events (each with its log index).', method: 'GET', path: '/v1/agents/<agent_id>/reputation/history', query: { include_events: 'true' } },
    { step: 'dispute', why: 'Dispute a rating of which you are the subject; an admin upholds (weight 0) or dismisses it.', method: 'POST', path: '/v1/reputation/dispute', headers: KEY,
      body: { event_id: '<event_id from the history>', reason: 'why the rating is wrong' } },
    { step: 'stake', why: 'Lock never-expiring credit (low 1,000, medium 10,000, high 50,000 credits) for at least 30 days: trust level staked, full rater weight, and you may sponsor; it can be slashed by an operator for harm done.', method: 'POST', path: '/v1/agents/passport/stake', headers: KEY,
      body: { tier: 'low' } },
    { step: 'sponsor', why: 'Answer for another agent with your stake (at most 5 wards): it becomes sponsored; a slash of your ward takes a quarter of the amount from you too. Rings of sponsorships confer nothing.', method: 'POST', path: '/v1/agents/<agent_id>/sponsor/<ward_agent_id>', headers: KEY },
    { step: 'unstake', why: 'After the 30-day lock: 7 days of cooling (no longer staked), then the credit returns to your balance.', method: 'POST', path: '/v1/agents/passport/unstake', headers: KEY },
    { step: 'verify the log', why: 'Check that a rating is in the signed log: its inclusion proof against the latest checkpoint.', method: 'GET', path: '/v1/trust/log/proof/inclusion', query: { index: '<log_index>', tree_size: '<size of the checkpoint>' } },
  ] },
  { group: 'custody', steps: [
    { step: 'protect your agent', why: 'Bind a recovery key (keep its private key offline): if the root key is lost, it recovers the agent; usable 24 hours after it is set.', method: 'POST', path: '/v1/me/covenant/amend', headers: KEY,
      body: { template_id: 'owner-recovery-key', params: { recovery_public_key: '<PEM Ed25519 public key>' } } },
    { step: 'recover', why: 'Lost the root key: name a new passport key, signed with the recovery key over a challenge (purpose recovery; scheme svc.recovery.intent.v1). The intent is public and the current holder may veto it for 7 days; then initiate and complete, each signed anew.', method: 'POST', path: '/v1/recovery/intent',
      body: { agent_id: '<agent_id>', new_passport_public_key: '<PEM>', challenge_id: '<challenge_id>', recovery_signature: '<base64 signature>' } },
    { step: 'veto a recovery', why: 'Someone opened a recovery of your agent: refuse it inside the 7-day window with your passport signature (scheme svc.recovery.veto.v1).', method: 'POST', path: '/v1/me/recovery/veto', headers: KEY,
      body: { intent_id: '<intent_id>', challenge_id: '<challenge_id>', passport_signature: '<base64 signature>' } },
    { step: 'transfer custody', why: 'Hand the agent to another custodian: the answer carries the bytes your passport signs; completing opens a new custody epoch with fresh reputation.', method: 'POST', path: '/v1/me/custody/transfer/intent', headers: KEY,
      body: { incoming_public_key: '<PEM of the incoming custodian>', incoming_owner_identifier: '<their owner identifier>' } },
  ] },
  { group: 'declarations', steps: [
    { step: 'commit a journal', why: 'Commit the SHA-256 of "svc:sealed-journal:v1" LF your agent id LF your journal; only the digest is sent, and its log index proves when.', method: 'POST', path: '/v1/me/journal/commit', headers: KEY,
      body: { commitment_hash: '<base64 of the 32-byte digest>', commit_attestation: { source: 'api_v163', client: 'my-agent/1.0' } } },
    { step: 'register a tool', why: 'Give a tool you run a public passport (did:svc:tool:<tool_id>); risk class and model provenance are declared, not verified.', method: 'POST', path: '/v1/me/tools', headers: KEY,
      body: { name: 'pdf.summarise', description: 'Summarises PDF files', public_key: '<the tool\'s Ed25519 public key>', risk_class: 'low' } },
    { step: 'bind a tool allow list', why: 'Limit what you may ever delegate; signed with your passport key over a fresh challenge (scheme svc.policy_binding.amend.v1).', method: 'POST', path: '/v1/me/policy-bindings/amend', headers: KEY,
      body: { binding_type: 'tool_allow_list', params: { allowed_tools: ['svc_memory', 'svc_search'] }, challenge_id: '<challenge_id>', passport_signature: '<base64 signature>' } },
    { step: 'delegate', why: 'A scoped key for a sub-agent, limited to the tools of its write_set and expiring.', method: 'POST', path: '/v1/agents/<agent_id>/delegate', headers: KEY,
      body: { write_set: ['svc_memory'], label: 'summariser', expires_in: 3600 } },
    { step: 'declare a consolidation policy', why: 'Record how your memory would be consolidated (svc records it only); signed like the allow list (scheme svc.consolidation.amend.v1).', method: 'POST', path: '/v1/me/consolidation-policy/amend', headers: KEY,
      body: {
        template_id: 'consolidation-v1',
        params: { schema_version: 1, compression: { strategy: 'summarize', target_ratio: 0.25, min_age_days: 7 }, weighting: { recency: 0.4, importance: 0.3, access_frequency: 0.2, confidence: 0.1 }, fade_rules: [{ importance: 'low', after_days: 180, action: 'forget' }] },
        challenge_id: '<challenge_id>', passport_signature: '<base64 signature>',
      } },
  ] },
  { group: 'blobs', steps: [
    { step: 'upload', why: 'Store bytes; the blob_id is content-addressed.', method: 'PUT', path: '/v1/blobs', headers: { ...KEY, 'content-type': 'application/pdf' }, raw_body: '<the file bytes>' },
    { step: 'download', why: 'Read the bytes back (HTTP Range supported).', method: 'GET', path: '/v1/blobs/<blob_id>', headers: KEY },
    { step: 'list', why: 'Your blobs.', method: 'GET', path: '/v1/blobs', headers: KEY },
    { step: 'metadata', why: 'Size, type and dates of one blob.', method: 'GET', path: '/v1/blobs/<blob_id>/meta', headers: KEY },
    { step: 'delete', why: 'Soft-delete a blob.', method: 'DELETE', path: '/v1/blobs/<blob_id>', headers: KEY },
  ] },
];

/** The route an example path hits: a static route first (/v1/memory/stats), else a pattern (/v1/memory/{key}). */
function routeFor(table: RouteTable, method: string, path: string) {
  const routes = table.all().filter((r) => r.method === method);
  const exact = routes.find((r) => r.path === path);
  if (exact) return exact;
  const segs = path.split('/');
  return routes.find((r) => {
    const rs = r.path.split('/');
    return rs.length === segs.length && rs.every((s, i) => s === segs[i] || /^\{.+\}$/.test(s));
  });
}

/** The host feature a step needs (none: the route alone decides). */
function featureOf(s: Step, features: HostFeatures): HostFeature | undefined {
  return s.method === 'GET' && s.path === '/v1/search' ? features.web_search : undefined;
}

export function guideDocument(table: RouteTable, baseUrl: string, features: HostFeatures) {
  let n = 0;
  return {
    status: 'success' as const,
    version: SVC_VERSION,
    base_url: baseUrl,
    steps: STEPS.flatMap((g) => g.steps.map((s) => {
      const route = routeFor(table, s.method, s.path);
      const qs = s.query ? `?${new URLSearchParams(Object.entries(s.query).map(([k, v]): [string, string] => [k, String(v)]))}` : '';
      return {
        n: ++n,
        group: g.group,
        step: s.step,
        why: s.why,
        request: {
          method: s.method,
          url: `${baseUrl}${s.path}${qs}`,
          // A JSON body is sent as JSON: the header that says so is part of the request to copy.
          ...(s.headers || s.body !== undefined ? { headers: { ...s.headers, ...(s.body !== undefined ? { 'content-type': 'application/json' } : {}) } } : {}),
          ...(s.body !== undefined ? { body: s.body } : {}),
          ...(s.raw_body !== undefined ? { raw_body: s.raw_body } : {}),
        },
        route: route ? `${route.method} ${route.path}` : null,
        auth: route?.auth ?? (s.headers ? 'key' : 'none'),
        summary: route?.summary ?? null,
        served: route !== undefined,
        // Served but not working on this host (web search without a provider): said here, with the reason.
        ...(featureOf(s, features)?.available === false ? { available: false as const, unavailable_reason: featureOf(s, features)?.reason } : {}),
      };
    })),
  };
}

export function agentTemplate(baseUrl: string, table: RouteTable, features: HostFeatures) {
  return {
    status: 'success' as const,
    version: SVC_VERSION,
    instructions: 'Fill in the <...> values, keep api_key and the private key secret, and load this at start-up.',
    template: {
      svc: {
        base_url: baseUrl,
        api_key_env: 'SVC_API_KEY',
        api_key: '<api_key from POST /v1/register; shown once>',
        agent_id: '<agent_id from POST /v1/register>',
        did: 'did:svc:<agent_id>',
        referral_code: '<agent_id>',
      },
      registration: {
        agent_name: '<letters, digits, hyphens, underscores>',
        owner_identifier: '<a stable identifier of your owner>',
        agree_to_terms: true,
        passport_public_key: '<PEM SPKI of your Ed25519 public key>',
        recovery_public_key: null,
        referral_agent: null,
        registration_source: null,
      },
      passport: { private_key_path: '<where you keep the Ed25519 private key>', key_algorithm: 'ed25519' },
      memory: { key_prefix: '<agent-name>.', default_importance: 'normal', reload_context_on_start: true, context_limit: 10 },
      search: {
        num_results: 10, give_feedback: true,
        available_on_this_host: features.web_search.available,
        ...(features.web_search.available ? {} : { unavailable_reason: features.web_search.reason }),
      },
      mcp: {
        url: `${baseUrl}/mcp`,
        transport: 'streamable-http',
        headers: { Authorization: 'Bearer ${SVC_API_KEY}' },
        manifest_url: `${baseUrl}/v1/mcp/manifest`,
        tools: TOOL_SPECS.filter((t) => toolServed(t, table)).map((t) => toolName(t.id)),
      },
    },
  };
}

/** A guide step as a request example of the route it calls (the OpenAPI document shows them on the reference page). */
export interface RequestExample {
  method: string;
  /** The route's OpenAPI path. */
  path: string;
  name: string;
  summary: string;
  body?: unknown;
  query?: Record<string, string | number>;
  params: Record<string, string>;
}

export function guideExamples(table: RouteTable): RequestExample[] {
  return STEPS.flatMap((g) => g.steps.flatMap((s): RequestExample[] => {
    const route = routeFor(table, s.method, s.path);
    if (!route) return [];
    // The example's values of the route's path parameters (/v1/memory/project.notes: key = project.notes).
    const segs = s.path.split('/');
    const params = Object.fromEntries(route.path.split('/').flatMap((p, i) => (/^\{.+\}$/.test(p) ? [[p.slice(1, -1), decodeURIComponent(segs[i])]] : [])));
    return [{ method: route.method, path: route.path, name: `${g.group}: ${s.step}`, summary: s.why, body: s.body, query: s.query, params }];
  }));
}
