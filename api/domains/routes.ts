import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import * as s from './schemas';
import * as domains from './service';
import { scopes } from '../lib/scopes';
import { presentDomain, presentDomainList } from './presenter';

const tags = ['domains'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/domains',
    operationId: 'listEnvironmentDomains',
    description:
      "Every hostname added to the environment with its state (pending or verified) and the TXT record that verifies it, plus the project's domain allowance and how much of it is used.",
    summary: "The environment's domains, and the project's allowance (used counts pending ones too)",
    tags,
    auth: 'session',
    permission: 'environment:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: { 200: { description: 'Domains', schema: s.domainListSchema }, 404: error('No such environment') },
    async handler(ctx) {
      return domains.listDomains(ctx.deps, ctx.actor, ctx.input.params.id);
    },
    present: presentDomainList,
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/domains',
    operationId: 'addEnvironmentDomain',
    summary: 'Adds a domain to the environment, pending until its TXT record is found',
    description:
      'The hostname alone: lower-cased, IDNA to punycode, at least two labels, no scheme, port, path or wildcard (422 on hostname). ' +
      'Put the TXT record `verification.name` = `verification.value` in DNS, then POST /domains/{id}/verify (it is also re-checked in ' +
      'the background until it expires, 7 days after it was added). A hostname verified on any environment, or already added by ' +
      'this team: 409 domain_taken. Pending claims of one hostname by different teams stand side by side: the first to ' +
      'verify keeps it and the others are deleted (an activity event each). Past the allowance: 409 domain_allowance_spent.',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.environment,
    params: s.idParams,
    body: s.addDomainBody,
    responses: {
      201: { description: 'The domain', schema: s.domainSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      409: error('domain_taken or domain_allowance_spent'),
      422: error('Invalid hostname'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return domains.addDomain(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: presentDomain,
  }),
  defineRoute({
    method: 'post',
    path: '/domains/{id}/verify',
    operationId: 'verifyDomain',
    summary: 'Looks the TXT record up in DNS now; verified when it holds the value',
    description:
      'At most 12 calls an hour for one hostname by one team (the background re-checks do not count; deleting and adding ' +
      'the domain again does not reset it): then 429 rate_limited with Retry-After. `verification.checks_left` says how ' +
      'many are left. A claim that another team verified first is removed: 409 domain_taken. ' +
      'Once verified, with ACME_DIRECTORY_URL set, a configuration/certificate_issue task asks the ACME CA for its ' +
      'certificate (`certificate.status` pending, then issued or failed). A domain verified by this call is served by every edge ' +
      'when it answers (past 10 s: 503 edge_unavailable, the verification saved).',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.domain,
    params: s.idParams,
    responses: {
      200: { description: 'The domain', schema: s.domainSchema },
      403: error('Role may not'),
      404: error('No such domain'),
      409: error('domain_taken: another team verified the hostname first'),
      429: error('Checked 12 times in the last hour'),
      503: error('edge_unavailable: an edge did not apply the change within 10 s; the change is saved'),
    },
    async handler(ctx) {
      return domains.verifyDomain(ctx.deps, ctx.actor, ctx.input.params.id);
    },
    present: presentDomain,
  }),
  defineRoute({
    method: 'patch',
    path: '/domains/{id}',
    operationId: 'moveDomain',
    description:
      "Points a domain at another environment of the same project; its state (and certificate) stays as it was. A verified domain is served by the new environment on every edge when this answers (past 10 s: 503 edge_unavailable, the move saved). An environment of another project is 422 on `environment_id`; the move is written to the team's activity.",
    summary: 'Moves the domain to another environment of the same project',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.domain,
    params: s.idParams,
    body: s.moveDomainBody,
    responses: {
      200: { description: 'The domain', schema: s.domainSchema },
      403: error('Role may not'),
      404: error('No such domain'),
      422: error('Not an environment of the same project'),
      503: error('edge_unavailable: an edge did not apply the change within 10 s; the change is saved'),
    },
    async handler(ctx) {
      return domains.moveDomain(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: presentDomain,
  }),
  defineRoute({
    method: 'delete',
    path: '/domains/{id}',
    operationId: 'deleteDomain',
    description:
      "Deletes the domain and stops its background re-check; no edge serves it (nor its certificate) when this answers (past 10 s: 503 edge_unavailable, the deletion saved). Written to the team's activity.",
    summary: 'Removes the domain; the edge stops serving it at once',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.domain,
    params: s.idParams,
    responses: {
      204: { description: 'Removed' },
      403: error('Role may not'),
      404: error('No such domain'),
      503: error('edge_unavailable: an edge did not apply the change within 10 s; the change is saved'),
    },
    async handler(ctx) {
      await domains.deleteDomain(ctx.deps, ctx.actor, ctx.input.params.id);
      ctx.status = 204;
    },
  }),
] as RouteDef[];
