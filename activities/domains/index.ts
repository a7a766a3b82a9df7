import type { Deps } from '../../system/deps';
import { checkDomain, type CheckOutcome } from '../../db/queries/domains';

/** The background re-check of pending domains (workflows/domains.ts); not counted against the 12 an hour. */
export function createDomainActivities(deps: Deps) {
  return {
    async recheckDomainNow(input: { domainId: string }): Promise<CheckOutcome['status']> {
      return (await checkDomain(deps.knex, deps.config.dnsServers, input.domainId)).status;
    },
  };
}

export type DomainActivities = ReturnType<typeof createDomainActivities>;
