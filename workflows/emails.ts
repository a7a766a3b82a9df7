// An event's e-mail that the mail server did not take at once: attempts with backoff (profiles.mail: 2 s
// doubling to 2 minutes, for up to 12 hours), so a mail server down for a while still gets it once back.

import { proxyActivities } from '@temporalio/workflow';
import type { EmailActivities, EventEmailInput } from '../activities/emails';
import { profiles } from './profiles';

const { sendEventEmail } = proxyActivities<EmailActivities>(profiles.mail);

export async function deliverEventEmail(input: EventEmailInput): Promise<'sent' | 'failed'> {
  try {
    await sendEventEmail(input);
    return 'sent';
  } catch {
    return 'failed';
  }
}
