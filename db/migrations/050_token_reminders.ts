import type { Knex } from 'knex';

/**
 * Token-expiry reminders: the UTC day each reminder belongs to (the day of the run that found it due).
 * "Not reminded in the last 7 days" compares these days, so a daily run a few seconds earlier than
 * last week's does not push the weekly reminder back a day.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('token_reminders', (t) => {
    t.date('reminder_date');
  });
  await knex.raw(`UPDATE token_reminders SET reminder_date = (coalesce(sent_at, created_at) AT TIME ZONE 'UTC')::date`);
  await knex.schema.alterTable('token_reminders', (t) => {
    t.date('reminder_date').notNullable().alter();
    t.index(['token_id', 'reminder_date']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('token_reminders', (t) => {
    t.dropIndex(['token_id', 'reminder_date']);
    t.dropColumn('reminder_date');
  });
}
