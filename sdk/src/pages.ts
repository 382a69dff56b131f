/**
 * Walking lists that take more than one call: the public directory (GET /v1/agents, keyset pages
 * joined by an opaque `next_cursor`) and the numbered lists (GET /v1/memory, GET /v1/blobs: `page`,
 * `per_page`, `total`). Each walker is an async iterator that asks for the next page only when the
 * previous one is used up; `collect` gathers one into an array.
 */
import { ok, type ItemOf, type JsonBody, type SvcClient } from './client';
import type { paths as Ops } from './generated/openapi';

export type DirectoryQuery = Omit<NonNullable<Ops['/v1/agents']['get']['parameters']['query']>, 'cursor'>;
export type MemoryListQuery = Omit<NonNullable<Ops['/v1/memory']['get']['parameters']['query']>, 'page'>;
export type BlobListQuery = Omit<NonNullable<Ops['/v1/blobs']['get']['parameters']['query']>, 'page'>;

export type DirectoryPage = JsonBody<'/v1/agents', 'get'>;
export type DirectoryAgent = ItemOf<DirectoryPage, 'agents'>;
export type MemoryKeyItem = ItemOf<JsonBody<'/v1/memory', 'get'>, 'keys'>;
export type BlobItem = ItemOf<JsonBody<'/v1/blobs', 'get'>, 'blobs'>;

/** Pages of the directory, first to last, following `next_cursor` (one walk: the same filters). */
export async function* directoryPages(client: SvcClient, query: DirectoryQuery = {}): AsyncGenerator<DirectoryPage> {
  let cursor: string | undefined;
  do {
    const page = await ok(client.GET('/v1/agents', { params: { query: { ...query, ...(cursor ? { cursor } : {}) } } }));
    yield page;
    cursor = page.next_cursor || undefined;
  } while (cursor);
}

/** Every agent of the directory, best rank first (svc pages the version of its first page). */
export async function* directory(client: SvcClient, query: DirectoryQuery = {}): AsyncGenerator<DirectoryAgent> {
  for await (const page of directoryPages(client, query)) yield* page.agents;
}

/** Items of a numbered list, page after page until `total` is reached or a page comes back short. */
async function* numbered<T>(fetchPage: (page: number) => Promise<{ items: T[]; total: number }>, perPage: number): AsyncGenerator<T> {
  for (let page = 1; ; page++) {
    const { items, total } = await fetchPage(page);
    yield* items;
    if (items.length < perPage || page * perPage >= total) return;
  }
}

/**
 * Every memory key (metadata, never values), in the order svc lists them. Numbered pages: a key
 * written or deleted during the walk can shift the pages after it.
 */
export function memoryKeys(client: SvcClient, query: MemoryListQuery = {}): AsyncGenerator<MemoryKeyItem> {
  const perPage = query.per_page ?? 100;
  return numbered(async (page) => {
    const body = await ok(client.GET('/v1/memory', { params: { query: { ...query, per_page: perPage, page } } }));
    return { items: body.keys, total: body.total };
  }, perPage);
}

/** Every blob of the agent, newest first (numbered pages, as for memoryKeys). */
export function blobs(client: SvcClient, query: BlobListQuery = {}): AsyncGenerator<BlobItem> {
  const perPage = query.per_page ?? 100;
  return numbered(async (page) => {
    const body = await ok(client.GET('/v1/blobs', { params: { query: { ...query, per_page: perPage, page } } }));
    return { items: body.blobs, total: body.total };
  }, perPage);
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
