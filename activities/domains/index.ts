import type { Deps } from '../../system/deps';
import { Context } from '@temporalio/activity';
import { emitDomainVerified } from '../../core/integration-events';
import { checkDomain, type CheckOutcome } from '../../core/domains';
import { requestFirstCertificate } from '../../core/certificate-tasks';

/** The background re-check of pending domains (workflows/domains.ts); not counted against the 12 an hour. */
export function createDomainActivities(deps: Deps) {
  return {
    async recheckDomainNow(input: { domainId: string }): Promise<CheckOutcome['status']> {
      const outcome = await checkDomain(deps.knex, deps.config.dnsServers, input.domainId);
      // Announced when this check verified it, and again on a retry (the event id makes it once).
      if (outcome.status === 'verified' && (outcome.changed || Context.current().info.attempt > 1)) {
        await emitDomainVerified(deps, input.domainId);
        await requestFirstCertificate(deps, input.domainId);
      }
      return outcome.status;
    },
  };
}

export type DomainActivities = ReturnType<typeof createDomainActivities>;
