import { ConfigError, loadGroup, type Loaded, type SettingsGroup, type SettingsShape } from './config/define';
import { coreSettings } from './config/core';
import { memorySettings } from './config/memory';
import { vectorsSettings } from './config/vectors';
import { blobsSettings, blobsSettingsProblems } from './config/blobs';
import { webSettings } from './config/web';
import { searchSettings } from './config/search';
import { billingSettings } from './config/billing';
import { discoverySettings } from './config/discovery';
import { trustSettings, trustSettingsProblems } from './config/trust';

/** Every settings group, in the order the docs list them. */
export const settingsGroups: SettingsGroup<SettingsShape>[] = [
  coreSettings, memorySettings, vectorsSettings, blobsSettings, webSettings, searchSettings, billingSettings, discoverySettings, trustSettings,
];

export interface Config {
  core: Loaded<typeof coreSettings.settings> & { baseUrl: string; termsUrl: string };
  memory: Loaded<typeof memorySettings.settings>;
  vectors: Loaded<typeof vectorsSettings.settings>;
  blobs: Loaded<typeof blobsSettings.settings>;
  web: Loaded<typeof webSettings.settings>;
  search: Loaded<typeof searchSettings.settings>;
  billing: Loaded<typeof billingSettings.settings>;
  discovery: Loaded<typeof discoverySettings.settings>;
  trust: Loaded<typeof trustSettings.settings>;
}

/** Reads and validates every setting; throws ConfigError listing every bad value at once. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const core = loadGroup(coreSettings, env, problems);
  const config = {
    core: {
      ...core,
      baseUrl: core.baseUrl ?? `http://localhost:${core.port}`,
      termsUrl: core.termsUrl ?? `${core.baseUrl ?? `http://localhost:${core.port}`}/terms`,
    },
    memory: loadGroup(memorySettings, env, problems),
    vectors: loadGroup(vectorsSettings, env, problems),
    blobs: loadGroup(blobsSettings, env, problems),
    web: loadGroup(webSettings, env, problems),
    search: loadGroup(searchSettings, env, problems),
    billing: loadGroup(billingSettings, env, problems),
    discovery: loadGroup(discoverySettings, env, problems),
    trust: loadGroup(trustSettings, env, problems),
  };
  // Settings that must agree with each other.
  problems.push(...blobsSettingsProblems(config.blobs));
  problems.push(...trustSettingsProblems(config.trust));
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

export { ConfigError };
