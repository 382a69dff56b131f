import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { ApiError } from '../../http/errors';
import { FeedbackBody, FeedbackCreated, FeedbackStats, FeedbackValidationCodes, MAX_NOTE_CHARS } from './schemas';

/**
 * The shared validator coerces scalars (12 → "12"); feedback fields must arrive as JSON strings,
 * so types are checked on the parsed body before validation.
 */
function requireStrings(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return; // the schema refuses it
  const b = body as Record<string, unknown>;
  for (const [field, code] of Object.entries(FeedbackValidationCodes)) {
    const name = field.slice('body.'.length);
    if (b[name] !== undefined && typeof b[name] !== 'string') throw new ApiError(code.status, code.code, code.message, { field });
  }
  if (b.note !== undefined && b.note !== null && typeof b.note !== 'string') {
    throw new ApiError(422, 'VALIDATION_FAILED', 'note must be a string of at most 500 characters, or null', { field: 'body.note' });
  }
}
import type { FeedbackService } from './service';
import { notBlank } from '../../http/input-rules';

export const feedbackRoutes = (deps: { feedback: FeedbackService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { feedback, envelope } = deps;

  app.post('/v1/feedback', {
    schema: { body: FeedbackBody, summary: 'Give feedback on an earlier result (append-only; monthly cap per tier)', tags: ['feedback'], response: { 201: FeedbackCreated } },
    config: {
      auth: 'key', scope: 'any', success: [201], errors: { 422: ['INVALID_REF_TYPE', 'INVALID_SIGNAL', 'NOTE_TOO_LONG', 'INVALID_REF_ID'], 429: ['FEEDBACK_LIMIT'] }, validationCodes: FeedbackValidationCodes,
      inputRules: [notBlank('body', 'ref_id'), { part: 'body', field: 'note', schema: { maxLength: MAX_NOTE_CHARS } }],
      // The note is the only free-length field (ref_id is at most 256 characters, the rest are enums):
      // a body past the size limit carries a note far past its 500 characters, which is answered
      // with NOTE_TOO_LONG like any over-long note (not 413 PAYLOAD_TOO_LARGE, a code feedback does not have).
      bodyTooLarge: { status: 422, code: 'NOTE_TOO_LONG', message: `The request body is over the size limit; a note is at most ${MAX_NOTE_CHARS} characters` },
    },
    preValidation: async (request) => requireStrings(request.body),
  }, async (request, reply) => {
    const a = agentOf(request);
    const r = await feedback.submit({ agentId: a.agentId, tier: a.tier }, request.body);
    return reply.code(201).send({ status: 'success', feedback_id: r.feedback_id, created_at: r.created_at, _svc: await envelope.build() });
  });

  app.get('/v1/feedback/stats', {
    schema: { summary: 'Your feedback: rolling 7 and 30 day counts, by ref_type and signal, and this UTC month\'s cap', tags: ['feedback'], response: { 200: FeedbackStats } },
    config: { auth: 'key', scope: 'any' },
  }, async (request) => {
    const a = agentOf(request);
    // by_ref_type has one entry per REF_TYPES (the service's type says a record of strings).
    return feedback.stats({ agentId: a.agentId, tier: a.tier }) as Promise<Static<typeof FeedbackStats>>;
  });
};
