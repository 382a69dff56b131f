import { buildApp } from './app';
import { lockDataDir } from './cli/data-dir-lock';
import { startupFailure } from './cli/startup-failure';
import { loadConfig, type Config } from './config';

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
    // Fastify logs this line itself (once per address it listens on).
    address = await app.listen({ host: config.core.host, port: config.core.port, listenTextResolver: (at) => listeningLine(at, config!) });
  } catch (e) {
    // A port in use (another service listens there): say so, and let go of the
    // database and background work that buildApp started.
    const code = (e as NodeJS.ErrnoException).code;
    process.stderr.write(`svc cannot listen on ${config.core.host}:${config.core.port}: ${code === 'EADDRINUSE' ? 'the address is in use (set PORT)' : (e as Error).message}\n`);
    await app.close().catch(() => {});
    lock?.release();
    process.exit(1);
  }
  // The "up" and "stopped" lines: in the log when it shows info, else on standard output.
  const say = (line: string) => {
    if (infoLogged(config)) app.log.info(line);
    else process.stdout.write(`${line}\n`);
  };
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info(`${signal}: stopping (finishing in-flight requests)`);
    // close(): stops accepting, waits for in-flight requests, then runs onClose hooks (database).
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    const stopped = (code: number) => {
      lock?.release();
      say(code === 0 ? 'svc stopped' : 'svc stopped after an error while closing');
      // Exit once the log is out: pretty lines go through pino's worker thread, which exit alone would cut off.
      const log = app.log as unknown as { flush?: (done: () => void) => void };
      if (log.flush) log.flush(() => process.exit(code));
      else process.exit(code);
    };
    app.close().then(() => stopped(0), () => stopped(1));
  };
  // Handlers before the line that says svc is up: a supervisor (or a test) that stops svc as soon as
  // it reads that line must reach shutdown, not the default action that ends the process at once.
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  if (!infoLogged(config)) process.stdout.write(`${listeningLine(address, config)}\n`);
}

const infoLogged = (config: Config) => ['info', 'debug', 'trace'].includes(config.core.logLevel);

/** The line that says svc is up (supervisors and scripts wait for it). */
const listeningLine = (address: string, config: Config) =>
  `svc listening on ${address} (database: ${config.core.databaseUrl ? 'PostgreSQL' : `SQLite in ${config.core.dataDir}`})`;

void main();
