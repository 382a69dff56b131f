/**
 * The API reference (GET /docs): Swagger UI (@fastify/swagger-ui) over the same OpenAPI document as
 * GET /openapi.json, so the page can never disagree with it. Every asset is served from the npm
 * package by this instance (no CDN, works offline); the page's Content-Security-Policy allows its
 * own origin only (and the API's base address, which "Try it out" calls). GET /docs/designs is the
 * short page on how svc decides what the API contract leaves open.
 *
 * The UI plugin and what it loads (@fastify/static and its file matching) stay out of start-up: it
 * is registered on a small Fastify instance of its own, built on the first request to /docs, and the
 * app's /docs routes answer with what that instance answers.
 */
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../../http/errors';
import { DESIGNS_PATH, DOCS_PATH, NOT_SHOWN_DESIGNS, type Design } from './designs';

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

/** Headers of the UI's answer passed on (the app's own hooks add the rest). */
const PASSED_HEADERS = ['content-type', 'cache-control', 'etag', 'last-modified', 'location', 'accept-ranges'];

/** The UI on an instance of its own: @fastify/swagger-ui over the app's document. */
async function buildUi(app: FastifyInstance): Promise<FastifyInstance> {
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  const ui = Fastify({ logger: false });
  // The app's document (built once, after every route is registered), as @fastify/swagger serves a given one.
  await ui.register(swagger, { mode: 'static', specification: { document: app.swagger() as never } });
  await ui.register(swaggerUi, {
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
  await ui.ready();
  return ui;
}

/**
 * Registers GET /docs (the page), GET /docs/* (its scripts, styles and the document it shows: hidden
 * from the document and the route table) and GET /docs/designs.
 */
export async function registerDocsPages(app: FastifyInstance, opts: { baseUrl: string }): Promise<void> {
  const csp = docsCsp(opts.baseUrl);
  let ui: Promise<FastifyInstance> | undefined;
  const uiOf = () => {
    ui ??= buildUi(app).catch((e: unknown) => {
      ui = undefined; // the next request tries again
      throw e;
    });
    return ui;
  };
  app.addHook('onClose', async () => {
    if (ui) await (await ui.catch(() => undefined))?.close();
  });

  const forward = async (request: FastifyRequest, reply: FastifyReply) => {
    const instance = await uiOf();
    const conditional = Object.fromEntries((['if-none-match', 'if-modified-since'] as const)
      .flatMap((h) => (typeof request.headers[h] === 'string' ? [[h, request.headers[h] as string]] : [])));
    const res = await instance.inject({ method: 'GET', url: request.url, headers: conditional });
    if (res.statusCode === 404) throw new ApiError(404, 'ROUTE_NOT_FOUND', `No route for GET ${request.url.split('?')[0]}`);
    reply.code(res.statusCode);
    for (const h of PASSED_HEADERS) if (res.headers[h] !== undefined) reply.header(h, res.headers[h]);
    return reply.send(res.rawPayload);
  };

  await app.register(async (scope) => {
    scope.addHook('onSend', async (_request, reply) => {
      reply.header('content-security-policy', csp).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
    });

    scope.get(DOCS_PATH, {
      schema: {
        summary: 'API reference (HTML): every operation with its request and response schemas, examples, error codes and authentication',
        tags: ['discovery'],
        response: { 200: HtmlPage('The reference page (Swagger UI; its scripts and styles are served from /docs/static/)') },
      },
      config: { auth: 'none' },
    }, forward);

    scope.get(`${DOCS_PATH}/*`, {
      schema: { hide: true },
      config: { auth: 'none', responseSchemaExempt: 'the reference page\'s scripts, styles and images, and the document it shows, as @fastify/swagger-ui serves them' },
    }, forward);

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
