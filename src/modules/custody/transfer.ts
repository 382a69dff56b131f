/**
 * Custody transfer: the outgoing custodian (root key, active passport) names the incoming
 * custodian's public key and owner identifier and gets a challenge and the canonical custody-transfer
 * bytes (scheme svc.custody.transfer.v1); completing it with the current passport's signature over
 * them closes the custody epoch and opens the next for the incoming custodian, in one transaction:
 * every key is revoked, a new root key is returned once, the passport key and owner change, and the
 * outgoing custodian's covenant ends (its recovery key must not reclaim the agent). Reputation starts
 * fresh in the new epoch; prior epochs stay readable.
 */
import type { Kysely } from 'kysely';
import { ApiError } from '../../http/errors';
import { isUniqueViolation } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import { iso, type Clock } from '../../lib/clock';
import { KeyFormatError, parseEd25519PublicKey, publicKeyPem } from '../../lib/ed25519';
import { sha256hex } from '../../lib/hash';
import { isUuid, newId } from '../../lib/ids';
import { contentSha256, CUSTODY_TRANSFER_SCHEME, custodyTransferPayload } from '../../lib/signing';
import type { CustodyPort } from '../identity/custody-port';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import { keySha256 } from './model';
import type { Recovery } from './recovery';
import type { Restrictions } from './restrictions';
import type { CustodyStore } from './store';

export interface TransferDeps {
  db: Kysely<Database>;
  store: CustodyStore;
  log: TrustLog;
  epochs: Epochs;
  clock: Clock;
  identity: CustodyPort;
  restrictions: Restrictions;
  recovery: Pick<Recovery, 'liveIntent'>;
  baseUrl: string;
}

const notFound = () => new ApiError(404, 'CUSTODY_TRANSFER_NOT_FOUND', 'No pending custody transfer with this transfer_id for this agent: start one with POST /v1/me/custody/transfer/intent');
const conflict = (owner: string) => new ApiError(409, 'CUSTODY_TRANSFER_CONFLICT',
  `The incoming owner already has an agent of this agent_name (the pair agent_name, owner_identifier is unique)`, { incoming_owner_identifier: owner });

export function createTransfers(deps: TransferDeps) {
  const { db, store, log, epochs, clock, identity } = deps;

  async function preconditions(agentId: string) {
    const agent = await identity.agent(agentId);
    if (!agent) throw new ApiError(401, 'INVALID_API_KEY', 'The agent of this key no longer exists');
    if (agent.passportRevoked) throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked: custody transfer needs an active passport to sign it');
    await deps.restrictions.assertNotStaged(agentId, 'custody_transfer');
    const open = await deps.recovery.liveIntent(agentId);
    if (open) {
      throw new ApiError(409, 'RECOVERY_INTENT_ALREADY_OPEN', 'A recovery intent is open for this agent: custody cannot be transferred until it is vetoed, completed or lapses',
        { intent_id: open.intent_id });
    }
    return agent;
  }

  return {
    /** POST /v1/me/custody/transfer/intent (root). */
    async intent(agentId: string, input: { incoming_public_key: string; incoming_owner_identifier: string }) {
      const agent = await preconditions(agentId);
      let incomingPem: string;
      try {
        incomingPem = publicKeyPem(parseEd25519PublicKey(input.incoming_public_key));
      } catch (e) {
        throw new ApiError(422, 'INVALID_PASSPORT_PUBLIC_KEY', `incoming_public_key is not a valid Ed25519 public key: ${e instanceof KeyFormatError ? e.message : 'unreadable key'}`,
          { field: 'body.incoming_public_key' });
      }
      const owner = input.incoming_owner_identifier;
      if (await identity.pairTaken(agent.agentName, owner, agentId)) throw conflict(owner);
      const ch = await identity.issueChallenge(agentId);
      const epoch = await epochs.current(agentId);
      const transferId = newId();
      await store.insertTransfer({
        transfer_id: transferId, agent_id: agentId, epoch, challenge_id: ch.challengeId, incoming_public_key_pem: incomingPem,
        incoming_owner_identifier: owner, created_at: clock.now(), expires_at: Date.parse(ch.expiresAt), completed_at: null,
      });
      const content = { incoming_owner_identifier: owner, incoming_public_key: incomingPem };
      return {
        status: 'success',
        transfer_id: transferId,
        agent_id: agentId,
        epoch,
        challenge_id: ch.challengeId,
        challenge_nonce: ch.nonce,
        expires_at: ch.expiresAt,
        scheme: CUSTODY_TRANSFER_SCHEME,
        content,
        content_sha256: contentSha256(content),
        sign_payload: custodyTransferPayload({ agentId, challengeId: ch.challengeId, nonce: ch.nonce, incomingOwnerIdentifier: owner, incomingPublicKeyPem: incomingPem }),
        sign_payload_encoding: 'utf-8',
        complete_url: `${deps.baseUrl}/v1/me/custody/transfer/complete`,
      };
    },

    /** POST /v1/me/custody/transfer/complete (root): the current passport's signature over the transfer bytes. */
    async complete(agentId: string, input: { transfer_id: string; passport_signature?: string }) {
      const t = isUuid(input.transfer_id) ? await store.transfer(input.transfer_id.toLowerCase(), agentId) : undefined;
      if (!t || t.completed_at !== null) throw notFound();
      const before = await preconditions(agentId);
      const content = { incoming_owner_identifier: t.incoming_owner_identifier, incoming_public_key: t.incoming_public_key_pem };
      await identity.verifySigned({ agentId, scheme: CUSTODY_TRANSFER_SCHEME, challengeId: t.challenge_id, signature: input.passport_signature, content });
      const now = clock.now();
      let done: { apiKey: string; closed: number; opened: number; superseded: string | null; scoped: number };
      try {
        done = await db.transaction().execute(async (trx) => {
          await log.lockHeadFor(trx);
          if ((await epochs.current(agentId, trx)) !== t.epoch) throw new ApiError(409, 'CUSTODY_TRANSFER_CONFLICT', 'The custody epoch changed since this transfer was started: start a new one');
          if (!(await store.completeTransfer(trx, t.transfer_id, now))) throw notFound();
          const reborn = await identity.rebirth(trx, { agentId, passportPublicKeyPem: t.incoming_public_key_pem, ownerIdentifier: t.incoming_owner_identifier, at: now });
          const rolled = await epochs.rollOver(trx, agentId, now, 'custody_transfer');
          const covenant = await store.activeCovenant(agentId, trx);
          if (covenant) await store.supersede(trx, covenant.covenant_id, now);
          await store.setRecoveryKey(trx, agentId, null);
          await log.append(trx, {
            kind: 'custody.transferred', agentId, epoch: rolled.opened, at: now,
            data: {
              transfer_id: t.transfer_id, closed_epoch: rolled.closed, opened_epoch: rolled.opened,
              incoming_public_key_sha256: keySha256(t.incoming_public_key_pem), previous_public_key_sha256: before.passportKeySha256,
              incoming_owner_sha256: sha256hex(t.incoming_owner_identifier), superseded_covenant_id: covenant?.covenant_id ?? null,
              scoped_keys_revoked: reborn.scopedKeysRevoked,
            },
          });
          return { apiKey: reborn.apiKey, closed: rolled.closed, opened: rolled.opened, superseded: covenant?.covenant_id ?? null, scoped: reborn.scopedKeysRevoked };
        });
      } catch (e) {
        if (isUniqueViolation(e)) throw conflict(t.incoming_owner_identifier);
        throw e;
      }
      identity.forgetCachedTokens();
      return {
        status: 'success',
        agent_id: agentId,
        api_key: done.apiKey,
        api_key_notice: 'The new root key is shown once: hand it to the incoming custodian. Every earlier key of this agent (root, scoped keys, sessions) is revoked.',
        transferred_at: iso(now),
        epoch: { closed: done.closed, opened: done.opened },
        owner_identifier: t.incoming_owner_identifier,
        passport: { did: `did:svc:${agentId}`, public_key: t.incoming_public_key_pem },
        scoped_keys_revoked: done.scoped,
        covenant_superseded: done.superseded,
      };
    },
  };
}

export type Transfers = ReturnType<typeof createTransfers>;
