import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config';
import { installAuth } from './http/auth';
import { createEnvelopeBuilder } from './http/envelope';
import { clientErrors, frameworkErrors, installErrorHandling } from './http/errors';
import { installInputGuard } from './http/input-guard';
import { installResponseValidation } from './http/response-validation';
import { installSharedErrorResponses } from './http/error-responses';
import { installSlowClientLimits } from './http/slow-clients';
import { requestSerializer } from './http/log-redact';
import { exactBodyValidators } from './http/validators';
import { sharedSerializers } from './http/serializers';
import { systemClock, type Clock } from './lib/clock';
import { openDatabase, type DatabaseHandle } from './infra/db/database';
import { migrateToLatest } from './infra/db/migrate';
import { healthRoutes } from './modules/health/routes';
import { createIdentityStore } from './modules/identity/store';
import { createIdentityService } from './modules/identity/service';
import { identityRoutes } from './modules/identity/routes';
import { createRouteTable } from './modules/discovery/route-table';
import { registerOpenApi } from './modules/discovery/openapi';
import { createToolCatalog } from './modules/discovery/tool-defs';
import { hostFeatures, toolHostNotes } from './modules/discovery/host-features';
import { discoveryRoutes } from './modules/discovery/routes';
import { toolRoutes } from './modules/discovery/tool-routes';
import { openApiRoutes } from './modules/discovery/openapi-routes';
import { mcpRoutes } from './modules/mcp/routes';
import { createMemoryModule } from './modules/memory/module';
import { createCommonsModule } from './modules/commons/module';
import { createVectorRuntime } from './infra/vectors/runtime';
import { createBillingModule } from './modules/billing/module';
import { createStakeModule } from './modules/stake/module';
import { createUsageModule } from './modules/usage/module';
import { createSearchModule } from './modules/search/module';
import { createApprovalModule } from './modules/approvals/module';
import { createFeedbackModule } from './modules/feedback/module';
import { createBlobsModule } from './modules/blobs/module';
import { createParseModule, type ParseModule } from './modules/parse/module';
import { effectiveTier } from './lib/tiers';
import { createBrowseModule } from './modules/browse/module';
import { createTrustModule } from './modules/trust/module';
import { createReputationModule } from './modules/reputation/module';
import { TRUST_LEVEL_RULE } from './modules/trust/levels';
import { passportRotationsReplayer, scopedKeysReplayer } from './modules/identity/keys-replay';
import { createDirectoryModule } from './modules/directory/module';
import { createCustodyModule, createCustodyRestrictions, type CustodyModule } from './modules/custody/module';
import { memoryMeterFrom } from './modules/billing/memory-meter';
import { createDeclarationsModule } from './modules/declarations/module';
import { delegableTools, type DelegableTool } from './modules/declarations/delegation';
import { toolsOfRoute } from './modules/discovery/tool-map';
import { createDirectoryEntries } from './modules/identity/directory-entries';
import { loadSyntheticProfiles } from './modules/directory/synthetic';

export interface AppOptions {
  config: Config;
  clock?: Clock;
  /** pino options, or false for no logs (tests). */
  logger?: boolean | Record<string, unknown>;
}

export interface App {
  app: FastifyInstance;
  database: DatabaseHandle;
  clock: Clock;
}

/** Secrets never reach the logs. */
const REDACT = [
  'req.headers.authorization', 'req.headers["x-admin-key"]', 'req.headers["stripe-signature"]',
  '*.api_key', '*.private_key', '*.session_token', '*.client_secret', '*.password',
];

/**
 * Readable log lines for a terminal (pino-pretty in pino's worker thread), JSON lines otherwise;
 * `auto` decides by whether standard output is a terminal.
 */
function prettyLogs(format: 'auto' | 'pretty' | 'json') {
  if (format === 'json' || (format === 'auto' && !process.stdout.isTTY)) return {};
  return { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,reqId', singleLine: true } } };
}

/** Composition root: builds adapters and services, then registers each module's routes. */
export async function buildApp(opts: AppOptions): Promise<App> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger === false
    ? false
    : {
      level: config.core.logLevel, redact: { paths: REDACT, censor: '[redacted]' }, serializers: { req: requestSerializer },
      ...prettyLogs(config.core.logFormat),
      ...(typeof opts.logger === 'object' ? opts.logger : {}),
    };

  // Operator-configured directory profiles are checked before anything is opened (a bad file stops the start).
  const syntheticProfiles = loadSyntheticProfiles(config.trust.directorySyntheticProfiles);
  const database = openDatabase({ databaseUrl: config.core.databaseUrl, dataDir: config.core.dataDir, poolMax: config.core.databasePoolMax });
  try {
    await migrateToLatest(database.db);
  } catch (e) {
    await database.close();
    throw e;
  }

  const app = Fastify({
    logger,
    bodyLimit: config.core.bodyLimitBytes,
    // Memory keys are up to 128 characters; Fastify's default of 100 would answer 414 before
    // validation. Longer path values reach the route's own validation too (MEMORY_KEY_INVALID, a 404
    // for an id) up to 8 KiB; beyond, frameworkErrors answers 414 URI_TOO_LONG in the API's format.
    routerOptions: { maxParamLength: 8192 },
    frameworkErrors,
    clientErrorHandler: clientErrors,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: { customOptions: { allErrors: false } },
    schemaController: { compilersFactory: { buildValidator: exactBodyValidators(), buildSerializer: sharedSerializers() } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // ---- services (each module's service takes narrow dependencies) ----
  // The trust log first: registration opens epoch 1 in it, in the registration's transaction.
  const trust = await createTrustModule({ config, database, clock, agentExists: async (id) => (await identity.trustProfile(id)) !== undefined });
  await trust.epochs.backfill();
  // Staged resurrection (custody) refuses credit spend and commons writes; the module itself is built
  // once the rate limiter exists, and records a registration's covenant in the registration's transaction.
  const staged = createCustodyRestrictions(database.db, clock, database.sqlite);
  let custody: CustodyModule | undefined;
  const identity = createIdentityService({
    store: createIdentityStore(database.db, database.sqlite),
    clock,
    baseUrl: config.core.baseUrl,
    challengeTtlSeconds: config.core.challengeTtlSeconds,
    affiliationSecret: config.core.affiliationSecret,
    foundingPeriodEnd: config.core.foundingPeriodEnd,
    authCacheMs: config.core.authCacheMs,
    onRegistered: async (trx, agentId, at) => {
      await trust.epochs.openFirst(trx, agentId, at);
      await custody?.registered(trx, agentId, at);
    },
    trustLevels: (agent, o) => trust.levels.of(agent, o),
    onKeyEvent: async (trx, e) => {
      const appended = await trust.log.append(trx, { kind: e.kind, agentId: e.agentId, epoch: await trust.epochs.current(e.agentId, trx), at: e.at, data: { ...e.data } });
      // A revoked passport leaves the directory in the same transaction.
      if (e.kind === 'passport.revoked') await directory.directory.revoked(trx, e.agentId);
      return appended;
    },
  });
  const envelope = createEnvelopeBuilder(config.core, clock, () => identity.communityStats());

  // ---- cross-cutting HTTP ----
  // JSON only by default; routes that take other bodies (blob upload) register their own parsers.
  app.removeContentTypeParser('text/plain');
  installErrorHandling(app);
  // Test mode: every response checked against its route's declared schema (loaded only when on).
  if (config.core.validateResponses) await installResponseValidation(app);
  installInputGuard(app);
  installSlowClientLimits(app, config.core);
  // A delegated key's write_set is checked against the tools whose actions call the route (tool-map.ts).
  installAuth(app, { authenticator: identity, adminKey: config.core.adminKey, baseUrl: config.core.baseUrl, toolsOfRoute });
  staged.install(app);
  // Every route declares the shared error body for the error statuses its configuration implies.
  installSharedErrorResponses(app);
  // Discovery sees every route registered after this line (route table, OpenAPI, MCP tools).
  const routeTable = createRouteTable(app);
  await registerOpenApi(app, { baseUrl: config.core.baseUrl, table: routeTable });
  const toolCatalog = createToolCatalog(routeTable, config.core.baseUrl, toolHostNotes(hostFeatures(config)));

  // ---- modules ----
  await app.register(identityRoutes({ identity, envelope, baseUrl: config.core.baseUrl }));
  // Reputation on the trust log; passports and agent cards show its figures.
  const reputation = createReputationModule({ config, database, clock, envelope, trust, profile: (id, opts) => identity.trustProfile(id, opts) });
  identity.useReputation((id, decomposed) => reputation.service.current(id, decomposed));
  trust.addProjection({
    trace: async (id) => {
      const p = await identity.trustProfile(id);
      return { trust_levels: { value: p?.trustLevels ?? [], rule: TRUST_LEVEL_RULE, log_indexes: [] } };
    },
    adoption: async () => ({ identity: await identity.trustAdoption() }),
  });
  // Scoped keys: key.created / key.revoked entries against the api_keys rows they made.
  trust.addProjection({ replay: scopedKeysReplayer() });
  // Passport rotations: passport.rotated (and the grace a revocation ends) against passport_rotations.
  trust.addProjection({ replay: passportRotationsReplayer() });
  await app.register(reputation.routes);
  // The directory: rank rows follow descriptions, scores and revocations, each in its transaction.
  const directory = await createDirectoryModule({
    config, database, clock, envelope, trust, profile: (id) => identity.trustProfile(id),
    entries: createDirectoryEntries(database.db), reputation: reputation.service, synthetic: syntheticProfiles, log: (msg, err) => app.log.error({ err }, msg),
  });
  identity.useSkillVouches((id, skills) => directory.vouches.skillVouches(id, skills));
  identity.useDirectory({ onDescribed: (trx, id) => directory.directory.described(trx, id), syntheticProfiles: () => directory.directory.syntheticCount() });
  reputation.service.onScoreChange((trx, id, score, at) => directory.directory.scoreChanged(trx, id, score, at));
  await app.register(directory.routes);
  // Declarations: consolidation policy, policy bindings, delegation, journal commitments, tool passports.
  let delegable: Map<string, DelegableTool> | undefined;
  const declarations = createDeclarationsModule({
    database, clock, trust, baseUrl: config.core.baseUrl, verify: identity.verifySigned,
    profile: async (id) => {
      const agent = await identity.getAgent(id);
      return agent ? { agentId: agent.agent_id, frozen: Number(agent.frozen) === 1 } : undefined;
    },
    // The tool definitions are derived once the app is ready (every route registered).
    delegableTools: () => (delegable ??= delegableTools(toolCatalog.definitions())),
    issueDelegatedKey: identity.issueDelegatedKey,
  });
  await app.register(declarations.routes);
  await app.register(trust.routes);
  // Embedder + vector index + outbox indexer, shared by memory, commons and blob search.
  const vectors = await createVectorRuntime({ config, database, clock, log: (msg, err) => app.log.warn({ err }, msg) });
  // Billing owns metering: memory writes, search, browse and parse charge through billing.metering.
  const billing = createBillingModule({
    config, database, clock, log: (msg, err) => app.log.error({ err }, msg),
    agents: { tierOf: async (id) => (await identity.getAgent(id))?.tier, setTier: (id, tier) => identity.setTier(id, tier) },
  });
  await app.register(billing.routes);
  // Stake, sponsorship and slashing: trust facts whose money moves only through billing's ledger.
  const stake = createStakeModule({
    config, database, clock, envelope, trust, ledger: billing.stakeLedger, profile: (id) => identity.trustProfile(id), log: (msg, err) => app.log.error({ err }, msg),
  });
  trust.levels.useStanding(stake.standing, stake.standings);
  billing.setStakes({ settle: (id) => stake.stakes.settleAgent(id) });
  await app.register(stake.routes);
  // A paid charge (past the free floors) is refused during a staged resurrection; free calls pass.
  const metering = staged.guardSpend(billing.metering);
  const memory = createMemoryModule({ config, database, clock, vectors, envelope, meter: memoryMeterFrom(metering), log: (msg, err) => app.log.error({ err }, msg) });
  // Health reports the shared store the rate limits use (Redis when configured).
  await app.register(healthRoutes({ db: database.db, engine: database.engine, clock, vectors, redis: () => memory.limiter.storeStatus() }));
  await app.register(memory.routes);
  const commons = createCommonsModule({ config, database, clock, limiter: memory.limiter, vectors, log: (msg, err) => app.log.error({ err }, msg) });
  await app.register(commons.routes);
  billing.setCommons(commons.service);
  // Custody: covenants, recovery and custody transfer (identity through its custody port).
  custody = createCustodyModule({
    config, database, clock, trust, identity: identity.custody, restrictions: staged, limiter: memory.limiter,
    levelsOf: async (id) => (await identity.trustProfile(id))?.trustLevels ?? [],
  });
  await custody.backfill();
  // Declarations are not amended while a recovery intent is open or in staged resurrection (as covenants).
  const recovery = custody.recovery;
  declarations.policies.useCustodyRestriction(async (id) => (await recovery.amendBlocked(id))?.reason);
  identity.useCustodyStatus((id) => staged.stagedUntil(id));
  await app.register(custody.routes);
  // Metering is billing's service; search and browse charge through it (billing's routes can share it).
  const upgradeUrl = config.billing.billingPageUrl ?? `${config.core.baseUrl}/billing`;
  const usage = createUsageModule({ readings: billing.usageReadings, terms: billing.usageTerms, clock, upgradeUrl });
  const search = createSearchModule({ config, clock, envelope, metering, usage: usage.service, log: app.log });
  const feedback = createFeedbackModule({ db: database.db, clock, envelope, upgradeUrl, effectiveTier: (id, tier) => usage.service.effectiveTier(id, tier) });
  usage.service.addActivitySource(feedback.service.activitySource());
  const browse = createBrowseModule({
    config, database, clock, envelope, metering, tiers: usage.service, levels: async (id) => (await identity.trustProfile(id))?.trustLevels ?? [],
  });
  usage.service.addActivitySource(browse.service.activitySource());
  const approvals = createApprovalModule({ db: database.db, clock, envelope, upgradeUrl, effectiveTier: (id, tier) => usage.service.effectiveTier(id, tier) });
  usage.service.addActivitySource(approvals.service.activitySource());
  await app.register(search.routes);
  await app.register(feedback.routes);
  await app.register(approvals.routes);
  await app.register(browse.routes);
  await app.register(usage.routes);
  // Blobs and parsing: caps and parse rates follow the billed tier; parse and blob search meter through billing.
  const billedTier = async (agentId: string, stored: string) => effectiveTier(stored, (await billing.store.getAccount(agentId))?.lifetime_purchase_units ?? 0);
  let parseSummaries: ParseModule['summaries'] | undefined;
  const blobs = await createBlobsModule({ config, database, clock, tierFor: billedTier, parses: () => parseSummaries, log: (msg, err) => app.log.error({ err }, msg) });
  const parse = createParseModule({
    config, database, clock, envelope, blobs: blobs.service, limiter: memory.limiter, vectors, meter: metering, usage: usage.service,
    tierFor: billedTier, log: (msg, err) => app.log.error({ err }, msg),
  });
  parseSummaries = parse.summaries;
  billing.setStorage({
    memoryStorageBytes: async (id) => (await memory.service.stats({ agentId: id, tier: 'free' })).storage_bytes,
    blobStorageBytes: async (id) => (await blobs.service.usage(id)).storageBytes,
    blobEmbedStorageBytes: (id) => parse.embedStorageBytes(id),
  });
  await app.register(blobs.routes);
  await app.register(parse.routes);
  await app.register(parse.internalRoutes);

  // ---- discovery and MCP (derived lazily from the whole route table, so order does not matter) ----
  await app.register(discoveryRoutes({ config, table: routeTable, identity, trustLog: { origin: trust.log.origin, verifier_key: trust.log.verifierKey, public_key: trust.log.publicKeyPem } }));
  await app.register(toolRoutes(toolCatalog));
  await app.register(openApiRoutes({ baseUrl: config.core.baseUrl }));
  await app.register(mcpRoutes({ root: app, catalog: toolCatalog, allowedOrigins: [config.core.baseUrl, ...config.discovery.mcpAllowedOrigins] }));

  app.addHook('onClose', async () => {
    await directory.close();
    await custody?.close();
    await memory.close();
    await parse.close();
    await blobs.close();
    await stake.close();
    await billing.close();
    await vectors.close();
    await search.close();
    await browse.close();
    await database.close();
  });
  vectors.indexer?.start();
  await app.ready();
  parse.start();
  return { app, database, clock };
}
