import type { CoreTables } from './tables/core';
import type { MemoryTables } from './tables/memory';
import type { BlobsTables } from './tables/blobs';
import type { WebTables } from './tables/web';
import type { BillingTables } from './tables/billing';
import type { DiscoveryTables } from './tables/discovery';
import type { TrustTables } from './tables/trust';
import type { DeclarationsTables } from './tables/declarations';
import type { CustodyTables } from './tables/custody';
import type { StakeTables } from './tables/stake';

/** The whole database as Kysely sees it: one interface per area, merged. */
export interface Database extends CoreTables, MemoryTables, BlobsTables, WebTables, BillingTables, DiscoveryTables, TrustTables, DeclarationsTables, CustodyTables, StakeTables {}
