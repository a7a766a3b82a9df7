import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { addMember, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { Ticket } from '../../../db/models/ticket';

const t = useTestContext({ smtp: true, env: { SUPPORT_EMAIL: 'help@support.test' } });

// A real 1x1 PNG and a real GIF header: file-type recognises them by their bytes.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

async function member(role: 'owner' | 'developer' | 'viewer' = 'owner') {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  if (role === 'owner') return { user: owner, team, agent: await sessionAgent(t, owner) };
  const user = await createUser(t);
  await addMember(t, team, user, role);
  return { user, team, agent: await sessionAgent(t, user) };
}

function form(fields: Record<string, string>, files: Array<{ name: string; bytes: Buffer; type?: string }>) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const f of files)
    fd.append('attachments[]', new Blob([new Uint8Array(f.bytes)], { type: f.type ?? 'image/png' }), f.name);
  return fd;
}

const fields = {
  subject: 'Deploy stuck',
  body: 'The deploy has been pending for an hour.\n\nScreenshots attached.',
  category: 'deploys',
};

describe('GET /teams/{id}/tickets/new', () => {
  it('gives the categories and the attachment limits', async () => {
    const { team, agent } = await member();
    const res = await agent.get(`/teams/${team.id}/tickets/new`);
    expect(res.status).toBe(200);
    expect(res.body.categories).toContain('deploys');
    expect(res.body.attachments).toEqual({
      max_files: 5,
      max_bytes: 5 * 1024 * 1024,
      types: ['image/png', 'image/jpeg', 'image/gif', 'image/webp'],
    });
  });
});

describe('POST /teams/{id}/tickets', () => {
  it('opens a ticket from multipart with screenshots and e-mails it with them to SUPPORT_EMAIL', async () => {
    const { user, team, agent } = await member('developer');
    const res = await agent.request('POST', `/teams/${team.id}/tickets`, {
      rawBody: form(fields, [
        { name: 'screen.png', bytes: PNG },
        { name: 'anim.gif', bytes: GIF, type: 'application/octet-stream' },
      ]),
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ subject: 'Deploy stuck', category: 'deploys', status: 'open' });
    expect(res.body.attachments).toEqual([
      { name: 'screen.png', bytes: PNG.length, type: 'image/png' },
      { name: 'anim.gif', bytes: GIF.length, type: 'image/gif' },
    ]);
    const mail = await t.smtp!.waitFor((m) => m.to.includes('help@support.test') && m.subject.includes('Deploy stuck'));
    expect(mail.text).toContain(user.email);
    expect(mail.text).toContain('pending for an hour');
    expect(mail.headers['reply-to']).toContain(user.email);
    expect(mail.attachments.map((a) => [a.filename, a.type])).toEqual([
      ['screen.png', 'image/png'],
      ['anim.gif', 'image/gif'],
    ]);
    expect(mail.attachments[0].content.equals(PNG)).toBe(true);
  });

  it('opens a ticket from JSON without attachments', async () => {
    const { team, agent } = await member();
    const res = await agent.post(`/teams/${team.id}/tickets`, {
      ...fields,
      subject: 'Billing question',
      category: 'billing',
    });
    expect(res.status).toBe(201);
    expect(res.body.attachments).toEqual([]);
    await t.smtp!.waitFor((m) => m.subject.includes('Billing question'));
  });

  it('refuses a non-image renamed .png with 422 naming the part, and keeps nothing', async () => {
    const { team, agent } = await member();
    const res = await agent.request('POST', `/teams/${team.id}/tickets`, {
      rawBody: form(fields, [
        { name: 'ok.png', bytes: PNG },
        { name: 'evil.png', bytes: Buffer.from('#!/bin/sh\necho hi\n') },
      ]),
    });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toEqual({ 'attachments[1]': 'evil.png is not a PNG, JPEG, GIF or WebP image' });
    expect(await Ticket.query(t.deps.knex).where({ team_id: team.id })).toEqual([]);
  });

  it('refuses too many or too large attachments with 413 naming the part', async () => {
    const { team, agent } = await member();
    const six = Array.from({ length: 6 }, (_, i) => ({ name: `s${i}.png`, bytes: PNG }));
    const many = await agent.request('POST', `/teams/${team.id}/tickets`, { rawBody: form(fields, six) });
    expect(many.status).toBe(413);
    expect(Object.keys(many.body.error.fields)).toEqual(['attachments[5]']);
    const big = Buffer.concat([PNG, Buffer.alloc(5 * 1024 * 1024)]);
    const large = await agent.request('POST', `/teams/${team.id}/tickets`, {
      rawBody: form(fields, [
        { name: 'a.png', bytes: PNG },
        { name: 'big.png', bytes: big },
      ]),
    });
    expect(large.status).toBe(413);
    expect(Object.keys(large.body.error.fields)).toEqual(['attachments[1]']);
    expect(await Ticket.query(t.deps.knex).where({ team_id: team.id })).toEqual([]);
  });

  it('names missing or invalid fields, in JSON and in multipart alike', async () => {
    const { team, agent } = await member();
    const json = await agent.post(`/teams/${team.id}/tickets`, { subject: '', category: 'rant' });
    expect(json.status).toBe(422);
    expect(Object.keys(json.body.error.fields).sort()).toEqual(['body', 'category', 'subject']);
    const multi = await agent.request('POST', `/teams/${team.id}/tickets`, {
      rawBody: form({ subject: 'x', category: 'deploys' }, []),
    });
    expect(multi.status).toBe(422);
    expect(Object.keys(multi.body.error.fields)).toEqual(['body']);
  });

  it('is refused to a viewer (403) and to another team (404)', async () => {
    const { team, agent } = await member('viewer');
    expect((await agent.post(`/teams/${team.id}/tickets`, fields)).status).toBe(403);
    const other = await member();
    expect((await other.agent.post(`/teams/${team.id}/tickets`, fields)).status).toBe(404);
  });
});

describe('POST /tickets/{id}/replies, GET /tickets/{id} and GET /teams/{id}/tickets', () => {
  it('replies, resolves, and reads the ticket and the list', async () => {
    const { team, agent } = await member();
    const created = await agent.post(`/teams/${team.id}/tickets`, {
      ...fields,
      subject: 'Domain will not verify',
      category: 'domains',
    });
    const reply = await agent.post(`/tickets/${created.body.id}/replies`, {
      body: 'Fixed it: the CNAME was wrong.',
      resolved: true,
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ body: 'Fixed it: the CNAME was wrong.', resolved: true });
    await t.smtp!.waitFor(
      (m) => m.subject.startsWith('Re: ') && m.subject.includes('Domain will not verify (resolved)'),
    );
    const one = await agent.get(`/tickets/${created.body.id}`);
    expect(one.body).toMatchObject({ status: 'resolved', replies: [expect.objectContaining({ resolved: true })] });
    expect(one.body.resolved_at).not.toBeNull();
    const list = await agent.get(`/teams/${team.id}/tickets`);
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(created.body.id);
  });

  it("answers 404 to a reply to another team's ticket, and stores nothing", async () => {
    const a = await member();
    const ticket = await a.agent.post(`/teams/${a.team.id}/tickets`, fields);
    const b = await member();
    expect((await b.agent.post(`/tickets/${ticket.body.id}/replies`, { body: 'hi' })).status).toBe(404);
    expect((await b.agent.get(`/tickets/${ticket.body.id}`)).status).toBe(404);
    expect((await a.agent.get(`/tickets/${ticket.body.id}`)).body.replies).toEqual([]);
  });
});
