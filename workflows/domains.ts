/**
 * recheckDomain: a pending domain is looked up again in DNS with backoff (firstWaitSeconds, doubling, at
 * most an hour) until it is verified or deleted; a week after it was added, a last check verifies it or
 * deletes the expired claim. Started when the domain is added (workflow id workflowIds.domainRecheck(domainId)).
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { DomainActivities } from '../activities/domains';
import { profiles } from './profiles';

const { recheckDomainNow } = proxyActivities<DomainActivities>(profiles.bookkeeping);

interface RecheckDomainInput {
  domainId: string;
  firstWaitSeconds: number;
  /** ISO 8601: when to give up (a week after the domain was added). */
  giveUpAt: string;
}

const MAX_WAIT_SECONDS = 3600;

export async function recheckDomain(input: RecheckDomainInput): Promise<'verified' | 'gone' | 'expired'> {
  const giveUpAt = Date.parse(input.giveUpAt);
  let wait = input.firstWaitSeconds;
  for (;;) {
    const left = giveUpAt - Date.now();
    if (left <= 0)
      return (await recheckDomainNow({ domainId: input.domainId })) === 'verified' ? 'verified' : 'expired';
    await sleep(Math.min(wait * 1000, left));
    const status = await recheckDomainNow({ domainId: input.domainId });
    if (status !== 'pending') return status;
    wait = Math.min(wait * 2, MAX_WAIT_SECONDS);
  }
}
