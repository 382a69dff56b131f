/** GET /openapi.json and GET /docs (HTML rendered from the same document, built once). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { renderDocsPage } from './docs-page';

export const openApiRoutes = (): FastifyPluginAsyncTypebox => async (app) => {
  let html: string | undefined;

  app.get('/openapi.json', {
    schema: { summary: 'OpenAPI 3.1 description of every route', tags: ['discovery'] },
    config: { auth: 'none' },
  }, async () => app.swagger());

  app.get('/docs', {
    schema: { summary: 'Human-readable API reference (HTML)', tags: ['discovery'] },
    config: { auth: 'none' },
  }, async (_request, reply) => {
    html ??= renderDocsPage(app.swagger() as unknown as Record<string, any>);
    return reply.type('text/html; charset=utf-8').send(html);
  });
};
