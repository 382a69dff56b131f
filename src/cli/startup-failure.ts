import { ConfigError, type Config } from '../config';

/** A connection URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return 'the configured URL';
  }
}

/**
 * Why start-up (or `npm run migrate`) cannot go on, as the operator should read it, with its exit
 * code: a setting (2: every bad value named, some found only when a component is built, such as
 * embeddings dimensions), or a database that cannot be reached or opened (1: one line naming it,
 * password hidden). Anything else is a fault of svc's own: undefined, and the caller rethrows it
 * with its stack.
 */
export function startupFailure(e: unknown, config?: Config): { message: string; exitCode: number } | undefined {
  if (e instanceof ConfigError) return { message: e.message, exitCode: 2 };
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string' || !config) return undefined;
  const where = config.core.databaseUrl ? `PostgreSQL at ${redactUrl(config.core.databaseUrl)}` : `SQLite in ${config.core.dataDir}`;
  return { message: `svc cannot start: ${where}: ${(e as Error).message || code} (${code})`, exitCode: 1 };
}
