import { buildApp } from './app';
import { ConfigError, loadConfig } from './config';

/** A connection URL without its password, for messages. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return 'the configured URL';
  }
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  let app;
  try {
    ({ app } = await buildApp({ config }));
  } catch (e) {
    // The database could not be reached or opened (a server down, a wrong DATABASE_URL, a data
    // directory that cannot be written): one line that says which, not a stack trace.
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code !== 'string') throw e;
    const where = config.core.databaseUrl ? `PostgreSQL at ${redactUrl(config.core.databaseUrl)}` : `SQLite in ${config.core.dataDir}`;
    process.stderr.write(`svc cannot start: ${where}: ${(e as Error).message || code} (${code})\n`);
    process.exit(1);
  }
  let address: string;
  try {
    address = await app.listen({ host: config.core.host, port: config.core.port });
  } catch (e) {
    // A port in use (another svc on this data directory, most likely): say so, and let go of the
    // database and background work that buildApp started.
    const code = (e as NodeJS.ErrnoException).code;
    process.stderr.write(`svc cannot listen on ${config.core.host}:${config.core.port}: ${code === 'EADDRINUSE' ? 'the address is in use (set PORT)' : (e as Error).message}\n`);
    await app.close().catch(() => {});
    process.exit(1);
  }
  app.log.info(`svc listening on ${address} (database: ${config.core.databaseUrl ? 'PostgreSQL' : `SQLite in ${config.core.dataDir}`})`);
  process.stdout.write(`svc listening on ${address}\n`);

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info(`${signal}: stopping (finishing in-flight requests)`);
    // close(): stops accepting, waits for in-flight requests, then runs onClose hooks (database).
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    app.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

void main();
