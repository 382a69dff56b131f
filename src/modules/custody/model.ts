/**
 * The custody rules: covenant templates and their parameters, their strength (no downgrade), and the
 * time constants of recovery (veto window, enrolment grace, staged resurrection). Pure: no I/O.
 */
import { DAY_MS } from '../../lib/utc';
import { isUuid } from '../../lib/ids';
import { KeyFormatError, parseEd25519PublicKey, publicKeyPem } from '../../lib/ed25519';
import { sha256hex } from '../../lib/hash';
import { createPublicKey } from 'node:crypto';

export const HOUR_MS = 3_600_000;
/** The current holder may veto a recovery intent for this long after it opens. */
export const VETO_WINDOW_DAYS = 7;
/** A newly enrolled or changed recovery key signs recovery steps only after this. */
export const ENROLMENT_GRACE_HOURS = 24;
/** After a recovery through a channel covenant (the weak tier), spending and custody changes wait this long. */
export const STAGED_RESURRECTION_DAYS = 14;
/** An intent whose veto window passed must be initiated and completed within this many days more; then it lapses. */
export const COMPLETION_WINDOW_DAYS = 7;
/** Legacy enrolment (POST /v1/me/covenant/enrol) is closed from this instant. */
export const LEGACY_ENROL_CLOSES_AT = '2026-11-15T00:00:00.000Z';
/** A channel code is good for this long after it is delivered. */
export const CHANNEL_CODE_TTL_MINUTES = 15;

export const VETO_WINDOW_MS = VETO_WINDOW_DAYS * DAY_MS;
export const ENROLMENT_GRACE_MS = ENROLMENT_GRACE_HOURS * HOUR_MS;
export const STAGED_RESURRECTION_MS = STAGED_RESURRECTION_DAYS * DAY_MS;
export const COMPLETION_WINDOW_MS = COMPLETION_WINDOW_DAYS * DAY_MS;

export const TEMPLATES = ['owner-recovery-key', 'channel', 'successor-later', 'quorum-later'] as const;
export type TemplateId = (typeof TEMPLATES)[number];
export const isTemplate = (v: unknown): v is TemplateId => typeof v === 'string' && (TEMPLATES as readonly string[]).includes(v);

/**
 * Strength: the assurance of the proof a template asks of a recoverer. A key held by the owner, a
 * named successor's passport or a quorum of agents are cryptographic (strong); an HTTPS channel the
 * agent declared is the weak tier. Moving from a strong template to a weak one is a downgrade.
 */
export const TEMPLATE_TIER: Record<TemplateId, 'strong' | 'weak'> = {
  'owner-recovery-key': 'strong', 'successor-later': 'strong', 'quorum-later': 'strong', channel: 'weak',
};
/** Templates a recovery can be proved through today; the `-later` ones are stored and shown, with no activation. */
export const ACTIVE_TEMPLATES: readonly TemplateId[] = ['owner-recovery-key', 'channel'];

export const QUORUM_MEMBERS_MIN = 2;
export const QUORUM_MEMBERS_MAX = 10;
export const CHANNEL_URL_MAX = 2048;

export const TEMPLATE_PARAMS: Record<TemplateId, string> = {
  'owner-recovery-key': '{recovery_public_key}: a PEM Ed25519 public key (SPKI); usable after the 24-hour enrolment grace',
  channel: `{url}: an https URL on a public host (at most ${CHANNEL_URL_MAX} characters) that receives recovery codes, HMAC-signed with the secret returned once`,
  'successor-later': '{successor_agent_id}: another existing agent (stored, no activation)',
  'quorum-later': `{members, threshold}: ${QUORUM_MEMBERS_MIN} to ${QUORUM_MEMBERS_MAX} distinct other existing agents and how many must agree (2 to the member count; stored, no activation)`,
};

/** Why params were refused (COVENANT_PARAMS_INVALID), or the normalised params. */
export type ParamsCheck =
  | { ok: true; template: 'owner-recovery-key'; publicKeyPem: string; keySha256: string }
  | { ok: true; template: 'channel'; url: string }
  | { ok: true; template: 'successor-later'; successorAgentId: string }
  | { ok: true; template: 'quorum-later'; members: string[]; threshold: number }
  | { ok: false; problem: string };

const fail = (problem: string): ParamsCheck => ({ ok: false, problem });
const onlyKeys = (o: Record<string, unknown>, keys: string[]) => Object.keys(o).filter((k) => !keys.includes(k));

export const keySha256 = (pem: string): string => sha256hex(createPublicKey(pem).export({ format: 'der', type: 'spki' }));

/** A PEM Ed25519 public key as svc stores it, or why not. */
export function readRecoveryKey(value: unknown): { pem: string; sha256: string } | { problem: string } {
  if (typeof value !== 'string' || !value.trim().startsWith('-----BEGIN')) return { problem: 'recovery_public_key must be a PEM Ed25519 public key (SPKI)' };
  try {
    const pem = publicKeyPem(parseEd25519PublicKey(value));
    return { pem, sha256: keySha256(pem) };
  } catch (e) {
    return { problem: `recovery_public_key: ${e instanceof KeyFormatError ? e.message : 'unreadable key'}` };
  }
}

/**
 * Syntax of a template's params (existence of named agents and the channel URL's host are checked by
 * the service). Unknown fields are refused: a covenant says exactly what it binds.
 */
export function checkParams(template: TemplateId, params: unknown, self: string): ParamsCheck {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return fail('params must be an object');
  const p = params as Record<string, unknown>;
  switch (template) {
    case 'owner-recovery-key': {
      const extra = onlyKeys(p, ['recovery_public_key']);
      if (extra.length) return fail(`unknown params field ${extra[0]}; owner-recovery-key takes recovery_public_key`);
      const key = readRecoveryKey(p.recovery_public_key);
      if ('problem' in key) return fail(key.problem);
      return { ok: true, template, publicKeyPem: key.pem, keySha256: key.sha256 };
    }
    case 'channel': {
      const extra = onlyKeys(p, ['url']);
      if (extra.length) return fail(`unknown params field ${extra[0]}; channel takes url`);
      if (typeof p.url !== 'string' || p.url.length === 0 || p.url.length > CHANNEL_URL_MAX) return fail(`url must be an https URL of at most ${CHANNEL_URL_MAX} characters`);
      let u: URL;
      try {
        u = new URL(p.url);
      } catch {
        return fail('url is not a URL');
      }
      if (u.protocol !== 'https:') return fail('url must use https');
      if (u.username || u.password) return fail('url must not carry credentials');
      return { ok: true, template, url: u.toString() };
    }
    case 'successor-later': {
      const extra = onlyKeys(p, ['successor_agent_id']);
      if (extra.length) return fail(`unknown params field ${extra[0]}; successor-later takes successor_agent_id`);
      if (typeof p.successor_agent_id !== 'string' || !isUuid(p.successor_agent_id)) return fail('successor_agent_id must be an agent id (UUID)');
      const id = p.successor_agent_id.toLowerCase();
      if (id === self) return fail('successor_agent_id must be another agent');
      return { ok: true, template, successorAgentId: id };
    }
    case 'quorum-later': {
      const extra = onlyKeys(p, ['members', 'threshold']);
      if (extra.length) return fail(`unknown params field ${extra[0]}; quorum-later takes members and threshold`);
      const m = p.members;
      if (!Array.isArray(m) || m.length < QUORUM_MEMBERS_MIN || m.length > QUORUM_MEMBERS_MAX || !m.every((x) => typeof x === 'string' && isUuid(x))) {
        return fail(`members must be ${QUORUM_MEMBERS_MIN} to ${QUORUM_MEMBERS_MAX} agent ids (UUIDs)`);
      }
      const members = (m as string[]).map((x) => x.toLowerCase());
      if (new Set(members).size !== members.length) return fail('members must be distinct');
      if (members.includes(self)) return fail('members must be other agents');
      const t = p.threshold;
      if (typeof t !== 'number' || !Number.isInteger(t) || t < 2 || t > members.length) return fail(`threshold must be an integer from 2 to ${members.length}`);
      return { ok: true, template, members, threshold: t };
    }
  }
}

/** The params stored (covenants.params) for checked params. */
export function storedParams(c: Exclude<ParamsCheck, { ok: false }>): Record<string, unknown> {
  switch (c.template) {
    case 'owner-recovery-key': return { recovery_key_sha256: c.keySha256, veto_window_days: VETO_WINDOW_DAYS };
    case 'channel': return { url: c.url, veto_window_days: VETO_WINDOW_DAYS };
    case 'successor-later': return { successor_agent_id: c.successorAgentId };
    case 'quorum-later': return { members: c.members, threshold: c.threshold };
  }
}

/** What anyone may see of stored params (the public covenant read and the trust log): a channel's URL only as its host and SHA-256. */
export function publicParams(template: string, stored: Record<string, unknown>): Record<string, unknown> {
  if (template !== 'channel' || typeof stored.url !== 'string') return stored;
  const { url, ...rest } = stored;
  return { ...rest, host: new URL(url as string).host, url_sha256: sha256hex(url as string) };
}

/** An intent's state as read now: lapsed is derived from time. */
export function intentState(i: { status: string; lapses_at: number }, now: number): 'open' | 'vetoed' | 'initiated' | 'completed' | 'lapsed' {
  if ((i.status === 'open' || i.status === 'initiated') && now >= Number(i.lapses_at)) return 'lapsed';
  return i.status as 'open' | 'vetoed' | 'initiated' | 'completed';
}

/** Whether the intent still blocks a new one (and covenant changes): open or initiated, not lapsed. */
export const intentLive = (i: { status: string; lapses_at: number }, now: number): boolean => {
  const s = intentState(i, now);
  return s === 'open' || s === 'initiated';
};
