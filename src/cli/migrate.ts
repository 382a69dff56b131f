import { ConfigError, loadConfig } from '../config';
import { openDatabase } from '../infra/db/database';
import { migrateToLatest } from '../infra/db/migrate';

/** `npm run migrate`: applies pending migrations to the configured database and exits. */
try {
  const config = loadConfig();
  const handle = openDatabase({ databaseUrl: config.core.databaseUrl, dataDir: config.core.dataDir, poolMax: 1 });
  const applied = await migrateToLatest(handle.db);
  await handle.close();
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
} catch (e) {
  process.stderr.write(`${e instanceof ConfigError ? e.message : (e as Error).stack}\n`);
  process.exit(1);
}
