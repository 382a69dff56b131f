/**
 * GET /v1/capabilities: assembled from the live route table and the configuration on each
 * request (cheap: no I/O), so nothing in it is typed twice and a route added later appears
 * without anyone editing the document. An authenticated caller also gets its referral code.
 */
import { SVC_VERSION } from '../../version';
import {
  authenticationBlock, billingTiersBlock, pricingBlock, rateLimitsBlock, referralRewardsBlock, tierDescriptionsBlock,
  type BlockContext,
} from './blocks-core';
import {
  browserBlock, commonsBlock, credibilityScoringBlock, documentStorageBlock, feedbackBlock, memoryLedgerBlock, mcpBlock, webSearchBlock,
} from './blocks-features';
import {
  consolidationPolicyBlock, covenantBlock, directoryBlock, disputeBlock, journalBlock, passportBlock, policyBindingsBlock,
  recoveryBlock, trustBlock,
} from './blocks-trust';
import { endpointRef } from './schema-facts';

export function capabilitiesDocument(ctx: BlockContext, caller?: { agentId: string }) {
  return {
    status: 'success' as const,
    version: SVC_VERSION,
    base_url: ctx.baseUrl,
    endpoints: ctx.table.all().map(endpointRef),
    authentication: authenticationBlock(ctx),
    rate_limits: rateLimitsBlock(ctx),
    billing_tiers: billingTiersBlock(),
    credibility_scoring: credibilityScoringBlock(ctx),
    // Beyond the spec's list (additive): whether web search works on this host, and if not why.
    web_search: webSearchBlock(ctx),
    feedback: feedbackBlock(ctx),
    browser: browserBlock(ctx),
    passport: passportBlock(ctx),
    covenant: covenantBlock(ctx),
    memory_ledger: memoryLedgerBlock(ctx),
    consolidation_policy: consolidationPolicyBlock(ctx),
    policy_bindings: policyBindingsBlock(ctx),
    recovery: recoveryBlock(ctx),
    journal: journalBlock(ctx),
    dispute: disputeBlock(ctx),
    trust: trustBlock(ctx),
    directory: directoryBlock(ctx),
    commons: commonsBlock(ctx),
    pricing: pricingBlock(ctx),
    tier_descriptions: tierDescriptionsBlock(),
    referral_rewards: referralRewardsBlock(ctx, caller?.agentId),
    document_storage: documentStorageBlock(ctx),
    mcp: mcpBlock(ctx),
  };
}
