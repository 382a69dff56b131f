/**
 * Synthetic founding profiles: directory rows the operator configures (SVC_DIRECTORY_SYNTHETIC_PROFILES,
 * a JSON array inline or the path of a JSON file), shown with `synthetic: true`. They are not agents:
 * no passport, no key, no reputation. Each profile is validated with the description route's own
 * field rules; a bad profile stops the start with every problem listed.
 */
import { readFileSync } from 'node:fs';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { ConfigError } from '../../config/define';
import { sha256hex } from '../../lib/hash';
import { parseIsoInstant } from '../../lib/iso-time';
import { AGENT_NAME_PATTERN, DescriptionBody } from '../identity/schemas';
import { externalUrlProblem } from '../identity/validation';

export interface SyntheticProfile {
  key: string;
  agentId: string;
  agentName: string;
  bio: string | null;
  skills: string[];
  agentType: string | null;
  domain: string | null;
  agentCardUrl: string | null;
  /** Configured registration time; unset: when the profile was first stored. */
  createdAt?: number;
}

const d = DescriptionBody.properties;
export const SyntheticProfileSchema = Type.Object({
  key: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$', description: 'Unique label of the profile (its id is derived from it)' }),
  agent_name: Type.String({ minLength: 1, maxLength: 64, pattern: AGENT_NAME_PATTERN }),
  bio: d.bio,
  skills: d.skills,
  agent_type: d.agent_type,
  domain: d.domain,
  agent_card_url: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])),
  created_at: Type.Optional(Type.String({ description: 'ISO 8601 instant' })),
}, { additionalProperties: false });

/** The profile's agent_id: a UUID (version 8) from SHA-256 of its key, the same on every instance and start. */
export function syntheticId(key: string): string {
  const h = sha256hex(`svc.directory.synthetic\n${key}`);
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The configured profiles (none when unset); ConfigError listing every problem otherwise. */
export function loadSyntheticProfiles(setting: string | undefined): SyntheticProfile[] {
  if (setting === undefined) return [];
  const where = 'SVC_DIRECTORY_SYNTHETIC_PROFILES';
  let text = setting;
  if (!setting.trimStart().startsWith('[')) {
    try {
      text = readFileSync(setting, 'utf8');
    } catch (e) {
      throw new ConfigError([`${where}: cannot read the file ${setting} (${(e as Error).message}); give a JSON array inline or the path of a JSON file`]);
    }
  }
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch (e) {
    throw new ConfigError([`${where}: not valid JSON (${(e as Error).message})`]);
  }
  if (!Array.isArray(list)) throw new ConfigError([`${where}: must be a JSON array of profiles`]);
  const problems: string[] = [];
  const out: SyntheticProfile[] = [];
  const keys = new Set<string>();
  list.forEach((p, i) => {
    if (!Value.Check(SyntheticProfileSchema, p)) {
      for (const e of Value.Errors(SyntheticProfileSchema, p)) {
        if (e.keyword === 'boolean') continue;
        problems.push(`${where}[${i}]${e.instancePath || ''}: ${e.message}`);
      }
      return;
    }
    const v = p as { key: string; agent_name: string; bio?: string | null; skills?: string[]; agent_type?: string | null; domain?: string | null; agent_card_url?: string | null; created_at?: string };
    if (keys.has(v.key)) problems.push(`${where}[${i}]: key ${v.key} is used twice`);
    keys.add(v.key);
    const urlProblem = v.agent_card_url ? externalUrlProblem(v.agent_card_url) : undefined;
    if (urlProblem) problems.push(`${where}[${i}]/agent_card_url: ${urlProblem}`);
    const createdAt = v.created_at === undefined ? undefined : parseIsoInstant(v.created_at);
    if (v.created_at !== undefined && createdAt === undefined) problems.push(`${where}[${i}]/created_at: not an ISO 8601 instant with its zone`);
    out.push({
      key: v.key, agentId: syntheticId(v.key), agentName: v.agent_name,
      bio: v.bio === undefined || v.bio === null || v.bio.trim() === '' ? null : v.bio,
      skills: v.skills ?? [], agentType: v.agent_type ?? null, domain: v.domain ?? null, agentCardUrl: v.agent_card_url ?? null,
      ...(createdAt !== undefined ? { createdAt } : {}),
    });
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return out;
}
