/**
 * svc's TypeScript SDK: `createSvcClient` (openapi-fetch over types generated from svc's OpenAPI
 * document: `client.GET('/v1/me')`, `client.PUT('/v1/memory/{key}', …)`), `ok()` to get a body or
 * a thrown SvcError, and helpers for what takes more than one call.
 */
export {
  createSvcClient, ok, SvcError, SvcProtocolError, SDK_VERSION,
  type ClientOptions, type SvcClient, type JsonBody, type ItemOf, type Known, type paths, type components, type operations,
} from './client';
export {
  generatePassportKeys, privateKeyOf, publicKeyPemOf, signPayload,
  PASSPORT_CHALLENGE_SCHEME, challengePayload, requestChallenge, signChallenge, passportSession,
  SIGNED_REQUEST_SCHEMES, contentSha256, signedRequestPayload, signRequest, signedAmend,
  type PassportKeys, type PrivateKeyInput, type Challenge, type ChallengeFields, type PassportSession, type SignedRequest, type SignedRequestScheme,
} from './passport';
export { parseBlob, waitForParse, parseStatus, isFinished, ParseTimeoutError, type ParseRecord, type ParseStatus, type ParseOptions, type WaitOptions } from './parse';
export {
  directory, directoryPages, memoryKeys, blobs, collect,
  type DirectoryQuery, type DirectoryPage, type DirectoryAgent, type MemoryListQuery, type MemoryKeyItem, type BlobListQuery, type BlobItem,
} from './pages';
export {
  uploadBlob, downloadBlob, contentTypeFor, dispositionFilename, safeFilename,
  type UploadInput, type UploadedBlob, type DownloadedBlob, type DownloadOptions, type Progress,
} from './blobs';
