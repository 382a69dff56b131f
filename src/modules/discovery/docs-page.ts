/**
 * The API reference (GET /docs): Swagger UI (@fastify/swagger-ui) over the same OpenAPI document as
 * GET /openapi.json, so the page can never disagree with it. Every asset is served from the npm
 * package by this instance (no CDN, works offline); the page's Content-Security-Policy allows its
 * own origin only (and the API's base address, which "Try it out" calls). GET /docs/designs is the
 * short page on how svc decides what the API contract leaves open.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import { Type } from 'typebox';
import { errorResponses } from '../../http/response-schemas';
import { DESIGNS_PATH, DOCS_PATH, NOT_SHOWN_DESIGNS, type Design } from './designs';
import { errorCodesOf } from './openapi';
import type { RouteInfo } from './route-table';

const HtmlPage = (description: string) => ({ description, content: { 'text/html': { schema: Type.String() } } });

/** The pages' policy: scripts, styles, images and fonts of this origin only; calls to this origin and the API's base address. */
export function docsCsp(baseUrl: string): string {
  let api = '';
  try {
    api = ` ${new URL(baseUrl).origin}`;
  } catch {
    // a base address that is not a URL adds nothing
  }
  // Swagger UI sets styles from script (its components' style attributes) and its stylesheet carries data: images.
  return ["default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self' data:",
    `connect-src 'self'${api}`, "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'", "object-src 'none'"].join('; ');
}

const esc = (s: unknown): string =>
  String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The designs page: one table, no script. */
export function renderDesignsPage(designs: Design[], title: string): string {
  const rows = designs.map((d) => `<tr><td>${esc(d.spec_item)}</td><td>${esc(d.design)}</td><td><code>${esc(d.see)}</code></td></tr>`).join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}: how svc decides what the API leaves open</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2em auto;max-width:1000px;padding:0 1em}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f6f6f8}</style></head>
<body><p><a href="${DOCS_PATH}">API reference</a> · <a href="/openapi.json">openapi.json</a></p>
<h1>How svc behaves where the API leaves details open</h1>
<p>Where the API contract does not fix a body, a format or a field, svc decides as below. Each row points at where the
design lives (a route, a schema); the same list is in the OpenAPI document as <code>x-svc-designs</code>.</p>
<table><tr><th>Item</th><th>Design</th><th>See</th></tr>
${rows}</table></body></html>`;
}

/**
 * Registers /docs (Swagger UI, its assets under /docs/static/) and /docs/designs. The UI's routes are
 * public; of them only the page itself is an operation of the document (the assets are hidden).
 */
export async function registerDocsPages(app: FastifyInstance, opts: { baseUrl: string }): Promise<void> {
  const csp = docsCsp(opts.baseUrl);
  await app.register(async (scope) => {
    // Runs for each route the UI plugin adds (after the route table's and @fastify/swagger's hooks,
    // which read the options later, so what is set here is what they see).
    scope.addHook('onRoute', (route: RouteOptions) => {
      const config = (route.config ?? {}) as Record<string, unknown>;
      if (config.auth !== undefined) return; // a route of this file, configured where it is declared
      // A route of the UI plugin: public, its body the plugin's (HTML, scripts, styles, the document it shows).
      route.config = { ...config, auth: 'none', responseSchemaExempt: 'the reference page\'s assets and the document it shows, served by @fastify/swagger-ui' };
      // The error statuses the shared hook derived from the default auth mode, now from 'none'.
      route.schema = { ...route.schema, response: errorResponses(...errorCodesOf({ auth: 'none', validationCodes: {}, errors: {} } as unknown as RouteInfo).keys()) };
      if (route.url === DOCS_PATH && route.method === 'GET') {
        route.config = {
          ...route.config,
          responseSchemaExempt: undefined,
          // The page is an operation of the document, under its own path (Fastify later points the
          // options at the trailing-slash twin /docs/, which @fastify/swagger would otherwise read).
          swaggerTransform: ({ schema }) => ({ schema, url: DOCS_PATH }),
        };
        route.schema = {
          ...route.schema, hide: false, tags: ['discovery'],
          summary: 'API reference (HTML): every operation with its request and response schemas, examples, error codes and authentication',
          response: { ...(route.schema.response as object), 200: HtmlPage('The reference page (Swagger UI; its scripts and styles are served from /docs/static/)') },
        };
      }
    });
    scope.addHook('onSend', async (_request, reply) => {
      reply.header('content-security-policy', csp).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
    });

    await scope.register(swaggerUi, {
      routePrefix: DOCS_PATH,
      theme: { title: 'svc API reference' },
      // No validator badge: it would send the document to validator.swagger.io.
      validatorUrl: false,
      uiConfig: {
        deepLinking: true,
        docExpansion: 'none',
        filter: true,
        showExtensions: true,
        showCommonExtensions: true,
        displayRequestDuration: true,
        defaultModelsExpandDepth: 0,
        persistAuthorization: false,
        tryItOutEnabled: false,
        tagsSorter: 'alpha',
        layout: 'BaseLayout',
      },
    });

    let designs: string | undefined;
    scope.get(DESIGNS_PATH, {
      schema: {
        summary: 'How svc decides what the API contract leaves open (HTML; the same list as x-svc-designs)',
        tags: ['discovery'],
        response: { 200: HtmlPage('The designs page') },
      },
      config: { auth: 'none' },
    }, async (_request, reply) => {
      designs ??= renderDesignsPage(NOT_SHOWN_DESIGNS, 'svc API');
      return reply.type('text/html; charset=utf-8').send(designs);
    });
  });
}
