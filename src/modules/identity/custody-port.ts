/**
 * The narrow interface the custody module (covenants, recovery, custody transfer) uses into identity:
 * what it may know of an agent, challenges for its signed steps, the signed-request verifier, and the
 * rebirth of an agent's keys inside custody's own transaction. Custody reaches identity's tables only
 * through this.
 */
import { createPublicKey } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { iso, type Clock } from '../../lib/clock';
import { sha256hex } from '../../lib/hash';
import { newId, randomToken } from '../../lib/ids';
import type { CustodyStore } from './custody-store';
import { issueToken, type KeyEventSink } from './keys';
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
  challengeTtlSeconds: number;
  /** Challenges kept per agent (the newest). */
  maxOpenChallenges: number;
  verifySigned: PassportSignatureVerifier;
  forgetCachedTokens: () => void;
  onKeyEvent?: KeyEventSink;
}

export const spkiSha256 = (pem: string): string => sha256hex(createPublicKey(pem).export({ format: 'der', type: 'spki' }));

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
    async issueChallenge(agentId: string) {
      const now = clock.now();
      const row = {
        challenge_id: newId(), agent_id: agentId, nonce: randomToken(32),
        issued_at: now, expires_at: now + deps.challengeTtlSeconds * 1000, used_at: null,
      };
      await store.insertChallenge(row);
      await store.trimChallenges(agentId, deps.maxOpenChallenges);
      return { challengeId: row.challenge_id, nonce: row.nonce, issuedAt: iso(now), expiresAt: iso(row.expires_at) };
    },

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
