/** GET /openapi.json and the reference pages rendered from the same document (GET /docs, GET /docs/designs). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { registerDocsPages } from './docs-page';

export const openApiRoutes = (opts: { baseUrl: string }): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/openapi.json', {
    schema: {
      summary: 'OpenAPI 3.1 description of every route',
      tags: ['discovery'],
      // The document itself: open by design (its shape is OpenAPI's, not svc's).
      response: { 200: Type.Object({ openapi: Type.String(), info: Type.Object({}, { additionalProperties: true }), paths: Type.Object({}, { additionalProperties: true }) }, { additionalProperties: true, description: 'An OpenAPI 3.1 document' }) },
    },
    config: { auth: 'none' },
  }, async () => app.swagger() as unknown as { openapi: string; info: object; paths: object });

  await registerDocsPages(app, opts);
};
