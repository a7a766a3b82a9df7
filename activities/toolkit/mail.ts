/**
 * An activity's e-mail (profiles.mail retries it): a permanent refusal (5xx: an address the server will never
 * take) fails for good as MailRefused, naming `what` only, never the text; anything else is thrown as it is and
 * retried through the outage.
 */
import { isPermanentMailError, type Mailer } from '../../system/mail/transport';
import { userFault } from './failures';

export async function sendOrRefuse(mailer: Mailer, message: Parameters<Mailer['send']>[0], what: string) {
  try {
    await mailer.send(message);
  } catch (err) {
    if (isPermanentMailError(err)) throw userFault('MailRefused', `the mail server refused ${what}`);
    throw err;
  }
}
