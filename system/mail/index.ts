export { supportReplyEmail, supportTicketEmail } from './support';
export { evacuationEmail, taskEventEmail } from './events';
