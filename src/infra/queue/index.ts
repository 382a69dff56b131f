/** Durable job queue in the service's database. See types.ts and docs/blobs.md (Queue). */
export { createJobQueue, type JobQueue, type QueueOptions, type RunOutcome } from './queue';
export { PermanentJobError, backoffMs, type JobHandler, type QueueJob, type EnqueueOptions, type JobState } from './types';
export { signPushMessage, verifyPushMessage, PUSH_SIGNATURE_HEADER } from './push-signature';
