import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { useTestContext } from '../../helpers/context';
import { addMember, createAccessToken, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { Invitation } from '../../../db/models/invitation';
import { Membership } from '../../../db/models/membership';
import type { Team } from '../../../db/models/team';

const t = useTestContext({ smtp: true });

async function teamWithOwner() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  return { owner, team, agent: await sessionAgent(t, owner) };
}

async function member(team: Team, role: 'owner' | 'admin' | 'developer' | 'viewer') {
  const user = await createUser(t);
  const membership = await addMember(t, team, user, role);
  return { user, membership, agent: await sessionAgent(t, user) };
}

async function invitationFor(team: Team, email: string, attrs: Partial<Invitation> = {}) {
  return Invitation.query(t.deps.knex).insertAndFetch({
    team_id: team.id,
    email,
    role: 'developer',
    expires_at: new Date(Date.now() + 86_400_000),
    ...attrs,
  } as Partial<Invitation>);
}

const uniqueEmail = () => `invitee-${randomUUID().slice(0, 8)}@example.test`;
const idFromMail = (text: string) => /\/invitations\/([0-9a-f-]{36})\/accept/.exec(text)?.[1];

describe('GET /teams/{id}/people', () => {
  it('lists members and pending invitations', async () => {
    const { owner, team, agent } = await teamWithOwner();
    const dev = await member(team, 'developer');
    const inv = await invitationFor(team, 'someone@example.test', { role: 'viewer' });
    await invitationFor(team, 'gone@example.test', { revoked_at: new Date() });
    const res = await agent.get(`/teams/${team.id}/people`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { id: expect.any(String), user_id: owner.id, name: owner.name, email: owner.email, role: 'owner' },
      { id: dev.membership.id, user_id: dev.user.id, name: dev.user.name, email: dev.user.email, role: 'developer' },
    ]);
    expect(res.body.invitations).toEqual([
      {
        id: inv.id,
        email: 'someone@example.test',
        role: 'viewer',
        status: 'open',
        expires_at: new Date(inv.expires_at).toISOString(),
      },
    ]);
  });

  it('is readable by a viewer, 404 for a stranger', async () => {
    const { team } = await teamWithOwner();
    const viewer = await member(team, 'viewer');
    expect((await viewer.agent.get(`/teams/${team.id}/people`)).status).toBe(200);
    const stranger = await sessionAgent(t, await createUser(t));
    expect((await stranger.get(`/teams/${team.id}/people`)).status).toBe(404);
  });
});

describe('POST /teams/{id}/invitations', () => {
  it('creates an invitation and e-mails it to the address', async () => {
    const { team, agent } = await teamWithOwner();
    const email = uniqueEmail();
    const res = await agent.post(`/teams/${team.id}/invitations`, { email, role: 'developer' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ team_id: team.id, email, role: 'developer', status: 'open' });
    const days = (Date.parse(res.body.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThanOrEqual(7);
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
    expect(idFromMail(mail.text)).toBe(res.body.id);
    expect(mail.subject).toContain(team.name);
  });

  it('keeps nothing when the e-mail cannot be sent (503 mail_not_sent)', async () => {
    const { team, agent } = await teamWithOwner();
    t.smtp!.setDown(true);
    try {
      const res = await agent.post(`/teams/${team.id}/invitations`, { email: uniqueEmail(), role: 'viewer' });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('mail_not_sent');
    } finally {
      t.smtp!.setDown(false);
    }
    expect(await Invitation.query(t.deps.knex).where({ team_id: team.id })).toHaveLength(0);
  });

  it('refuses inviting an existing member with 409 on email', async () => {
    const { team, agent } = await teamWithOwner();
    const dev = await member(team, 'developer');
    const res = await agent.post(`/teams/${team.id}/invitations`, {
      email: dev.user.email.toUpperCase(),
      role: 'admin',
    });
    expect(res.status).toBe(409);
    expect(res.body.error.fields.email).toBeDefined();
    expect(await Invitation.query(t.deps.knex).where({ team_id: team.id })).toHaveLength(0);
  });

  it('replaces a pending invitation for the same address', async () => {
    const { team, agent } = await teamWithOwner();
    const email = uniqueEmail();
    const first = await agent.post(`/teams/${team.id}/invitations`, { email, role: 'viewer' });
    const second = await agent.post(`/teams/${team.id}/invitations`, { email, role: 'admin' });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    const people = await agent.get(`/teams/${team.id}/people`);
    expect(people.body.invitations.map((i: { id: string; role: string }) => [i.id, i.role])).toEqual([
      [second.body.id, 'admin'],
    ]);
    expect((await Invitation.query(t.deps.knex).findById(first.body.id))!.revoked_at).not.toBeNull();
  });

  it('lets only owners invite owners', async () => {
    const { team } = await teamWithOwner();
    const admin = await member(team, 'admin');
    const res = await admin.agent.post(`/teams/${team.id}/invitations`, { email: uniqueEmail(), role: 'owner' });
    expect(res.status).toBe(403);
    expect(
      (await admin.agent.post(`/teams/${team.id}/invitations`, { email: uniqueEmail(), role: 'admin' })).status,
    ).toBe(201);
  });

  it('refuses a developer with 403', async () => {
    const { team } = await teamWithOwner();
    const dev = await member(team, 'developer');
    expect(
      (await dev.agent.post(`/teams/${team.id}/invitations`, { email: uniqueEmail(), role: 'viewer' })).status,
    ).toBe(403);
  });

  it('refuses a bad address and role with 422 naming both', async () => {
    const { team, agent } = await teamWithOwner();
    const res = await agent.post(`/teams/${team.id}/invitations`, { email: 'not-an-address', role: 'king' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['email', 'role']);
  });

  it('answers 404 for another team', async () => {
    const { team } = await teamWithOwner();
    const other = await teamWithOwner();
    expect(
      (await other.agent.post(`/teams/${team.id}/invitations`, { email: uniqueEmail(), role: 'viewer' })).status,
    ).toBe(404);
  });
});

describe('POST /invitations/{id}/accept', () => {
  it('makes the invited account, signed in with its confirmed address, a member', async () => {
    const { team, agent } = await teamWithOwner();
    const email = uniqueEmail();
    const invitee = await createUser(t, { email });
    await agent.post(`/teams/${team.id}/invitations`, { email, role: 'admin' });
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
    const id = idFromMail(mail.text)!;
    const res = await (await sessionAgent(t, invitee)).post(`/invitations/${id}/accept`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ team_id: team.id, user_id: invitee.id, role: 'admin', email });
    const teams = await (await sessionAgent(t, invitee)).get('/teams');
    expect(teams.body.data.map((x: { id: string; role: string }) => [x.id, x.role])).toEqual([[team.id, 'admin']]);
    const again = await (await sessionAgent(t, invitee)).post(`/invitations/${id}/accept`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invitation_not_open');
  });

  it('answers 404 to any other account and changes nothing', async () => {
    const { team, agent } = await teamWithOwner();
    const email = uniqueEmail();
    await agent.post(`/teams/${team.id}/invitations`, { email, role: 'developer' });
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
    const id = idFromMail(mail.text)!;
    const intruder = await createUser(t);
    const res = await (await sessionAgent(t, intruder)).post(`/invitations/${id}/accept`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect(await Membership.query(t.deps.knex).findOne({ team_id: team.id, user_id: intruder.id })).toBeUndefined();
    expect((await Invitation.query(t.deps.knex).findById(id))!.accepted_at).toBeNull();
  });

  it('answers 403 email_not_confirmed to the invited account whose address is unconfirmed', async () => {
    const { team, agent } = await teamWithOwner();
    const email = uniqueEmail();
    const invitee = await createUser(t, { email, confirmed: false });
    await agent.post(`/teams/${team.id}/invitations`, { email, role: 'developer' });
    const id = idFromMail((await t.smtp!.waitFor((m) => m.to.includes(email))).text)!;
    const res = await (await sessionAgent(t, invitee)).post(`/invitations/${id}/accept`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('email_not_confirmed');
    expect(await Membership.query(t.deps.knex).findOne({ team_id: team.id, user_id: invitee.id })).toBeUndefined();
  });

  it('answers 409 invitation_not_open for an expired or revoked invitation', async () => {
    const { team } = await teamWithOwner();
    const email = uniqueEmail();
    const invitee = await createUser(t, { email });
    const expired = await invitationFor(team, email, { expires_at: new Date(Date.now() - 1000) });
    const invAgent = await sessionAgent(t, invitee);
    const res = await invAgent.post(`/invitations/${expired.id}/accept`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invitation_not_open');
    await Invitation.query(t.deps.knex)
      .patch({ revoked_at: new Date() } as Partial<Invitation>)
      .where({ id: expired.id });
    const revoked = await invitationFor(team, email);
    await Invitation.query(t.deps.knex)
      .patch({ revoked_at: new Date() } as Partial<Invitation>)
      .where({ id: revoked.id });
    expect((await invAgent.post(`/invitations/${revoked.id}/accept`)).body.error.code).toBe('invitation_not_open');
  });

  it('refuses a token with token_not_allowed', async () => {
    const { owner, team } = await teamWithOwner();
    const token = await createAccessToken(t, owner, team);
    const res = await t.agent().withBearer(token).post(`/invitations/${randomUUID()}/accept`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });
});

describe('POST /invitations/{id}/renew', () => {
  it('renews an expired invitation for 7 days and e-mails it again', async () => {
    const { team, agent } = await teamWithOwner();
    const email = uniqueEmail();
    const inv = await invitationFor(team, email, { expires_at: new Date(Date.now() - 1000) });
    const res = await agent.post(`/invitations/${inv.id}/renew`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('open');
    expect(Date.parse(res.body.expires_at) - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
    expect(idFromMail(mail.text)).toBe(inv.id);
  });

  it('refuses a revoked invitation with 409 and a developer with 403', async () => {
    const { team, agent } = await teamWithOwner();
    const revoked = await invitationFor(team, uniqueEmail(), { revoked_at: new Date() });
    const res = await agent.post(`/invitations/${revoked.id}/renew`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invitation_not_open');
    const dev = await member(team, 'developer');
    const open = await invitationFor(team, uniqueEmail());
    expect((await dev.agent.post(`/invitations/${open.id}/renew`)).status).toBe(403);
  });

  it("answers 404 for another team's invitation", async () => {
    const { team } = await teamWithOwner();
    const inv = await invitationFor(team, uniqueEmail());
    const other = await teamWithOwner();
    expect((await other.agent.post(`/invitations/${inv.id}/renew`)).status).toBe(404);
  });
});

describe('DELETE /invitations/{id}', () => {
  it('revokes a pending invitation, which can then not be accepted', async () => {
    const { team, agent } = await teamWithOwner();
    const email = uniqueEmail();
    const invitee = await createUser(t, { email });
    const inv = await invitationFor(team, email);
    expect((await agent.delete(`/invitations/${inv.id}`)).status).toBe(204);
    const res = await (await sessionAgent(t, invitee)).post(`/invitations/${inv.id}/accept`);
    expect(res.status).toBe(409);
    expect((await agent.get(`/teams/${team.id}/people`)).body.invitations).toEqual([]);
  });

  it('refuses a viewer with 403 and another team with 404', async () => {
    const { team } = await teamWithOwner();
    const inv = await invitationFor(team, uniqueEmail());
    const viewer = await member(team, 'viewer');
    expect((await viewer.agent.delete(`/invitations/${inv.id}`)).status).toBe(403);
    const other = await teamWithOwner();
    expect((await other.agent.delete(`/invitations/${inv.id}`)).status).toBe(404);
    expect((await Invitation.query(t.deps.knex).findById(inv.id))!.revoked_at).toBeNull();
  });
});

describe('PATCH /memberships/{id}', () => {
  it("lets an admin change a developer's role", async () => {
    const { team } = await teamWithOwner();
    const admin = await member(team, 'admin');
    const dev = await member(team, 'developer');
    const res = await admin.agent.patch(`/memberships/${dev.membership.id}`, { role: 'viewer' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: dev.membership.id, role: 'viewer', user_id: dev.user.id });
  });

  it('lets only owners make or unmake owners', async () => {
    const { team, agent } = await teamWithOwner();
    const admin = await member(team, 'admin');
    const dev = await member(team, 'developer');
    expect((await admin.agent.patch(`/memberships/${dev.membership.id}`, { role: 'owner' })).status).toBe(403);
    expect((await admin.agent.patch(`/memberships/${admin.membership.id}`, { role: 'owner' })).status).toBe(403);
    expect((await agent.patch(`/memberships/${dev.membership.id}`, { role: 'owner' })).status).toBe(200);
    expect((await admin.agent.patch(`/memberships/${dev.membership.id}`, { role: 'viewer' })).status).toBe(403);
  });

  it('never demotes the last owner (409 last_owner)', async () => {
    const { team, agent } = await teamWithOwner();
    const mine = await Membership.query(t.deps.knex).findOne({ team_id: team.id, role: 'owner' });
    const res = await agent.patch(`/memberships/${mine!.id}`, { role: 'admin' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('last_owner');
    expect((await Membership.query(t.deps.knex).findById(mine!.id))!.role).toBe('owner');
  });

  it('lets an owner step down once another owner exists', async () => {
    const { team, agent } = await teamWithOwner();
    await member(team, 'owner');
    const mine = await Membership.query(t.deps.knex).findOne({ team_id: team.id }).orderBy('created_at').first();
    expect((await agent.patch(`/memberships/${mine!.id}`, { role: 'admin' })).status).toBe(200);
  });

  it('refuses a developer with 403, a bad role with 422, another team with 404', async () => {
    const { team, agent } = await teamWithOwner();
    const dev = await member(team, 'developer');
    const viewer = await member(team, 'viewer');
    expect((await dev.agent.patch(`/memberships/${viewer.membership.id}`, { role: 'admin' })).status).toBe(403);
    const bad = await agent.patch(`/memberships/${viewer.membership.id}`, { role: 'emperor' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.fields.role).toBeDefined();
    const other = await teamWithOwner();
    expect((await other.agent.patch(`/memberships/${viewer.membership.id}`, { role: 'admin' })).status).toBe(404);
  });
});

describe('DELETE /memberships/{id}', () => {
  it('lets an admin remove a developer', async () => {
    const { team } = await teamWithOwner();
    const admin = await member(team, 'admin');
    const dev = await member(team, 'developer');
    expect((await admin.agent.delete(`/memberships/${dev.membership.id}`)).status).toBe(204);
    expect((await dev.agent.get(`/teams/${team.id}/people`)).status).toBe(404);
  });

  it('lets a viewer leave but not remove someone else', async () => {
    const { team } = await teamWithOwner();
    const viewer = await member(team, 'viewer');
    const dev = await member(team, 'developer');
    expect((await viewer.agent.delete(`/memberships/${dev.membership.id}`)).status).toBe(403);
    expect((await viewer.agent.delete(`/memberships/${viewer.membership.id}`)).status).toBe(204);
  });

  it('never removes the last owner, even leaving', async () => {
    const { team, agent } = await teamWithOwner();
    const mine = await Membership.query(t.deps.knex).findOne({ team_id: team.id, role: 'owner' });
    const res = await agent.delete(`/memberships/${mine!.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('last_owner');
  });

  it('lets only owners remove owners', async () => {
    const { team, agent } = await teamWithOwner();
    const second = await member(team, 'owner');
    const admin = await member(team, 'admin');
    expect((await admin.agent.delete(`/memberships/${second.membership.id}`)).status).toBe(403);
    expect((await agent.delete(`/memberships/${second.membership.id}`)).status).toBe(204);
  });

  it("answers 404 for another team's membership", async () => {
    const { team } = await teamWithOwner();
    const dev = await member(team, 'developer');
    const other = await teamWithOwner();
    expect((await other.agent.delete(`/memberships/${dev.membership.id}`)).status).toBe(404);
    expect(await Membership.query(t.deps.knex).findById(dev.membership.id)).toBeDefined();
  });
});
