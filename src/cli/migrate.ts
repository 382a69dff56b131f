import { loadConfig, type Config } from '../config';
import { openDatabase } from '../infra/db/database';
import { migrateToLatest } from '../infra/db/migrate';
import { startupFailure } from './startup-failure';

/** `npm run migrate`: applies pending migrations to the configured database and exits (failures as `npm start` reports them). */
let config: Config | undefined;
try {
  config = loadConfig();
  const handle = openDatabase({ databaseUrl: config.core.databaseUrl, dataDir: config.core.dataDir, poolMax: 1 });
  const applied = await migrateToLatest(handle.db);
  await handle.close();
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
} catch (e) {
  const failure = startupFailure(e, config);
  process.stderr.write(`${failure ? failure.message : (e as Error).stack}\n`);
  process.exit(failure?.exitCode ?? 1);
}
