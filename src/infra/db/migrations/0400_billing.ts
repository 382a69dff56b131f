import type { Kysely } from 'kysely';

/** Billing: accounts (lock point), append-only credit ledger + lot projection, metering counters. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('billing_accounts')
    .addColumn('agent_id', 'text', (c) => c.primaryKey())
    .addColumn('lifetime_purchase_units', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('payment_customer_id', 'text')
    .addColumn('payment_method_id', 'text')
    .addColumn('recharge_consent_id', 'text')
    .addColumn('auto_topup_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('auto_topup_threshold_units', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('auto_topup_units', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('topup_dip_open', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('topup_intent_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('billing_accounts_customer_idx').on('billing_accounts').column('payment_customer_id').execute();

  await db.schema
    .createTable('credit_ledger')
    .addColumn('entry_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('amount_units', 'bigint', (c) => c.notNull())
    .addColumn('lot_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('action', 'text')
    .addColumn('charge_id', 'text')
    .addColumn('ref', 'text', (c) => c.unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('credit_ledger_agent_idx').on('credit_ledger').columns(['agent_id', 'created_at']).execute();
  await db.schema.createIndex('credit_ledger_charge_idx').on('credit_ledger').column('charge_id').execute();

  await db.schema
    .createTable('credit_lots')
    .addColumn('lot_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('remaining_units', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('credit_lots_agent_idx').on('credit_lots').columns(['agent_id', 'expires_at']).execute();

  await db.schema
    .createTable('metering_free_slots')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('pool', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('used_at', 'bigint', (c) => c.notNull())
    .addColumn('charge_id', 'text')
    .addPrimaryKeyConstraint('metering_free_slots_pk', ['agent_id', 'pool', 'slot'])
    .execute();
  await db.schema.createIndex('metering_free_slots_age_idx').on('metering_free_slots').columns(['agent_id', 'pool', 'used_at']).execute();

  await db.schema
    .createTable('metering_daily')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('pool', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('metering_daily_pk', ['agent_id', 'pool', 'day'])
    .execute();

  await db.schema
    .createTable('billing_webhook_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('referral_payouts')
    .addColumn('referred_agent_id', 'text', (c) => c.primaryKey())
    .addColumn('referrer_agent_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('amount_units', 'bigint', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('decided_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('referral_payouts_referrer_idx').on('referral_payouts').columns(['referrer_agent_id', 'day']).execute();
  await db.schema.createIndex('referral_payouts_day_idx').on('referral_payouts').columns(['day', 'status']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
