/**
 * "Probationary" for dynamic browse (dynamic mode needs the standard trust tier).
 *
 * An agent is probationary while BOTH hold:
 *   - it is billed on the free tier (no credit ever bought, not a legacy monthly plan), and
 *   - it registered less than SVC_BROWSE_PROBATION_HOURS ago (default 24; 0 turns probation off), and
 *   - it holds no trust level above floor (staked, sponsored or established: src/modules/trust/levels.ts,
 *     the one function every trust check reads).
 * Everyone else has the standard tier. Rationale: dynamic mode runs a real browser for the
 * caller, the most expensive and most abusable thing svc does; a brand-new, unpaid identity is
 * the cheapest to mint in bulk, so it waits a day (or buys any amount of credit). Static browse
 * is never affected. The rule reads the registration time, the billing tier and the trust levels,
 * so it is the same on every instance and needs no extra state.
 */
import { isElevated } from '../trust/levels';
import type { TierReader, TrustLevelReader } from './ports';

export interface TrustInput { agentId: string; tier: string; createdAt: number }

export function createProbation(deps: { tiers: TierReader; levels?: TrustLevelReader; probationHours: number; now: () => number }) {
  const windowMs = deps.probationHours * 3_600_000;
  return {
    windowMs,
    async isProbationary(a: TrustInput): Promise<boolean> {
      if (windowMs === 0 || deps.now() - a.createdAt >= windowMs) return false;
      const tier = await deps.tiers.effectiveTier(a.agentId, a.tier);
      if (tier.name !== 'free') return false;
      return !(deps.levels && isElevated(await deps.levels(a.agentId)));
    },
  };
}

export type Probation = ReturnType<typeof createProbation>;
