/**
 * POST /internal/queue/parse: the target of an external push queue (Cloud Tasks, QStash, SQS via
 * a relay...). The body is JSON {"parse_id": "<uuid>"}; header Svc-Queue-Signature carries
 * t=<unix seconds>,v1=<hex HMAC-SHA256(SVC_QUEUE_SECRET, "<t>.<raw body>")> (5 minutes of clock
 * skew allowed). The job runs inline under the same lease rules as the built-in worker. Answers:
 * 200 {accepted: true, state} when run here, 200 {accepted: false, state} when already finished
 * or running elsewhere (idempotent), 401 QUEUE_SIGNATURE_INVALID, 404 PARSE_JOB_NOT_FOUND,
 * 503 QUEUE_NOT_CONFIGURED without a secret.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../http/errors';
import { PUSH_SIGNATURE_HEADER, verifyPushMessage, type JobQueue } from '../../infra/queue';
import type { Clock } from '../../lib/clock';
import { errorResponses } from '../../http/response-schemas';
import { QueuePushResponse } from './schemas';
import { parseJobKey } from './service';

export const internalQueueRoutes = (deps: { queue: JobQueue; secret?: string; clock: Clock }): FastifyPluginAsyncTypebox => async (app) => {
  // The signature covers the exact bytes: keep them as a string and parse JSON ourselves.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) => done(null, body));

  app.post('/internal/queue/parse', {
    schema: {
      summary: 'Queue push target: runs one parse job (HMAC-signed message; idempotent)', tags: ['internal'],
      response: { 200: QueuePushResponse, ...errorResponses(400, 401, 404, 422, 503) },
    },
    // The body is read here, not by a schema: its JSON and shape errors are this route's own.
    config: { auth: 'none', errors: { 400: ['INVALID_JSON'], 401: ['QUEUE_SIGNATURE_INVALID'], 404: ['PARSE_JOB_NOT_FOUND'], 422: ['VALIDATION_FAILED'], 503: ['QUEUE_NOT_CONFIGURED'] } },
  }, async (request) => {
    if (!deps.secret) throw new ApiError(503, 'QUEUE_NOT_CONFIGURED', 'SVC_QUEUE_SECRET is not set: this host accepts no pushed queue messages');
    const raw = typeof request.body === 'string' ? request.body : '';
    const header = request.headers[PUSH_SIGNATURE_HEADER];
    const problem = verifyPushMessage(deps.secret, raw, typeof header === 'string' ? header : undefined, deps.clock.now());
    if (problem) throw new ApiError(401, 'QUEUE_SIGNATURE_INVALID', `Queue message signature ${problem}`);
    let message: unknown;
    try {
      message = JSON.parse(raw);
    } catch {
      throw new ApiError(400, 'INVALID_JSON', 'Request body is not valid JSON');
    }
    // Valid JSON of the wrong shape (null, an array, a number...) is a validation failure, not bad JSON.
    const parseId = (message as { parse_id?: unknown } | null)?.parse_id;
    if (typeof parseId !== 'string' || parseId.length > 64) throw new ApiError(422, 'VALIDATION_FAILED', 'parse_id is required', { field: 'body.parse_id' });
    const r = await deps.queue.runByKey(parseJobKey(parseId));
    if (r.outcome === 'missing') throw new ApiError(404, 'PARSE_JOB_NOT_FOUND', `No queued parse ${parseId}`);
    return { status: 'success' as const, parse_id: parseId, accepted: r.outcome === 'ran', state: r.state, outcome: r.outcome };
  });
};
