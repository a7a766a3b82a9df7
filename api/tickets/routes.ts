import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { checkAttachments, type UploadedFile } from './attachments';
import * as s from './schemas';
import * as tickets from './service';
import { presentReply, presentTicket } from './presenter';

const tags = ['tickets'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/teams/{id}/tickets/new',
    operationId: 'getNewTicketChoices',
    description:
      'The first call of opening a support ticket: its categories, and how many screenshots of which types and sizes `POST /teams/{id}/tickets` accepts as `attachments[]`.',
    summary: 'What opening a support ticket asks for: the categories and the attachment limits',
    tags,
    auth: 'session',
    permission: 'tickets:write',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'Choices', schema: s.newTicketSchema },
      403: error('Role may not'),
      404: error('No such team'),
    },
    handler(ctx) {
      ctx.body = tickets.newTicketChoices();
    },
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/tickets',
    operationId: 'createTicket',
    summary: 'Opens a support ticket, as JSON or as multipart/form-data with screenshots in attachments[]',
    description:
      'Attachments must be images by their content (PNG, JPEG, GIF, WebP), within the limits GET /teams/{id}/tickets/new gives: ' +
      'a part too large or one too many answers 413 naming it (`attachments[2]`), a part that is not an image 422. ' +
      'The ticket and its attachments are e-mailed to support; when that fails the answer is 503 mail_not_sent and nothing is kept.',
    tags,
    auth: 'session',
    permission: 'tickets:write',
    scope: scopes.team,
    params: s.idParams,
    bodyTypes: ['json', 'multipart'],
    multipartLimits: s.ATTACHMENT_LIMITS,
    body: s.createBody,
    responses: {
      201: { description: 'The ticket', schema: s.ticketSchema },
      403: error('Role may not'),
      404: error('No such team'),
      413: error('An attachment too large, or too many'),
      422: error('Invalid fields, or an attachment that is not an image'),
      503: error('mail_not_sent'),
    },
    async handler(ctx) {
      const files = await checkAttachments(
        (ctx.request as { files?: Record<string, UploadedFile | UploadedFile[]> }).files,
      );
      ctx.status = 201;
      return tickets.createTicket(ctx.deps, ctx.actor, ctx.scope.teamId, ctx.input.body, files);
    },
    present: presentTicket,
  }),
  defineRoute({
    method: 'get',
    path: '/teams/{id}/tickets',
    operationId: 'listTeamTickets',
    description: 'Every support ticket opened for the team, newest first.',
    summary: "The team's support tickets, newest first",
    tags,
    auth: 'session',
    permission: 'tickets:read',
    scope: scopes.team,
    params: s.idParams,
    responses: { 200: { description: 'Tickets', schema: s.ticketListSchema }, 404: error('No such team') },
    async handler(ctx) {
      return tickets.listTickets(ctx.deps, ctx.scope.teamId);
    },
    present: presentTicket,
  }),
  defineRoute({
    method: 'get',
    path: '/tickets/{id}',
    operationId: 'getTicket',
    description: "One of the team's support tickets: its text, its attachments and the replies.",
    summary: 'One support ticket with its attachments and replies',
    tags,
    auth: 'session',
    permission: 'tickets:read',
    scope: scopes.ticket,
    params: s.idParams,
    responses: { 200: { description: 'The ticket', schema: s.ticketSchema }, 404: error('No such ticket') },
    async handler(ctx) {
      return tickets.getTicket(ctx.deps, ctx.input.params.id);
    },
    present: presentTicket,
  }),
  defineRoute({
    method: 'post',
    path: '/tickets/{id}/replies',
    operationId: 'replyToTicket',
    description:
      'Adds a reply (body `{body, resolved}`), e-mailed to support; `resolved: true` also marks the ticket resolved.',
    summary: 'Replies to a support ticket; `resolved: true` marks it resolved',
    tags,
    auth: 'session',
    permission: 'tickets:write',
    scope: scopes.ticket,
    params: s.idParams,
    body: s.replyBody,
    responses: {
      201: { description: 'The reply', schema: s.replySchema },
      403: error('Role may not'),
      404: error('No such ticket'),
      422: error('Invalid fields'),
      503: error('mail_not_sent'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return tickets.replyToTicket(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: presentReply,
  }),
] as RouteDef[];
