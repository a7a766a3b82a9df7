export { createMailer, describeSmtpUrl, isPermanentMailError } from './transport';
export type { MailLogger, Mailer, MailerOptions, MailMessage, SendResult } from './transport';
export { confirmationEmail, invitationEmail, tokenExpiryReminderEmail, expiryPhrase } from './templates';
export type {
  ConfirmationEmailInput,
  InvitationEmailInput,
  RenderedEmail,
  TeamRole,
  TokenExpiryReminderInput,
} from './templates';
export { escapeHtml, PRODUCT_NAME } from './layout';
export { supportReplyEmail, supportTicketEmail } from './support';
export { taskEventEmail } from './events';
