/**
 * Recovery, as the API's state table has it:
 *
 *   no intent ──POST /v1/recovery/intent (proved through the covenant)──▶ open (public; 7-day veto window)
 *   open ──POST /v1/me/recovery/veto (the current holder's passport signature, inside the window)──▶ vetoed
 *   open, window passed ──POST /v1/recovery/initiate──▶ initiated ──POST /v1/recovery/complete──▶ completed
 *
 * Completion is a rebirth, in one transaction: every key of the agent is revoked, a new root key is
 * returned once, the passport key becomes the intent's, and the custody epoch closes and the next
 * opens. After a channel (weak-tier) recovery the agent is in staged resurrection for 14 days.
 *
 * The recovery routes are public; nothing moves without proof of the covenant on every step (a
 * signature by the recovery key over a fresh single-use challenge, or a code delivered through the
 * channel), and calls are rate-limited per client address and per agent (docs/trust.md). An intent
 * not completed within 7 days after its veto window lapses, so a forgotten one blocks nothing for long.
 */
import type { Kysely } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import type { RecoveryIntentsTable } from '../../infra/db/tables/custody';
import { RateLimiterError, type RateLimiter } from '../../infra/limits';
import { iso, type Clock } from '../../lib/clock';
import { KeyFormatError, parseEd25519PublicKey, publicKeyPem } from '../../lib/ed25519';
import { newId } from '../../lib/ids';
import {
  contentSha256, RECOVERY_COMPLETE_SCHEME, RECOVERY_INITIATE_SCHEME, RECOVERY_INTENT_SCHEME, RECOVERY_VETO_SCHEME, signedRequestPayload,
} from '../../lib/signing';
import type { CustodyPort } from '../identity/custody-port';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import type { Channel } from './channel';
import {
  COMPLETION_WINDOW_MS, ENROLMENT_GRACE_MS, intentLive, intentState, keySha256, STAGED_RESURRECTION_MS, VETO_WINDOW_MS,
} from './model';
import type { CustodyStore } from './store';

export interface RecoveryLimits {
  /** Calls of the recovery routes per client address per minute. */
  perAddressPerMinute: number;
  /** Calls of the recovery routes about one agent per hour. */
  perAgentPerHour: number;
  /** Channel codes delivered for one agent per hour. */
  channelCodesPerHour: number;
}

export interface RecoveryDeps {
  db: Kysely<Database>;
  store: CustodyStore;
  log: TrustLog;
  epochs: Epochs;
  clock: Clock;
  identity: CustodyPort;
  channel: Channel;
  limiter: RateLimiter;
  limits: RecoveryLimits;
  baseUrl: string;
}

type Intent = RecoveryIntentsTable;

const notFound = () => new ApiError(404, 'RECOVERY_INTENT_NOT_FOUND', 'No recovery intent with this intent_id');

export function createRecovery(deps: RecoveryDeps) {
  const { db, store, log, epochs, clock, identity } = deps;
  const intentUrl = `${deps.baseUrl}/v1/recovery/intent`;
  const initiateUrl = `${deps.baseUrl}/v1/recovery/initiate`;

  function view(i: Intent, now = clock.now()) {
    const state = intentState(i, now);
    return {
      intent_id: i.intent_id,
      agent_id: i.agent_id,
      state,
      tier: i.tier,
      epoch: i.epoch,
      new_passport_public_key: i.new_public_key_pem,
      new_passport_public_key_sha256: i.new_public_key_sha256,
      opened_at: iso(Number(i.opened_at)),
      veto_deadline: iso(Number(i.veto_deadline)),
      veto_window_open: state === 'open' && now < Number(i.veto_deadline),
      lapses_at: iso(Number(i.lapses_at)),
      vetoed_at: i.vetoed_at === null ? null : iso(Number(i.vetoed_at)),
      initiated_at: i.initiated_at === null ? null : iso(Number(i.initiated_at)),
      completed_at: i.completed_at === null ? null : iso(Number(i.completed_at)),
      staged_resurrection_until: i.staged_until === null ? null : iso(Number(i.staged_until)),
      opened_log_index: Number(i.opened_log_index),
      closed_log_index: i.closed_log_index === null ? null : Number(i.closed_log_index),
    };
  }

  async function limit(key: string, max: number, windowMs: number, what: string): Promise<void> {
    try {
      const d = await deps.limiter.hit(key, max, windowMs);
      if (!d.allowed) {
        throw new ApiError(429, 'RECOVERY_RATE_LIMITED', `Too many ${what}: at most ${max} per ${windowMs >= 3_600_000 ? 'hour' : 'minute'}; retry after ${d.retryAfterSeconds} s`,
          { retry_after_seconds: d.retryAfterSeconds }, { 'retry-after': String(d.retryAfterSeconds) });
      }
    } catch (e) {
      // The counters' store is down: the signature on every step still guards; the call goes on.
      if (!(e instanceof RateLimiterError)) throw e;
    }
  }

  /** Every recovery call counts against its client address and the agent it is about. */
  const limitAddress = (address: string) => limit(`recovery:addr:${address}`, deps.limits.perAddressPerMinute, 60_000, 'recovery calls from this address');
  const limitAgent = (agentId: string) => limit(`recovery:agent:${agentId}`, deps.limits.perAgentPerHour, 3_600_000, 'recovery calls for this agent');
  async function throttle(address: string, agentId: string): Promise<void> {
    await limitAddress(address);
    await limitAgent(agentId);
  }

  async function agentOrNotFound(agentId: string) {
    const a = await identity.agent(agentId);
    if (!a) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this agent_id');
    return a;
  }

  /** The covenant a recovery is proved through, usable now; RECOVERY_COVENANT_REQUIRED otherwise. */
  async function provingCovenant(agentId: string, now: number) {
    const c = await store.activeCovenant(agentId);
    if (!c) {
      throw new ApiError(409, 'RECOVERY_COVENANT_REQUIRED', 'This agent has no covenant: recovery needs an owner-recovery-key or channel covenant (POST /v1/me/covenant/amend)', { reason: 'no_covenant' });
    }
    if (c.template_id === 'owner-recovery-key') {
      const key = await store.recoveryKey(agentId);
      if (!key) throw new ApiError(409, 'RECOVERY_COVENANT_REQUIRED', 'This agent has no recovery key enrolled', { reason: 'no_recovery_key' });
      const usableFrom = Number(key.enrolled_at) + ENROLMENT_GRACE_MS;
      if (now < usableFrom) {
        throw new ApiError(409, 'RECOVERY_COVENANT_REQUIRED', `The recovery key was enrolled or changed less than 24 hours ago: it can sign recovery steps from ${iso(usableFrom)}`,
          { reason: 'enrolment_grace', usable_from: iso(usableFrom) });
      }
      return { tier: 'recovery_key' as const, covenant: c, recoveryKeyPem: key.public_key_pem };
    }
    if (c.template_id === 'channel') {
      const secret = await store.channelSecret(c.covenant_id);
      const url = (JSON.parse(c.params) as { url?: string }).url;
      if (!secret || !url) throw new ApiError(409, 'RECOVERY_COVENANT_REQUIRED', 'The channel covenant has no usable channel', { reason: 'no_channel' });
      return { tier: 'channel' as const, covenant: c, url, secret };
    }
    throw new ApiError(409, 'RECOVERY_COVENANT_REQUIRED', `The covenant ${c.template_id} is stored without activation: recovery needs an owner-recovery-key or channel covenant`,
      { reason: 'no_activation', template_id: c.template_id });
  }

  /** The agent's intent a later step acts on, or the step's refusal. */
  function refuseUnlessElapsed(i: Intent | undefined, now: number): Intent {
    const state = i ? intentState(i, now) : undefined;
    if (!i || state === 'completed' || state === 'lapsed') {
      throw new ApiError(409, 'RECOVERY_INTENT_REQUIRED', 'No open recovery intent whose veto window has passed: open one with POST /v1/recovery/intent', { intent_url: intentUrl });
    }
    if (state === 'vetoed') throw new ApiError(409, 'RECOVERY_INTENT_VETOED', 'The current holder vetoed this recovery intent', { intent_id: i.intent_id, vetoed_at: iso(Number(i.vetoed_at)) });
    if (now < Number(i.veto_deadline)) {
      const wait = Math.max(1, Math.ceil((Number(i.veto_deadline) - now) / 1000));
      throw new ApiError(409, 'RECOVERY_VETO_WINDOW_ACTIVE', `The veto window of this intent is open until ${iso(Number(i.veto_deadline))}`,
        { intent_id: i.intent_id, veto_deadline: iso(Number(i.veto_deadline)) }, { 'retry-after': String(wait) });
    }
    return i;
  }

  const parseNewKey = (value: string): string => {
    try {
      return publicKeyPem(parseEd25519PublicKey(value));
    } catch (e) {
      throw new ApiError(422, 'INVALID_PASSPORT_PUBLIC_KEY', `new_passport_public_key is not a valid Ed25519 public key: ${e instanceof KeyFormatError ? e.message : 'unreadable key'}`,
        { field: 'body.new_passport_public_key' });
    }
  };

  return {
    view,

    /** POST /v1/recovery/intent (public; proved through the covenant). */
    async intent(address: string, input: { agent_id: string; new_passport_public_key: string; challenge_id?: string; recovery_signature?: string; channel_code?: string }) {
      const agentId = input.agent_id.toLowerCase();
      await throttle(address, agentId);
      await agentOrNotFound(agentId);
      const newPem = parseNewKey(input.new_passport_public_key);
      const now = clock.now();
      const proof = await provingCovenant(agentId, now);
      const latest = await store.latestIntent(agentId);
      if (latest && intentLive(latest, now)) {
        throw new ApiError(409, 'RECOVERY_INTENT_ALREADY_OPEN', 'This agent already has an open recovery intent', { intent_id: latest.intent_id });
      }
      const content = { agent_id: agentId, new_passport_public_key: input.new_passport_public_key };
      if (proof.tier === 'recovery_key') {
        await identity.verifySigned({
          agentId, scheme: RECOVERY_INTENT_SCHEME, challengeId: input.challenge_id, signature: input.recovery_signature, content,
          signer: { field: 'recovery_signature', publicKeyPem: proof.recoveryKeyPem },
        });
      } else if (input.channel_code === undefined) {
        await limit(`recovery:channel:${agentId}`, deps.limits.channelCodesPerHour, 3_600_000, 'channel codes for this agent');
        const sent = await deps.channel.deliver({ agentId, url: proof.url, secret: proof.secret, bindingSha256: contentSha256(content), newKeySha256: keySha256(newPem) });
        if (!sent.delivered) {
          throw new ApiError(502, 'RECOVERY_CHANNEL_DELIVERY_FAILED', `The recovery code could not be delivered to the covenant's channel: ${sent.problem}`, { http_status: sent.httpStatus });
        }
        return {
          status: 202 as const,
          body: {
            status: 'channel_code_sent', agent_id: agentId, code_expires_at: iso(sent.expiresAt), content_sha256: contentSha256(content),
            next: 'send this request again with channel_code: the code delivered to the channel',
          },
        };
      } else if (!(await deps.channel.consume(agentId, contentSha256(content), input.channel_code))) {
        throw new ApiError(401, 'RECOVERY_CHANNEL_CODE_INVALID', 'channel_code is not a live code delivered for this agent and this request (codes are single use and expire after 15 minutes)',
          { field: 'body.channel_code' });
      }
      const intent = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const again = await store.latestIntent(agentId, trx);
        if (again && intentLive(again, now)) {
          throw new ApiError(409, 'RECOVERY_INTENT_ALREADY_OPEN', 'This agent already has an open recovery intent', { intent_id: again.intent_id });
        }
        const epoch = await epochs.current(agentId, trx);
        const row: Intent = {
          intent_id: newId(), agent_id: agentId, epoch, tier: proof.tier, new_public_key_pem: newPem, new_public_key_sha256: keySha256(newPem),
          status: 'open', opened_at: now, veto_deadline: now + VETO_WINDOW_MS, lapses_at: now + VETO_WINDOW_MS + COMPLETION_WINDOW_MS, opened_log_index: 0,
          vetoed_at: null, initiated_at: null, completed_at: null, closed_log_index: null, staged_until: null,
        };
        const appended = await log.append(trx, {
          kind: 'recovery.intent.opened', agentId, epoch, at: now,
          data: {
            intent_id: row.intent_id, tier: row.tier, covenant_id: proof.covenant.covenant_id, new_passport_public_key_sha256: row.new_public_key_sha256,
            veto_deadline: iso(row.veto_deadline), lapses_at: iso(row.lapses_at),
          },
        });
        row.opened_log_index = appended.index;
        await store.insertIntent(trx, row);
        return row;
      });
      return { status: 201 as const, body: { status: 'success', intent: view(intent, now) } };
    },

    /** GET /v1/agents/{agent_id}/recovery/intents (public): newest first. */
    async list(agentId: string, limitN: number) {
      await agentOrNotFound(agentId);
      const [rows, total] = await Promise.all([store.listIntents(agentId, limitN), store.countIntents(agentId)]);
      const now = clock.now();
      return { agent_id: agentId, intents: rows.map((r) => view(r, now)), total };
    },

    /** POST /v1/me/recovery/veto (root; the current holder's passport signature, inside the window). */
    async veto(agentId: string, input: { intent_id: string; challenge_id?: string; passport_signature?: string }) {
      const i = await store.intent(input.intent_id.toLowerCase());
      if (!i || i.agent_id !== agentId) throw notFound();
      const now = clock.now();
      const refuseClosed = (x: Intent) => {
        if (x.status === 'vetoed') throw new ApiError(409, 'RECOVERY_INTENT_VETOED', 'This recovery intent is already vetoed', { intent_id: x.intent_id, vetoed_at: iso(Number(x.vetoed_at)) });
        if (x.status !== 'open' || now >= Number(x.veto_deadline)) {
          throw new ApiError(409, 'RECOVERY_VETO_WINDOW_CLOSED', `The veto window of this intent closed at ${iso(Number(x.veto_deadline))}`,
            { intent_id: x.intent_id, veto_deadline: iso(Number(x.veto_deadline)) });
        }
      };
      refuseClosed(i);
      await identity.verifySigned({
        agentId, scheme: RECOVERY_VETO_SCHEME, challengeId: input.challenge_id, signature: input.passport_signature, content: { intent_id: i.intent_id },
      });
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const x = await store.intent(i.intent_id, trx);
        if (!x) throw notFound();
        refuseClosed(x);
        const appended = await log.append(trx, { kind: 'recovery.intent.vetoed', agentId, epoch: x.epoch, at: now, data: { intent_id: x.intent_id } });
        await store.updateIntent(trx, x.intent_id, { status: 'vetoed', vetoed_at: now, closed_log_index: appended.index });
        return { ...x, status: 'vetoed', vetoed_at: now, closed_log_index: appended.index };
      });
      return { status: 'success', intent: view(row, now) };
    },

    /** POST /v1/recovery/initiate (public): the open intent whose window passed, proved again; returns the completion challenge. */
    async initiate(address: string, input: { agent_id: string; challenge_id?: string; recovery_signature?: string; passport_signature?: string }) {
      const agentId = input.agent_id.toLowerCase();
      await throttle(address, agentId);
      await agentOrNotFound(agentId);
      const now = clock.now();
      const i = refuseUnlessElapsed(await store.latestIntent(agentId), now);
      await proveStep(i, RECOVERY_INITIATE_SCHEME, { agent_id: agentId }, input, false);
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const x = refuseUnlessElapsed(await store.intent(i.intent_id, trx), now);
        if (x.status === 'initiated') return x;
        await log.append(trx, { kind: 'recovery.initiated', agentId, epoch: x.epoch, at: now, data: { intent_id: x.intent_id } });
        await store.updateIntent(trx, x.intent_id, { status: 'initiated', initiated_at: now });
        return { ...x, status: 'initiated', initiated_at: now };
      });
      const ch = await identity.issueChallenge(agentId);
      const content = { intent_id: row.intent_id };
      return {
        status: 'success',
        intent: view(row, now),
        completion: {
          challenge_id: ch.challengeId, challenge_nonce: ch.nonce, expires_at: ch.expiresAt,
          scheme: RECOVERY_COMPLETE_SCHEME, content, content_sha256: contentSha256(content),
          sign_payload: signedRequestPayload(RECOVERY_COMPLETE_SCHEME, { agentId, challengeId: ch.challengeId, nonce: ch.nonce, content }),
          sign_payload_encoding: 'utf-8',
          signatures: row.tier === 'recovery_key'
            ? { recovery_signature: 'the recovery key', passport_signature: 'the new passport key this intent names' }
            : { passport_signature: 'the new passport key this intent names' },
          complete_url: `${deps.baseUrl}/v1/recovery/complete`,
        },
      };
    },

    /** POST /v1/recovery/complete (public): the rebirth. */
    async complete(address: string, input: { intent_id: string; challenge_id?: string; recovery_signature?: string; passport_signature?: string }) {
      await limitAddress(address);
      const i = await store.intent(input.intent_id.toLowerCase());
      if (!i) throw notFound();
      await limitAgent(i.agent_id);
      const now = clock.now();
      refuseUnlessElapsed(i, now);
      if (i.status !== 'initiated') {
        throw new ApiError(409, 'RECOVERY_INTENT_REQUIRED', 'This intent is not initiated: POST /v1/recovery/initiate first, then complete with the challenge it returns',
          { intent_url: intentUrl, initiate_url: initiateUrl, intent_id: i.intent_id });
      }
      await proveStep(i, RECOVERY_COMPLETE_SCHEME, { intent_id: i.intent_id }, input, true);
      const failed = (reason: string, message: string) => new ApiError(409, 'RECOVERY_REBIRTH_FAILED', `${message}; nothing was changed`, { reason, intent_id: i.intent_id });
      // Read before the transaction: on SQLite the transaction holds the one connection.
      const agent = await identity.agent(i.agent_id);
      if (!agent || agent.status !== 'active') throw failed('agent_inactive', 'The agent is not active');
      let done: { apiKey: string; closed: number; opened: number; stagedUntil: number | null; row: Intent; scoped: number };
      try {
        done = await db.transaction().execute(async (trx) => {
          await log.lockHeadFor(trx);
          const x = await store.intent(i.intent_id, trx);
          if (!x || x.status !== 'initiated' || intentState(x, now) !== 'initiated') throw failed('intent_changed', 'The intent is no longer initiated (completed or lapsed meanwhile)');
          if ((await epochs.current(x.agent_id, trx)) !== x.epoch) throw failed('epoch_changed', 'The custody epoch this intent would close has already closed');
          const reborn = await identity.rebirth(trx, { agentId: x.agent_id, passportPublicKeyPem: x.new_public_key_pem, at: now });
          const rolled = await epochs.rollOver(trx, x.agent_id, now, 'recovery');
          await store.dropPendingTransfers(trx, x.agent_id);
          const stagedUntil = x.tier === 'channel' ? now + STAGED_RESURRECTION_MS : null;
          const appended = await log.append(trx, {
            kind: 'recovery.completed', agentId: x.agent_id, epoch: rolled.opened, at: now,
            data: {
              intent_id: x.intent_id, tier: x.tier, closed_epoch: rolled.closed, opened_epoch: rolled.opened,
              new_passport_public_key_sha256: x.new_public_key_sha256, previous_passport_public_key_sha256: agent.passportKeySha256,
              scoped_keys_revoked: reborn.scopedKeysRevoked, staged_resurrection_until: stagedUntil === null ? null : iso(stagedUntil),
            },
          });
          const patch = { status: 'completed', completed_at: now, closed_log_index: appended.index, staged_until: stagedUntil };
          await store.updateIntent(trx, x.intent_id, patch);
          return { apiKey: reborn.apiKey, closed: rolled.closed, opened: rolled.opened, stagedUntil, row: { ...x, ...patch }, scoped: reborn.scopedKeysRevoked };
        });
      } catch (e) {
        if (e instanceof ApiError || (e as { code?: string })?.code === 'DATABASE_UNAVAILABLE') throw e;
        throw new ApiError(500, 'RECOVERY_REBIRTH_FAILED', 'The rebirth could not be completed; nothing was changed (the transaction was rolled back): retry', { intent_id: i.intent_id });
      }
      identity.forgetCachedTokens();
      return {
        status: 'success',
        agent_id: i.agent_id,
        api_key: done.apiKey,
        api_key_notice: 'The new root key is shown once. Every earlier key of this agent (root, scoped keys, sessions) is revoked.',
        epoch: { closed: done.closed, opened: done.opened },
        passport: { did: `did:svc:${i.agent_id}`, public_key: i.new_public_key_pem },
        scoped_keys_revoked: done.scoped,
        staged_resurrection_until: done.stagedUntil === null ? null : iso(done.stagedUntil),
        intent: view(done.row, now),
      };
    },

    /** Why the agent's covenant may not change now, or undefined (COVENANT_AMEND_FORBIDDEN). */
    async amendBlocked(agentId: string, trx?: Parameters<CustodyStore['latestIntent']>[1]) {
      const now = clock.now();
      const latest = await store.latestIntent(agentId, trx);
      if (latest && intentLive(latest, now)) {
        return { reason: 'recovery_intent_open', message: `A recovery intent (${latest.intent_id}) is open: the covenant cannot change until it is vetoed, completed or lapses` };
      }
      const staged = await store.stagedUntil(agentId, now, trx);
      if (staged !== undefined) return { reason: 'staged_resurrection', message: `The agent is in staged resurrection until ${iso(staged)}: the covenant cannot change until then` };
      return undefined;
    },

    /** The agent's live intent (custody transfer is refused while one is open). */
    async liveIntent(agentId: string) {
      const latest = await store.latestIntent(agentId);
      return latest && intentLive(latest, clock.now()) ? latest : undefined;
    },
  };

  /**
   * Proof of a later step: a recovery-key intent is signed by the recovery key (and, at completion,
   * co-signed by the new passport key); a channel intent by the new passport key it named.
   */
  async function proveStep(i: Intent, scheme: typeof RECOVERY_INITIATE_SCHEME | typeof RECOVERY_COMPLETE_SCHEME, content: Record<string, unknown>,
    input: { challenge_id?: string; recovery_signature?: string; passport_signature?: string }, completing: boolean): Promise<void> {
    const newKey = { field: 'passport_signature', publicKeyPem: i.new_public_key_pem };
    if (i.tier === 'recovery_key') {
      const key = await store.recoveryKey(i.agent_id);
      if (!key) throw new ApiError(409, 'RECOVERY_COVENANT_REQUIRED', 'This agent has no recovery key enrolled', { reason: 'no_recovery_key' });
      await identity.verifySigned({
        agentId: i.agent_id, scheme, challengeId: input.challenge_id, signature: input.recovery_signature, content,
        signer: { field: 'recovery_signature', publicKeyPem: key.public_key_pem },
        ...(completing ? { cosigners: [{ ...newKey, signature: input.passport_signature }] } : {}),
      });
    } else {
      await identity.verifySigned({ agentId: i.agent_id, scheme, challengeId: input.challenge_id, signature: input.passport_signature, content, signer: newKey });
    }
  }
}

export type Recovery = ReturnType<typeof createRecovery>;
