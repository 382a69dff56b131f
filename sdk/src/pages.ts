/**
 * Walking lists that take more than one call: the public directory (GET /v1/agents, keyset pages
 * joined by an opaque `next_cursor`) and the numbered lists (GET /v1/memory, GET /v1/blobs: `page`,
 * `per_page`, `total`). Each walker is an async iterator that asks for the next page only when the
 * previous one is used up; `collect` gathers one into an array.
 */
import { arr, isRecord, num, ok, type ItemOf, type JsonBody, type Known, type SvcClient } from './client';
import type { paths as Ops } from './generated/openapi';

export type DirectoryQuery = Omit<NonNullable<Ops['/v1/agents']['get']['parameters']['query']>, 'cursor'>;
export type MemoryListQuery = Omit<NonNullable<Ops['/v1/memory']['get']['parameters']['query']>, 'page'>;
export type BlobListQuery = Omit<NonNullable<Ops['/v1/blobs']['get']['parameters']['query']>, 'page'>;

export type DirectoryPage = Known<JsonBody<'/v1/agents', 'get'>>;
export type DirectoryAgent = Known<ItemOf<JsonBody<'/v1/agents', 'get'>, 'agents'>>;
export type MemoryKeyItem = Known<ItemOf<JsonBody<'/v1/memory', 'get'>, 'keys'>>;
export type BlobItem = Known<ItemOf<JsonBody<'/v1/blobs', 'get'>, 'blobs'>>;

/** Pages of the directory, first to last, following `next_cursor` (one walk: the same filters). */
export async function* directoryPages(client: SvcClient, query: DirectoryQuery = {}): AsyncGenerator<DirectoryPage> {
  let cursor: string | undefined;
  do {
    const page: unknown = await ok(client.GET('/v1/agents', { params: { query: { ...query, ...(cursor ? { cursor } : {}) } } }));
    yield page as DirectoryPage;
    const next = isRecord(page) ? page.next_cursor : null;
    cursor = typeof next === 'string' && next ? next : undefined;
  } while (cursor);
}

/** Every agent of the directory, best rank first (svc pages the version of its first page). */
export async function* directory(client: SvcClient, query: DirectoryQuery = {}): AsyncGenerator<DirectoryAgent> {
  for await (const page of directoryPages(client, query)) yield* arr(page, 'agents', 'the directory page') as DirectoryAgent[];
}

/** Items of a numbered list, page after page until `total` is reached or a page comes back short. */
async function* numbered<T>(fetchPage: (page: number) => Promise<unknown>, field: string, perPage: number): AsyncGenerator<T> {
  for (let page = 1; ; page++) {
    const body = await fetchPage(page);
    const items = arr(body, field, `page ${page}`) as T[];
    yield* items;
    const total = num(body, 'total', `page ${page}`);
    if (items.length < perPage || page * perPage >= total) return;
  }
}

/**
 * Every memory key (metadata, never values), in the order svc lists them. Numbered pages: a key
 * written or deleted during the walk can shift the pages after it.
 */
export function memoryKeys(client: SvcClient, query: MemoryListQuery = {}): AsyncGenerator<MemoryKeyItem> {
  const perPage = query.per_page ?? 100;
  return numbered<MemoryKeyItem>((page) => ok(client.GET('/v1/memory', { params: { query: { ...query, per_page: perPage, page } } })), 'keys', perPage);
}

/** Every blob of the agent, newest first (numbered pages, as for memoryKeys). */
export function blobs(client: SvcClient, query: BlobListQuery = {}): AsyncGenerator<BlobItem> {
  const perPage = query.per_page ?? 100;
  return numbered<BlobItem>((page) => ok(client.GET('/v1/blobs', { params: { query: { ...query, per_page: perPage, page } } })), 'blobs', perPage);
}

/** The items of an async iterator in an array (at most `max`). */
export async function collect<T>(items: AsyncIterable<T>, max = Infinity): Promise<T[]> {
  const out: T[] = [];
  if (max <= 0) return out;
  for await (const item of items) {
    out.push(item);
    if (out.length >= max) break;
  }
  return out;
}
