/**
 * The capability URIs of svc: what a scoped API key may be limited to (its scopes), what a route
 * declares it needs (route config `scope`), and what a passport lists as verified.
 */
export const CAPABILITIES = [
  'svc:search', 'svc:memory', 'svc:browse', 'svc:commons-publish', 'svc:commons-read', 'svc:blob-store',
] as const;

export type Capability = (typeof CAPABILITIES)[number];

export const isCapability = (s: string): s is Capability => (CAPABILITIES as readonly string[]).includes(s);
