/**
 * The params of template `consolidation-v1` (docs/trust.md, "Consolidation policy"): what an agent
 * declares about how its memory would be consolidated. svc records the declaration only (it runs no
 * consolidation engine), so the schema is about being unambiguous and bounded, not executable:
 *
 * - schema_version: 1.
 * - compression: strategy (none, deduplicate, summarize, cluster_summarize), target_ratio (the share
 *   of the original size a consolidated set keeps, (0, 1]; exactly 1 with strategy none) and
 *   min_age_days (entries younger are never compressed, 0 to 3650).
 * - weighting: how consolidation ranks what to keep, four weights in [0, 1] that sum to 1
 *   (recency, importance, access_frequency, confidence).
 * - fade_rules: up to 16 rules {importance, after_days (1 to 36500), action (compress, archive,
 *   forget)}, at most one rule per (importance, action), and for one importance the actions in the
 *   order compress, archive, forget come at strictly increasing after_days.
 * - declared_at is set by svc when the amend is recorded; a params object that carries it is refused.
 *
 * Every object is closed (no other fields): a declaration means exactly what it says.
 */
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';

export const CONSOLIDATION_TEMPLATE_ID = 'consolidation-v1';
export const CONSOLIDATION_SCHEMA_VERSION = 1;
export const FADE_RULES_MAX = 16;
export const IMPORTANCE_LEVELS = ['critical', 'high', 'normal', 'low'] as const;
export const FADE_ACTIONS = ['compress', 'archive', 'forget'] as const;
export const COMPRESSION_STRATEGIES = ['none', 'deduplicate', 'summarize', 'cluster_summarize'] as const;
export const WEIGHTS = ['recency', 'importance', 'access_frequency', 'confidence'] as const;
/** Weights must sum to 1 within this (decimal fractions do not add exactly in binary). */
const SUM_TOLERANCE = 1e-9;

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));
const weight = (what: string) => Type.Number({ minimum: 0, maximum: 1, description: `Weight of ${what}, 0 to 1` });

export const ConsolidationParams = Type.Object({
  schema_version: Type.Literal(CONSOLIDATION_SCHEMA_VERSION, { description: 'Version of this params schema: 1' }),
  compression: Type.Object({
    strategy: literals(COMPRESSION_STRATEGIES),
    target_ratio: Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'Share of the original size a consolidated set keeps, (0, 1]; 1 with strategy none' }),
    min_age_days: Type.Integer({ minimum: 0, maximum: 3650, description: 'Entries younger than this are never compressed' }),
  }, { additionalProperties: false }),
  weighting: Type.Object({
    recency: weight('recency'),
    importance: weight('the importance label'),
    access_frequency: weight('how often an entry is read'),
    confidence: weight('the entry\'s confidence'),
  }, { additionalProperties: false, description: 'Four weights that sum to 1' }),
  fade_rules: Type.Array(Type.Object({
    importance: literals(IMPORTANCE_LEVELS),
    after_days: Type.Integer({ minimum: 1, maximum: 36_500 }),
    action: literals(FADE_ACTIONS),
  }, { additionalProperties: false }), { maxItems: FADE_RULES_MAX, description: `At most ${FADE_RULES_MAX}; one per (importance, action); per importance compress < archive < forget in after_days` }),
}, { additionalProperties: false, description: 'consolidation-v1 params; declared_at is set by svc' });

export type ConsolidationParamsValue = Static<typeof ConsolidationParams>;

/** The problems of `params` against consolidation-v1 (empty when valid), each naming its JSON pointer. */
export function consolidationParamsProblems(params: unknown): { path: string; message: string }[] {
  if (params !== null && typeof params === 'object' && !Array.isArray(params) && Object.hasOwn(params, 'declared_at')) {
    return [{ path: '/declared_at', message: 'declared_at is set by svc when the amend is recorded; leave it out' }];
  }
  if (!Value.Check(ConsolidationParams, params)) {
    const seen = new Set<string>();
    const out: { path: string; message: string }[] = [];
    for (const e of Value.Errors(ConsolidationParams, params)) {
      // TypeBox reports a closed object's extra field twice (the field, and the object); keep the object's.
      if (e.keyword === 'boolean') continue;
      const extra = (e.params as { additionalProperties?: string[] }).additionalProperties;
      const message = extra ? `has fields the schema does not define: ${extra.join(', ')}` : e.message;
      const key = `${e.instancePath} ${message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ path: e.instancePath || '/', message });
      if (out.length === 10) break;
    }
    return out;
  }
  const p = params as ConsolidationParamsValue;
  const out: { path: string; message: string }[] = [];
  const sum = WEIGHTS.reduce((s, k) => s + p.weighting[k], 0);
  if (Math.abs(sum - 1) > SUM_TOLERANCE) out.push({ path: '/weighting', message: `the four weights must sum to 1 (they sum to ${sum})` });
  if (p.compression.strategy === 'none' && p.compression.target_ratio !== 1) {
    out.push({ path: '/compression/target_ratio', message: 'must be 1 when strategy is none' });
  }
  const byImportance = new Map<string, Map<string, number>>();
  p.fade_rules.forEach((r, i) => {
    const actions = byImportance.get(r.importance) ?? new Map<string, number>();
    if (actions.has(r.action)) out.push({ path: `/fade_rules/${i}`, message: `a second ${r.action} rule for importance ${r.importance}` });
    actions.set(r.action, r.after_days);
    byImportance.set(r.importance, actions);
  });
  for (const [importance, actions] of byImportance) {
    const days = FADE_ACTIONS.filter((a) => actions.has(a)).map((a) => [a, actions.get(a)!] as const);
    for (let i = 1; i < days.length; i++) {
      if (days[i][1] <= days[i - 1][1]) {
        out.push({ path: '/fade_rules', message: `for importance ${importance}, ${days[i][0]} (after ${days[i][1]} days) must come after ${days[i - 1][0]} (after ${days[i - 1][1]} days)` });
      }
    }
  }
  return out;
}

/** The params' JSON Schema as published (capabilities, tool definitions): a plain copy. */
export const consolidationParamsJsonSchema = (): Record<string, unknown> => JSON.parse(JSON.stringify(ConsolidationParams)) as Record<string, unknown>;
