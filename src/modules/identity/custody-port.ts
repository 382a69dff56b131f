/**
 * The narrow interface the custody module (covenants, recovery, custody transfer) uses into identity:
 * what it may know of an agent, challenges for its signed steps, the signed-request verifier, and the
 * rebirth of an agent's keys inside custody's own transaction. Custody reaches identity's tables only
 * through this.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { iso, type Clock } from '../../lib/clock';
import type { CustodyStore } from './custody-store';
import { issueToken, type KeyEventSink } from './keys';
import { spkiSha256, type PassportLifecycle } from './passport-lifecycle';
import type { PassportSignatureVerifier } from './signatures';
import type { IdentityStore } from './store';

export interface CustodyAgent {
  agentId: string;
  agentName: string;
  owner: string;
  status: string;
  passportRevoked: boolean;
  passportPublicKeyPem: string;
  /** SHA-256 (hex) of the passport key's SPKI bytes. */
  passportKeySha256: string;
}

export interface CustodyPortDeps {
  store: IdentityStore;
  custodyStore: CustodyStore;
  clock: Clock;
  /** Issues a challenge of the agent (passport-lifecycle.ts). */
  issueChallenge: PassportLifecycle['issueChallenge'];
  verifySigned: PassportSignatureVerifier;
  forgetCachedTokens: () => void;
  onKeyEvent?: KeyEventSink;
}

export function createCustodyPort(deps: CustodyPortDeps) {
  const { store, custodyStore, clock } = deps;
  return {
    verifySigned: deps.verifySigned,

    async agent(agentId: string): Promise<CustodyAgent | undefined> {
      const [agent, passport] = await Promise.all([store.findAgent(agentId), store.findPassport(agentId)]);
      if (!agent || !passport) return undefined;
      return {
        agentId: agent.agent_id, agentName: agent.agent_name, owner: agent.owner_identifier, status: agent.status,
        passportRevoked: passport.revoked_at !== null, passportPublicKeyPem: passport.public_key_pem,
        passportKeySha256: spkiSha256(passport.public_key_pem),
      };
    },

    /** A challenge of the agent for a signed custody step (given also for a revoked passport). */
    issueChallenge: (agentId: string) => deps.issueChallenge(agentId),

    pairTaken: (agentName: string, owner: string, exceptAgentId: string) => custodyStore.pairTaken(agentName, owner, exceptAgentId),

    /**
     * Inside `trx`: every key of the agent is revoked (its scoped keys' `key.revoked` entries appended),
     * a new root key stored, the passport key replaced (a revoked passport is active again) and, with
     * `ownerIdentifier`, the owner changed. Returns the new root key: shown once, never stored. Call
     * `forgetCachedTokens` after the transaction commits.
     */
    async rebirth(trx: Transaction<Database>, input: { agentId: string; passportPublicKeyPem: string; ownerIdentifier?: string; at: number }) {
      const { agentId, at } = input;
      const scoped = await custodyStore.revokeAllKeys(trx, agentId, at);
      for (const k of scoped) {
        await deps.onKeyEvent?.(trx, {
          kind: 'key.revoked', agentId, at,
          data: { key_id: k.key_id as string, scopes: JSON.parse(k.scopes) as string[], label: k.label, expires_at: k.expires_at === null ? null : iso(Number(k.expires_at)) },
        });
      }
      const root = issueToken(clock, agentId, 'root');
      await custodyStore.insertKey(trx, { ...root.row, created_at: at });
      if (!(await custodyStore.replacePassportKey(trx, agentId, input.passportPublicKeyPem))) throw new Error(`agent ${agentId} has no passport`);
      if (input.ownerIdentifier !== undefined) await custodyStore.setOwner(trx, agentId, input.ownerIdentifier, at);
      return { apiKey: root.token, scopedKeysRevoked: scoped.length };
    },

    forgetCachedTokens: deps.forgetCachedTokens,
  };
}

export type CustodyPort = ReturnType<typeof createCustodyPort>;
