import { buildApp } from './app';
import { lockDataDir } from './cli/data-dir-lock';
import { startupFailure } from './cli/startup-failure';
import { loadConfig } from './config';

async function main(): Promise<void> {
  let config;
  let app;
  let lock: { release(): void } | undefined;
  try {
    config = loadConfig();
    if (!config.core.databaseUrl) lock = lockDataDir(config.core.dataDir);
    ({ app } = await buildApp({ config }));
  } catch (e) {
    lock?.release();
    const failure = startupFailure(e, config);
    if (!failure) throw e;
    process.stderr.write(`${failure.message}\n`);
    process.exit(failure.exitCode);
  }
  let address: string;
  try {
    address = await app.listen({ host: config.core.host, port: config.core.port });
  } catch (e) {
    // A port in use (another service listens there): say so, and let go of the
    // database and background work that buildApp started.
    const code = (e as NodeJS.ErrnoException).code;
    process.stderr.write(`svc cannot listen on ${config.core.host}:${config.core.port}: ${code === 'EADDRINUSE' ? 'the address is in use (set PORT)' : (e as Error).message}\n`);
    await app.close().catch(() => {});
    lock?.release();
    process.exit(1);
  }
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info(`${signal}: stopping (finishing in-flight requests)`);
    // close(): stops accepting, waits for in-flight requests, then runs onClose hooks (database).
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    app.close().then(() => { lock?.release(); process.exit(0); }, () => { lock?.release(); process.exit(1); });
  };
  // Handlers before the line that says svc is up: a supervisor (or a test) that stops svc as soon as
  // it reads that line must reach shutdown, not the default action that ends the process at once.
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  app.log.info(`svc listening on ${address} (database: ${config.core.databaseUrl ? 'PostgreSQL' : `SQLite in ${config.core.dataDir}`})`);
  process.stdout.write(`svc listening on ${address}\n`);
}

void main();
