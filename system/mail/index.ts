export { supportReplyEmail, supportTicketEmail } from './support';
export { taskEventEmail } from './events';
