/**
 * The CLI's settings: svc's URL, the API key, the agent and its passport key file. Each comes from,
 * first to last: a flag (--url, --api-key), the environment (SVC_URL, SVC_API_KEY), the config file
 * (--config, else SVC_CONFIG, else $XDG_CONFIG_HOME/svc/config.json or ~/.config/svc/config.json),
 * and for the URL the default http://127.0.0.1:3000. The file and the key files are written with
 * mode 0600 in a directory of mode 0700; passport private keys live in keys/<agent_id>.pem beside
 * the file and are never sent anywhere.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { CliError, EXIT } from './exit';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

export interface ConfigFile {
  url?: string;
  api_key?: string;
  agent_id?: string;
  agent_name?: string;
  /** Path of the PEM (PKCS#8) passport private key; relative paths are relative to the file's directory. */
  passport_key_file?: string;
}

export const CONFIG_FIELDS = ['url', 'api_key', 'agent_id', 'agent_name', 'passport_key_file'] as const;

export type Source = 'flag' | 'env' | 'file' | 'default' | 'unset';

export interface Resolved {
  configPath: string;
  file: ConfigFile;
  url: string;
  apiKey?: string;
  agentId?: string;
  passportKeyFile?: string;
  sources: { url: Source; apiKey: Source; agentId: Source; passportKeyFile: Source };
  warnings: string[];
}

/** Where the config file is: --config, SVC_CONFIG, $XDG_CONFIG_HOME/svc/config.json, ~/.config/svc/config.json. */
export function configPath(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  if (flag) return resolve(flag);
  if (env.SVC_CONFIG) return resolve(env.SVC_CONFIG);
  const base = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'svc', 'config.json');
}

export function readConfigFile(path: string, warnings: string[] = []): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(EXIT.config, `cannot read ${path}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new CliError(EXIT.config, `${path} is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new CliError(EXIT.config, `${path} must hold a JSON object`);
  const out: ConfigFile = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (!(CONFIG_FIELDS as readonly string[]).includes(k)) {
      warnings.push(`${path}: unknown setting ${k} ignored`);
      continue;
    }
    if (typeof v !== 'string') throw new CliError(EXIT.config, `${path}: ${k} must be a string`);
    out[k as keyof ConfigFile] = v;
  }
  if (out.api_key && process.platform !== 'win32') {
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) warnings.push(`${path} holds an API key and is readable by others (mode ${mode.toString(8)}): chmod 600 it`);
  }
  return out;
}

/** Writes the file atomically with mode 0600 (its directory 0700). */
export function writeConfigFile(path: string, config: ConfigFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
}

/** Creates a new file of mode 0600 holding `text`; never replaces one. */
export function writeSecretFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeFileSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

/** A key file path from the config, made absolute against the config file's directory. */
export const keyFilePath = (configFile: string, p: string): string => (isAbsolute(p) ? p : join(dirname(configFile), p));

export function resolveConfig(flags: { url?: string; apiKey?: string; config?: string }, env: NodeJS.ProcessEnv): Resolved {
  const path = configPath(flags.config, env);
  const warnings: string[] = [];
  const file = readConfigFile(path, warnings);
  const pick = (flag: string | undefined, envValue: string | undefined, fileValue: string | undefined): [string | undefined, Source] =>
    flag ? [flag, 'flag'] : envValue ? [envValue, 'env'] : fileValue ? [fileValue, 'file'] : [undefined, 'unset'];
  const [url, urlSource] = pick(flags.url, env.SVC_URL, file.url);
  const [apiKey, keySource] = pick(flags.apiKey, env.SVC_API_KEY, file.api_key);
  const resolved: Resolved = {
    configPath: path,
    file,
    url: url ?? DEFAULT_URL,
    apiKey,
    agentId: file.agent_id,
    passportKeyFile: file.passport_key_file ? keyFilePath(path, file.passport_key_file) : undefined,
    sources: {
      url: url ? urlSource : 'default',
      apiKey: keySource,
      agentId: file.agent_id ? 'file' : 'unset',
      passportKeyFile: file.passport_key_file ? 'file' : 'unset',
    },
    warnings,
  };
  try {
    const u = new URL(resolved.url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new CliError(EXIT.usage, `the svc URL ${JSON.stringify(resolved.url)} (from ${resolved.sources.url === 'default' ? 'the default' : resolved.sources.url}) is not an http(s) URL`);
  }
  return resolved;
}

export const fileExists = existsSync;
