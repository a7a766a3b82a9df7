/**
 * Custom domains (CONTRACT "Domains"): core/domains.ts owns their claims (adding's lock, verifying,
 * expiring); what the API and the certificate activities read and write of a domain is here.
 */
import type { Knex } from 'knex';

export interface DomainRow {
  id: string;
  team_id: string;
  project_id: string;
  environment_id: string;
  hostname: string;
  status: 'pending' | 'verified';
  verification_value: string;
  created_at: Date;
}

/** The columns asked for of the domain, or undefined when it is gone. */
export async function domainById<K extends keyof DomainRow>(
  knex: Knex,
  id: string,
  ...columns: K[]
): Promise<Pick<DomainRow, K> | undefined> {
  const row = await knex('domains')
    .where({ id })
    .first(...columns);
  return row as Pick<DomainRow, K> | undefined;
}

/** How many domains the project has, pending ones included (what its allowance counts). */
export async function projectDomainCount(knex: Knex, projectId: string): Promise<number> {
  const row = await knex('domains').where({ project_id: projectId }).count<{ n: string }[]>({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/** Whether a claim of the hostname is verified (by any team). */
export async function hostnameVerified(knex: Knex, hostname: string): Promise<boolean> {
  return Boolean(await knex('domains').where({ hostname, status: 'verified' }).first('id'));
}

/** Whether the team has a claim of the hostname, pending or verified. */
export async function teamClaimsHostname(knex: Knex, hostname: string, teamId: string): Promise<boolean> {
  return Boolean(await knex('domains').where({ hostname, team_id: teamId }).first('id'));
}

/** Deletes the domain's row, inside the caller's transaction. */
export async function deleteDomainRow(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('domains').where({ id }).delete();
}
