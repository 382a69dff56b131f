/**
 * Staged resurrection: for 14 days after a recovery proved through a channel covenant (the weak
 * tier), the agent may not spend credit (a call past its free floor, a stake), transfer custody or
 * write the commons; everything else works. Each refusal is 403 STAGED_RESURRECTION_RESTRICTED.
 *
 * Three ways in: `assertNotStaged` for services (custody transfer; the stake module when it lands),
 * `guardSpend` around billing's metering (memory writes included) (a paid charge is given back and
 * refused; a free one passes), and a preHandler hook for routes that declare `stagedRestricted`.
 */
import type { FastifyInstance } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import { iso, type Clock } from '../../lib/clock';
import type { Metering } from '../billing/metering';
import { STAGED_RESURRECTION_DAYS } from './model';
import type { CustodyStore } from './store';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route does that a staged resurrection forbids (e.g. 'commons_write'): refused with 403 STAGED_RESURRECTION_RESTRICTED. */
    stagedRestricted?: string;
  }
}

/** What a staged resurrection blocks (docs and the capabilities document). */
export const STAGED_RESTRICTIONS = ['credit_spend', 'stake', 'custody_transfer', 'commons_write'] as const;

export function createRestrictions(deps: { store: Pick<CustodyStore, 'stagedUntil'>; clock: Clock }) {
  const { store, clock } = deps;

  /** The end of the agent's staged resurrection, or undefined when it is not in one. */
  const stagedUntil = (agentId: string, db?: Kysely<Database> | Transaction<Database>) => store.stagedUntil(agentId, clock.now(), db);

  const refusal = (until: number, what: string) => new ApiError(403, 'STAGED_RESURRECTION_RESTRICTED',
    `This agent was recovered through a channel covenant and is in staged resurrection until ${iso(until)} (${STAGED_RESURRECTION_DAYS} days): ` +
    `${what} is not allowed until then; everything else works`,
    { staged_resurrection_until: iso(until), restricted: what });

  async function assertNotStaged(agentId: string, what: string, db?: Kysely<Database> | Transaction<Database>): Promise<void> {
    const until = await stagedUntil(agentId, db);
    if (until !== undefined) throw refusal(until, what);
  }

  return {
    stagedUntil,
    assertNotStaged,

    /** Billing's metering with paid charges refused during a staged resurrection (free calls pass). */
    guardSpend(inner: Metering): Metering {
      return {
        ...inner,
        async charge(agentId, action, opts) {
          const c = await inner.charge(agentId, action, opts);
          if (c.free || c.costUnits <= 0) return c;
          const until = await stagedUntil(agentId);
          if (until === undefined) return c;
          await c.refund();
          throw refusal(until, 'credit_spend');
        },
        async chargeWithin(trx, agentId, action, opts) {
          const c = await inner.chargeWithin(trx, agentId, action, opts);
          // Refused inside the caller's transaction: its rollback takes the charge back.
          if (!c.free && c.costUnits > 0) await assertNotStaged(agentId, 'credit_spend', trx);
          return c;
        },
      };
    },

    /** Refuses a route that declares `stagedRestricted` for an agent in staged resurrection (after auth and validation). */
    install(app: FastifyInstance): void {
      app.addHook('preHandler', async (request) => {
        const what = request.routeOptions.config?.stagedRestricted;
        if (!what || !request.auth) return;
        await assertNotStaged(request.auth.agentId, what);
      });
    },
  };
}

export type Restrictions = ReturnType<typeof createRestrictions>;
