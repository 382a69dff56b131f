import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { configPath, DEFAULT_URL, resolveConfig, writeConfigFile, writeSecretFile } from './config';
import { CliError, EXIT } from './exit';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-cli-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('where the config file is', () => {
  test('--config, then SVC_CONFIG, then $XDG_CONFIG_HOME/svc, then ~/.config/svc', () => {
    expect(configPath('/a/b.json', { SVC_CONFIG: '/c.json', XDG_CONFIG_HOME: '/x', HOME: '/h' })).toBe('/a/b.json');
    expect(configPath(undefined, { SVC_CONFIG: '/c.json', XDG_CONFIG_HOME: '/x', HOME: '/h' })).toBe('/c.json');
    expect(configPath(undefined, { XDG_CONFIG_HOME: '/x', HOME: '/h' })).toBe('/x/svc/config.json');
    expect(configPath(undefined, { XDG_CONFIG_HOME: 'relative', HOME: '/h' })).toBe('/h/.config/svc/config.json');
    expect(configPath(undefined, { HOME: '/h' })).toBe('/h/.config/svc/config.json');
  });
});

describe('precedence: flag > environment > file > default', () => {
  test('each setting from the first place that has it, with its source', () => {
    const file = join(dir, 'config.json');
    writeConfigFile(file, { url: 'http://file:1', api_key: 'svc_file', agent_id: 'a', passport_key_file: 'keys/a.pem' });
    const env = { SVC_CONFIG: file, SVC_URL: 'http://env:2', SVC_API_KEY: 'svc_env' };
    const all = resolveConfig({ url: 'http://flag:3', apiKey: 'svc_flag' }, env);
    expect([all.url, all.apiKey, all.sources.url, all.sources.apiKey]).toEqual(['http://flag:3', 'svc_flag', 'flag', 'flag']);
    const fromEnv = resolveConfig({}, env);
    expect([fromEnv.url, fromEnv.apiKey, fromEnv.sources.url, fromEnv.sources.apiKey]).toEqual(['http://env:2', 'svc_env', 'env', 'env']);
    const fromFile = resolveConfig({}, { SVC_CONFIG: file });
    expect([fromFile.url, fromFile.apiKey, fromFile.sources.url, fromFile.sources.apiKey]).toEqual(['http://file:1', 'svc_file', 'file', 'file']);
    expect(fromFile.passportKeyFile).toBe(join(dir, 'keys/a.pem'));
    const none = resolveConfig({}, { SVC_CONFIG: join(dir, 'absent.json') });
    expect([none.url, none.apiKey, none.sources.url, none.sources.apiKey]).toEqual([DEFAULT_URL, undefined, 'default', 'unset']);
    // An empty variable counts as unset.
    expect(resolveConfig({}, { SVC_CONFIG: file, SVC_URL: '' }).url).toBe('http://file:1');
  });

  test('a URL that is not http(s) is a usage error (2); a broken file a configuration error (3)', () => {
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e instanceof CliError ? e.exitCode : -1;
      }
      return 0;
    };
    expect(err(() => resolveConfig({ url: 'ftp://x' }, { SVC_CONFIG: join(dir, 'none.json') }))).toBe(EXIT.usage);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"url": ');
    expect(err(() => resolveConfig({}, { SVC_CONFIG: bad }))).toBe(EXIT.config);
    writeFileSync(bad, '{"url": 3}');
    expect(err(() => resolveConfig({}, { SVC_CONFIG: bad }))).toBe(EXIT.config);
    writeFileSync(bad, '[]');
    expect(err(() => resolveConfig({}, { SVC_CONFIG: bad }))).toBe(EXIT.config);
  });
});

describe('files', () => {
  test('the config file is written with mode 0600 in a 0700 directory; a key file never replaces one', () => {
    const file = join(dir, 'nested', 'svc', 'config.json');
    writeConfigFile(file, { url: 'http://x:1', api_key: 'svc_k' });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'nested', 'svc')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: 'http://x:1', api_key: 'svc_k' });
    const key = join(dir, 'nested', 'svc', 'keys', 'a.pem');
    writeSecretFile(key, 'secret');
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(() => writeSecretFile(key, 'other')).toThrow(/EEXIST/);
    expect(readFileSync(key, 'utf8')).toBe('secret');
  });

  test('a key in a file others can read: a warning naming the fix; unknown settings: a warning', () => {
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ api_key: 'svc_k', colour: 'blue' }));
    chmodSync(file, 0o644);
    const r = resolveConfig({}, { SVC_CONFIG: file });
    expect(r.warnings).toEqual([`${file}: unknown setting colour ignored`, `${file} holds an API key and is readable by others (mode 644): chmod 600 it`]);
  });
});
