// The messages the console sends. Each returns `{ subject, text, html }` for `Mailer.send`.
// Subjects are logged, so they never carry a secret (codes stay in the body).

import {
  PRODUCT_NAME,
  calendarDaysUntil,
  formatUtc,
  p,
  renderEmail,
  strong,
  trimBaseUrl,
  type Block,
  type RenderedEmail,
} from './layout';

type TeamRole = 'owner' | 'admin' | 'developer' | 'viewer';

const API_PATH = '/api/vc/v1';

function greeting(name: string | null | undefined): string {
  const trimmed = name?.trim();
  return trimmed ? `Hi ${trimmed},` : 'Hi,';
}

// ---------------------------------------------------------------------------------------------

interface ConfirmationEmailInput {
  name: string;
  code: string;
  baseUrl: string;
  /** When the code stops working; mentioned when given. */
  expiresAt?: Date;
}

/** Sent at sign-up. The text part carries the exact line `Confirmation code: <code>` (CONTRACT). */
export function confirmationEmail(input: ConfirmationEmailInput): RenderedEmail {
  const base = trimBaseUrl(input.baseUrl);
  const blocks: Block[] = [
    p(`Welcome to ${PRODUCT_NAME}! Enter this code to confirm your e-mail address and finish signing up:`),
    { kind: 'code', label: 'Confirmation code', value: input.code },
  ];
  if (input.expiresAt) {
    const { date, time } = formatUtc(input.expiresAt);
    blocks.push(p(`The code works until ${date} at ${time}.`));
  }
  blocks.push(
    p('Signing up from a script? Send the code to the API:'),
    { kind: 'command', text: `POST ${base}${API_PATH}/signup/confirm\n{"code": ${JSON.stringify(input.code)}}` },
    p("Didn't sign up? Then you can ignore this e-mail: the address stays unconfirmed and nothing else happens."),
  );
  return renderEmail({
    subject: `Confirm your e-mail address for ${PRODUCT_NAME}`,
    preheader: 'Your confirmation code is inside. Enter it to finish signing up.',
    greeting: greeting(input.name),
    blocks,
    footer: `You're receiving this because this address was used to sign up for ${PRODUCT_NAME}. We will never ask you for this code.`,
  });
}

// ---------------------------------------------------------------------------------------------

interface InvitationEmailInput {
  teamName: string;
  inviterName: string;
  role: TeamRole;
  invitationId: string;
  baseUrl: string;
  expiresAt: Date;
}

const ROLE_DESCRIPTIONS: Record<TeamRole, string> = {
  owner: 'Owners can do everything in the team, including managing its people, billing and settings.',
  admin: "Admins manage the team's people, projects and settings.",
  developer: 'Developers see the projects and environments, deploy and build, and read tasks and their logs.',
  viewer: 'Viewers can see everything in the team but change nothing.',
};

function withArticle(role: string): string {
  return /^[aeiou]/i.test(role) ? `an ${role}` : `a ${role}`;
}

/** Sent when someone is invited to a team: what it is, and how to accept. */
export function invitationEmail(input: InvitationEmailInput): RenderedEmail {
  const base = trimBaseUrl(input.baseUrl);
  const inviter = input.inviterName.trim() || 'A team member';
  const consoleUrl = `${base}/invitations/${encodeURIComponent(input.invitationId)}`;
  const acceptUrl = `${base}${API_PATH}/invitations/${encodeURIComponent(input.invitationId)}/accept`;
  const { date, time } = formatUtc(input.expiresAt);
  return renderEmail({
    subject: `${inviter} invited you to join ${input.teamName} on ${PRODUCT_NAME}`,
    preheader: `Join ${input.teamName} as ${withArticle(input.role)}. The invitation is valid until ${date}.`,
    greeting: greeting(null),
    blocks: [
      p(`${inviter} has invited you to join the team `, strong(input.teamName), ` as ${withArticle(input.role)}.`),
      p(ROLE_DESCRIPTIONS[input.role] ?? ''),
      p('To accept:'),
      {
        kind: 'steps',
        items: [
          [
            `Sign in to ${PRODUCT_NAME} with this e-mail address (or sign up with it and confirm it). The invitation works only for this address.`,
          ],
          ['Open the invitation below and choose Accept.'],
        ],
      },
      { kind: 'button', label: 'View the invitation', url: consoleUrl },
      p('Prefer the command line or a script? Once signed in with this address, send:'),
      { kind: 'command', text: `POST ${acceptUrl}` },
      p(
        `The invitation is valid until ${date} at ${time}. If it runs out, ask ${inviter} to renew it. ` +
          'Not expecting this? You can ignore it; nothing happens unless you accept.',
      ),
    ],
    footer: `You're receiving this because ${inviter} invited this address to the team ${input.teamName} on ${PRODUCT_NAME}.`,
  });
}

// ---------------------------------------------------------------------------------------------

interface TokenExpiryReminderInput {
  userName: string;
  purpose: string;
  teamName: string;
  expiresAt: Date;
  now: Date;
  baseUrl: string;
}

/** "expires in 3 days" / "expires tomorrow" / "expires today" / "has expired", by UTC calendar day. */
export function expiryPhrase(expiresAt: Date, now: Date): string {
  if (expiresAt.getTime() <= now.getTime()) return 'has expired';
  const days = calendarDaysUntil(expiresAt, now);
  if (days <= 0) return 'expires today';
  if (days === 1) return 'expires tomorrow';
  return `expires in ${days} days`;
}

/** Sent from 14 days before a personal access token expires, then weekly. Never includes the token. */
export function tokenExpiryReminderEmail(input: TokenExpiryReminderInput): RenderedEmail {
  const base = trimBaseUrl(input.baseUrl);
  const tokensUrl = `${base}/account/tokens`;
  const phrase = expiryPhrase(input.expiresAt, input.now);
  const expired = phrase === 'has expired';
  const { date, time } = formatUtc(input.expiresAt);
  const when = expired ? `expired on ${date} at ${time}.` : `${phrase}, on ${date} at ${time}.`;

  const blocks: Block[] = [
    p(
      'Your personal access token ',
      strong(`“${input.purpose}”`),
      ' for the team ',
      strong(input.teamName),
      ` ${when}`,
    ),
    p(
      expired
        ? 'Anything still using it, such as a CI pipeline or a deploy script, is now turned away. To get it working again:'
        : "After that, anything still using it, such as a CI pipeline or a deploy script, will be turned away. Tokens can't be extended, so if you still need it:",
    ),
    {
      kind: 'steps',
      items: [
        ['Issue a new token for ', strong(input.teamName), ' on your access tokens page.'],
        ["Put the new token wherever the old one is used, for example your CI pipeline's secrets."],
        ['Revoke the old token, so only the new one works.'],
      ],
    },
    { kind: 'button', label: 'Open your access tokens', url: tokensUrl },
  ];
  if (!expired) {
    blocks.push(
      p(
        "No longer needed? Then there's nothing to do: it will expire on its own and stay in your token list for the record.",
      ),
    );
    if (calendarDaysUntil(input.expiresAt, input.now) > 7) {
      blocks.push(p("We'll remind you again in a week if it's still active."));
    }
  }

  return renderEmail({
    subject: `Your access token “${input.purpose}” ${phrase}`,
    preheader: `${input.teamName}: ${expired ? `expired ${date}` : `${phrase} (${date} ${time})`}. Issue a new one to keep things running.`,
    greeting: greeting(input.userName),
    blocks,
    footer: `You're receiving this because you issued this token on ${PRODUCT_NAME}. For your safety, reminders never include the token itself.`,
  });
}
