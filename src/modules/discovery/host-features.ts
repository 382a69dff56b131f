/**
 * What this host offers depends on its configuration: web search needs a provider, dynamic browse a
 * Chromium. Every discovery document (capabilities, guide, agent template, tool files, MCP
 * tools/list) reads availability from here, so they all say the same thing, with the reason and the
 * setting an operator changes.
 */
import type { Config } from '../../config';
import { webSearchStatus, type WebSearchStatus } from '../../infra/search-providers';
import { resolveChromiumPath } from '../../infra/renderer/chromium';

export interface HostFeature { available: boolean; reason: string | null }

export interface HostFeatures {
  web_search: WebSearchStatus;
  dynamic_browse: HostFeature;
}

export function hostFeatures(config: Config): HostFeatures {
  const chromium = resolveChromiumPath(config.web.chromiumPath) !== undefined;
  return {
    web_search: webSearchStatus(config.search),
    dynamic_browse: {
      available: chromium,
      reason: chromium ? null
        : config.web.chromiumPath === 'none'
          ? 'SVC_CHROMIUM_PATH is none on this host: browse answers mode "dynamic" with 503 BROWSE_PROVIDER_UNCONFIGURED'
          : 'no Chromium on this host (/usr/bin/chromium is missing); the operator installs it or sets SVC_CHROMIUM_PATH',
    },
  };
}

/**
 * Per tool id, what its description adds on this host: a tool whose whole purpose is unavailable
 * says so first; a tool with one mode unavailable names the mode.
 */
export function toolHostNotes(f: HostFeatures): Record<string, string> {
  const notes: Record<string, string> = {};
  if (!f.web_search.available) notes.search = `Unavailable on this host: ${f.web_search.reason}. Calls answer 503 SEARCH_PROVIDER_UNCONFIGURED.`;
  if (!f.dynamic_browse.available) notes.browse = `Dynamic mode is unavailable on this host: ${f.dynamic_browse.reason}. Static mode works.`;
  return notes;
}
