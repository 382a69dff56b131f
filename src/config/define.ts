/**
 * A tiny declarative settings layer: every setting names its environment variable, its default and
 * its documentation once; `loadConfig` validates them all at start-up, and `docs/configuration.md`
 * is generated from the same definitions (`npm run config:docs`).
 */
import { parseIsoDate, parseIsoInstant } from '../lib/iso-time';

export interface Setting<T> {
  env: string;
  doc: string;
  /** Default shown in the docs ('' when the setting is unset by default). */
  defaultText: string;
  read(raw: string | undefined): T;
}

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

class SettingProblem extends Error {}

function make<T>(env: string, doc: string, defaultText: string, read: (raw: string | undefined) => T): Setting<T> {
  return { env, doc, defaultText, read };
}

const blank = (raw: string | undefined) => raw === undefined || raw.trim() === '';

export function str(env: string, def: string, doc: string): Setting<string> {
  return make(env, doc, def, (raw) => (blank(raw) ? def : raw!.trim()));
}

export function optionalStr(env: string, doc: string): Setting<string | undefined> {
  return make(env, doc, '', (raw) => (blank(raw) ? undefined : raw!.trim()));
}

export function int(env: string, def: number, doc: string, bounds: { min?: number; max?: number } = {}): Setting<number> {
  return make(env, doc, String(def), (raw) => {
    if (blank(raw)) return def;
    const text = raw!.trim();
    if (!/^-?\d+$/.test(text)) throw new SettingProblem(`${env} must be an integer, got "${text}"`);
    const n = Number(text);
    if (!Number.isSafeInteger(n)) throw new SettingProblem(`${env} is out of range: "${text}"`);
    if (bounds.min !== undefined && n < bounds.min) throw new SettingProblem(`${env} must be at least ${bounds.min}, got ${n}`);
    if (bounds.max !== undefined && n > bounds.max) throw new SettingProblem(`${env} must be at most ${bounds.max}, got ${n}`);
    return n;
  });
}

export function num(env: string, def: number, doc: string, bounds: { min?: number; max?: number } = {}): Setting<number> {
  return make(env, doc, String(def), (raw) => {
    if (blank(raw)) return def;
    const n = Number(raw!.trim());
    if (!Number.isFinite(n)) throw new SettingProblem(`${env} must be a number, got "${raw}"`);
    if (bounds.min !== undefined && n < bounds.min) throw new SettingProblem(`${env} must be at least ${bounds.min}, got ${n}`);
    if (bounds.max !== undefined && n > bounds.max) throw new SettingProblem(`${env} must be at most ${bounds.max}, got ${n}`);
    return n;
  });
}

export function bool(env: string, def: boolean, doc: string): Setting<boolean> {
  return make(env, doc, String(def), (raw) => {
    if (blank(raw)) return def;
    const v = raw!.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    throw new SettingProblem(`${env} must be true or false, got "${raw}"`);
  });
}

export function oneOf<const T extends string>(env: string, values: readonly T[], def: T, doc: string): Setting<T> {
  return make(env, `${doc} One of: ${values.join(', ')}.`, def, (raw) => {
    if (blank(raw)) return def;
    const v = raw!.trim() as T;
    if (!values.includes(v)) throw new SettingProblem(`${env} must be one of ${values.join(', ')}, got "${raw}"`);
    return v;
  });
}

/** A URL (http, https, or the schemes given); unset gives undefined. */
export function optionalUrl(env: string, doc: string, schemes: string[] = ['http:', 'https:']): Setting<string | undefined> {
  return make(env, doc, '', (raw) => {
    if (blank(raw)) return undefined;
    let u: URL;
    try {
      u = new URL(raw!.trim());
    } catch {
      throw new SettingProblem(`${env} must be a URL, got "${raw}"`);
    }
    if (!schemes.includes(u.protocol)) throw new SettingProblem(`${env} must use ${schemes.join(' or ')}, got "${u.protocol}"`);
    return raw!.trim().replace(/\/+$/, '');
  });
}

/**
 * An ISO 8601 date (`2026-11-01`), or with `time` a date-time with its zone (`2027-06-30T00:00:00Z`),
 * that exists on the calendar; kept as written.
 */
export function date(env: string, def: string, doc: string, opts: { time?: boolean } = {}): Setting<string> {
  return make(env, doc, def, (raw) => {
    if (blank(raw)) return def;
    const text = raw!.trim();
    if ((opts.time ? parseIsoInstant(text) : parseIsoDate(text)) === undefined) {
      throw new SettingProblem(`${env} must be ${opts.time ? 'an ISO 8601 date-time with its zone, e.g. 2027-06-30T00:00:00Z' : 'a date, YYYY-MM-DD'}, got "${text}"`);
    }
    return text;
  });
}

/** Comma-separated list; `check` returns why an item is refused (or undefined when it is fine). */
export function list(env: string, def: string[], doc: string, check?: (item: string) => string | undefined): Setting<string[]> {
  return make(env, doc, def.join(','), (raw) => {
    if (blank(raw)) return def;
    const items = raw!.split(',').map((s) => s.trim()).filter(Boolean);
    for (const item of items) {
      const problem = check?.(item);
      if (problem) throw new SettingProblem(`${env}: "${item}" ${problem}`);
    }
    return items;
  });
}

/** A URL that must be set (http or https unless other schemes are given). */
export function url(env: string, def: string, doc: string, schemes: string[] = ['http:', 'https:']): Setting<string> {
  const optional = optionalUrl(env, doc, schemes);
  return make(env, doc, def, (raw) => optional.read(raw) ?? def);
}

export type SettingsShape = Record<string, Setting<unknown>>;
export type Loaded<S extends SettingsShape> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

export interface SettingsGroup<S extends SettingsShape> {
  title: string;
  settings: S;
}

export function group<S extends SettingsShape>(title: string, settings: S): SettingsGroup<S> {
  return { title, settings };
}

/** Reads one group; problems are collected rather than thrown one at a time. */
export function loadGroup<S extends SettingsShape>(g: SettingsGroup<S>, env: NodeJS.ProcessEnv, problems: string[]): Loaded<S> {
  const out: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(g.settings)) {
    try {
      out[name] = setting.read(env[setting.env]);
    } catch (err) {
      if (err instanceof SettingProblem) problems.push(err.message);
      else throw err;
    }
  }
  return out as Loaded<S>;
}

export function settingProblem(message: string): Error {
  return new SettingProblem(message);
}
