/**
 * Builds the declarations for app.ts: consolidation policy, policy bindings, delegation, journal
 * commitments and tool passports, each fact a trust log entry, with their parity replay and
 * adoption counts registered on the trust module.
 */
import type { DatabaseHandle } from '../../infra/db/database';
import type { Clock } from '../../lib/clock';
import type { PassportSignatureVerifier } from '../identity/signatures';
import type { TrustModule } from '../trust/module';
import { createDelegationService, type DelegableTool, type DelegatedKeyIssuer } from './delegation';
import { createJournalService } from './journal';
import { createPolicyService, type DeclarantProfile } from './policies';
import { declarationsReplayer } from './replay';
import { declarationRoutes } from './routes';
import { createDeclarationsStore } from './store';
import { createToolService } from './tools';

export function createDeclarationsModule(deps: {
  database: DatabaseHandle; clock: Clock; trust: TrustModule; baseUrl: string;
  verify: PassportSignatureVerifier;
  profile: (agentId: string) => Promise<DeclarantProfile | undefined>;
  /** The svc tools a delegated key can use (from the live tool definitions, read after the app is ready). */
  delegableTools: () => Map<string, DelegableTool>;
  issueDelegatedKey: DelegatedKeyIssuer;
}) {
  const { database, clock, trust } = deps;
  const db = database.db;
  const store = createDeclarationsStore(db);
  const common = { db, store, log: trust.log, epochs: trust.epochs, clock };
  const policies = createPolicyService({ ...common, verify: deps.verify, profile: deps.profile });
  const journal = createJournalService({ ...common, agentExists: async (id) => (await deps.profile(id)) !== undefined });
  const tools = createToolService({ ...common, baseUrl: deps.baseUrl });
  const delegation = createDelegationService({ ...common, policies, tools: deps.delegableTools, issueKey: () => deps.issueDelegatedKey });
  trust.addProjection({
    replay: declarationsReplayer(store),
    adoption: async (since) => ({ declarations: await store.counts(since) }),
  });
  return { policies, journal, tools, delegation, routes: declarationRoutes({ policies, journal, tools, delegation }) };
}

export type DeclarationsModule = ReturnType<typeof createDeclarationsModule>;
