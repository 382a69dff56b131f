import { group, list } from './define';

/** An origin is scheme://host[:port], nothing more (browsers send exactly that). */
function originProblem(item: string): string | undefined {
  try {
    const u = new URL(item);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.origin === item.replace(/\/$/, '')) return undefined;
  } catch {
    /* not a URL */
  }
  return 'is not an origin (scheme://host[:port], no path)';
}

export const discoverySettings = group('Discovery and MCP', {
  mcpAllowedOrigins: list('SVC_MCP_ALLOWED_ORIGINS', [], 
    'Comma-separated browser origins (scheme://host[:port]) allowed to call /mcp besides svc\'s own (SVC_BASE_URL). A request with any other Origin header is refused 403 ORIGIN_NOT_ALLOWED (the MCP transport\'s DNS-rebinding rule); requests without one (agents, servers) are not affected. Allowed origins get CORS answers (a preflight to OPTIONS /mcp, Access-Control-Allow-Origin).', originProblem),
});
