/**
 * Recovery through a channel covenant (the weak tier): a single-use code is POSTed to the HTTPS URL
 * the agent declared, through the guarded outbound client (SSRF rules, no redirects), signed like a
 * parse callback with the covenant's secret:
 *
 *   svc-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(channel secret, "<t>.<raw body>")>
 *
 * Body: {event: "recovery.channel_code", event_id, created_at, agent_id, code, content_sha256,
 * new_passport_public_key_sha256, expires_at, intent_url}. The code proves the channel for exactly
 * the intent request it was sent for (content_sha256 binds it); only its SHA-256 is stored.
 */
import { randomBytes } from 'node:crypto';
import { signatureHeader } from '../../infra/queue/push-signature';
import { isWebError, type GuardedClient } from '../../infra/web';
import { iso, type Clock } from '../../lib/clock';
import { sha256hex } from '../../lib/hash';
import { newId } from '../../lib/ids';
import { CHANNEL_CODE_TTL_MINUTES } from './model';
import type { CustodyStore } from './store';

export const CHANNEL_SIGNATURE_HEADER = 'svc-signature';
const DELIVERY_TIMEOUT_MS = 10_000;

export function createChannel(deps: { client: GuardedClient; store: CustodyStore; clock: Clock; baseUrl: string }) {
  const { client, store, clock } = deps;
  return {
    /** Sends a new code bound to `bindingSha256`; the code row is dropped again when the delivery fails. */
    async deliver(input: { agentId: string; url: string; secret: string; bindingSha256: string; newKeySha256: string }) {
      const now = clock.now();
      const code = `rcc_${randomBytes(32).toString('base64url')}`;
      const codeId = newId();
      const expiresAt = now + CHANNEL_CODE_TTL_MINUTES * 60_000;
      await store.insertCode({ code_id: codeId, agent_id: input.agentId, binding_sha256: input.bindingSha256, code_sha256: sha256hex(code), created_at: now, expires_at: expiresAt });
      const body = JSON.stringify({
        event: 'recovery.channel_code', event_id: `evt_${codeId}`, created_at: iso(now), agent_id: input.agentId, code,
        content_sha256: input.bindingSha256, new_passport_public_key_sha256: input.newKeySha256, expires_at: iso(expiresAt),
        intent_url: `${deps.baseUrl}/v1/recovery/intent`,
      });
      let problem: string | undefined;
      let httpStatus: number | null = null;
      try {
        const res = await client.fetch(input.url, {
          method: 'POST', body, followRedirects: false, maxBytes: 16 * 1024, onOversize: 'truncate', timeoutMs: DELIVERY_TIMEOUT_MS,
          headers: {
            'content-type': 'application/json', accept: '*/*',
            [CHANNEL_SIGNATURE_HEADER]: signatureHeader(input.secret, body, Math.floor(now / 1000)), 'svc-event-id': `evt_${codeId}`,
          },
        });
        httpStatus = res.status;
        if (res.status < 200 || res.status > 299) problem = `the channel answered HTTP ${res.status}`;
      } catch (e) {
        problem = isWebError(e) ? `${e.reason}: ${e.message}` : `delivery failed: ${e instanceof Error ? e.message : String(e)}`;
      }
      if (problem) {
        await store.deleteCode(codeId);
        return { delivered: false as const, problem, httpStatus };
      }
      return { delivered: true as const, expiresAt, httpStatus };
    },

    /** Consumes the code sent for this binding (single use, unexpired); false when it is not one. */
    consume: (agentId: string, bindingSha256: string, code: string) => store.consumeCode(agentId, bindingSha256, sha256hex(code), clock.now()),
  };
}

export type Channel = ReturnType<typeof createChannel>;
