import type { Deps } from '../../system/deps';
import { Context } from '@temporalio/activity';
import { checkDomain, type CheckOutcome } from '../../core/domains';
import { requestFirstCertificate } from '../../core/certificate-tasks';

/** The background re-check of pending domains (workflows/domains.ts); not counted against the 12 an hour. */
export function createDomainActivities(deps: Deps) {
  return {
    async recheckDomainNow(input: { domainId: string }): Promise<CheckOutcome['status']> {
      // domain.verified is announced as it is verified: should that fail, the domain stays pending and the retry
      // verifies and announces it (the event id makes it once).
      const outcome = await checkDomain(deps, input.domainId);
      // the first certificate, also on a retry of a check that verified it (a certificate task is started once)
      if (outcome.status === 'verified' && (outcome.changed || Context.current().info.attempt > 1))
        await requestFirstCertificate(deps, input.domainId);
      return outcome.status;
    },
  };
}

export type DomainActivities = ReturnType<typeof createDomainActivities>;
