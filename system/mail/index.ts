export { supportReplyEmail, supportTicketEmail } from './support';
export { evacuationEmail, projectEventEmail, taskEventEmail } from './events';
