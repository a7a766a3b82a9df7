import { h } from 'preact';
import { render } from 'preact-render-to-string';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { looksSecret, previewImport } from '../../console/src/lib/env-preview';
import { formatDelta, formatMonthly } from '../../console/src/lib/price';
import { allowancePreview } from '../../console/src/lib/storage-price';
import { makeStorageRoots } from '../helpers/storage-roots';
import { EnvPreview } from '../../console/src/screens/variables';
import { PricePreview } from '../../console/src/ui/price-preview';

/**
 * The console's trickier pieces on the API's real answers: the .env preview (POST /variables/parse and the
 * environment's variables, then what Import will do with each line) and the price previews (GET .../scale).
 */
const t = useTestContext();

const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, '|')
    .replace(/\|+/g, '|')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

async function world() {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  const project = await createProject(t, team);
  const environment = await createEnvironment(t, project);
  // Its web server, as creating an environment through the API makes it.
  await t.deps.knex('servers').insert({
    team_id: team.id,
    project_id: project.id,
    environment_id: environment.id,
    role: 'web',
    name: `${environment.name}-web`,
    plan: 'small',
    cpu: 0.5,
    memory_mb: 512,
    disk_gb: 10,
  });
  return { agent: await sessionAgent(t, user), environment, project };
}

describe('the .env preview', () => {
  it("shows each parsed line with what Import does to it, against the environment's variables", async () => {
    const { agent, environment, project } = await world();
    const env = `/environments/${environment.id}`;
    expect((await agent.post(`${env}/variables`, { name: 'SAME', value: 'one' })).status).toBe(201);
    expect((await agent.post(`${env}/variables`, { name: 'OLD', value: 'before' })).status).toBe(201);
    expect((await agent.post(`${env}/variables`, { name: 'TOKEN', value: 's3cret', secret: true })).status).toBe(201);
    expect((await agent.post(`/projects/${project.id}/variables`, { name: 'SHARED', value: 'p' })).status).toBe(201);
    const parsed = await agent.post('/variables/parse', {
      text: '# pasted\nSAME=one\nOLD=after\n\nexport TOKEN="new"\nSHARED=mine\nNEW=\'x y\'\n',
    });
    expect(parsed.status).toBe(200);
    const existing = (await agent.get(`${env}/variables`)).body.data;

    const kept = previewImport(parsed.body.data, existing, false);
    expect(kept.map((r) => [r.line, r.name, r.value, r.action])).toEqual([
      [2, 'SAME', 'one', 'unchanged'],
      [3, 'OLD', 'after', 'keep'],
      [5, 'TOKEN', 'new', 'keep'],
      [6, 'SHARED', 'mine', 'add'],
      [7, 'NEW', 'x y', 'add'],
    ]);
    const replaced = previewImport(parsed.body.data, existing, true);
    expect(replaced.map((r) => r.note)).toEqual([
      'Same value as now',
      'Replaces the value set now',
      'Replaces a secret value',
      'New variable',
      'New variable',
    ]);
    // A secret's value is never in the list, so the preview cannot (and does not) show it.
    expect(JSON.stringify(existing)).not.toContain('s3cret');

    const html = render(h(EnvPreview, { rows: replaced }));
    // Values are masked in the table until shown; a name that looks secret is checked as secret, its value kept out.
    expect(text(html)).toContain('|3|OLD|••••••••| |Show|Replaces the value set now|');
    expect(text(html)).toContain('|7|NEW|••••••••| |Show|New variable|');
    expect(html).not.toContain('s3cret');
    expect(html).not.toContain('before');
    const names = replaced.map((r) => r.name);
    expect(names.filter(looksSecret)).toEqual(['TOKEN']);
    expect(
      ['API_SECRET', 'GITHUB_TOKEN', 'stripe_key', 'DB_PASSWORD', 'SENTRY_DSN', 'DSN_URL', 'COLOR'].filter(looksSecret),
    ).toEqual(['API_SECRET', 'GITHUB_TOKEN', 'stripe_key', 'DB_PASSWORD', 'SENTRY_DSN']);
    const withSecrets = render(h(EnvPreview, { rows: replaced, secrets: new Set(['TOKEN']) }));
    expect(text(withSecrets)).toContain('|5|TOKEN|kept secret|Replaces a secret value|TOKEN is |secret|');
    expect(withSecrets).not.toContain('"new"');
    expect(render(h(EnvPreview, { rows: [] }))).toContain('No variables in the text.');
  });
});

describe('the price previews', () => {
  it("states each scale choice's monthly price and its change to the bill, from GET .../scale", async () => {
    const { agent, environment } = await world();
    const scale = await agent.get(`/environments/${environment.id}/scale`);
    expect(scale.status).toBe(200);
    const { currency, choices, instances } = scale.body;
    const more = choices.find((c: { instances: number }) => c.instances === instances + 1);
    expect(more.monthly_price_delta).toBeGreaterThan(0);
    const html = render(
      h(PricePreview, {
        label: `${more.instances} instances`,
        monthly: more.monthly_price,
        delta: more.monthly_price_delta,
        currency,
      }),
    );
    const money = (n: number) => new Intl.NumberFormat('en', { style: 'currency', currency }).format(n);
    expect(text(html)).toContain(`${more.instances} instances|: ${money(more.monthly_price)} a month (`);
    expect(text(html)).toContain(`+${money(more.monthly_price_delta)} a month)`);
  });

  it('says a lower price, no change and no price plainly', () => {
    expect(formatDelta(-5, 'EUR')).toBe('−€5.00 a month');
    expect(formatDelta(0.001, 'EUR')).toBe('no change to the bill');
    expect(formatDelta(12.5, 'USD')).toBe('+$12.50 a month');
    expect(formatMonthly(null, 'EUR')).toBe('no price');
    expect(formatMonthly(30, 'EUR')).toBe('€30.00 a month');
  });

  it('tells what a new storage allowance costs, as the API then charges it (within and beyond the plan)', async () => {
    makeStorageRoots(t);
    const { agent, environment } = await world();
    const base = `/environments/${environment.id}/storage`;
    // Each step: the preview from the answers of the moment, then the API's price once it is set.
    for (const gb of [9, 13, 40, 38]) {
      const allowance = (await agent.get(`${base}/allowance`)).body;
      const files = (await agent.get(`${base}/files/disk`)).body;
      const grow = (await agent.get(`/volumes/${files.volume_id}/grow`)).body;
      const preview = allowancePreview(allowance, grow, gb);
      const set = await agent.post(`${base}/allowance`, { allowance_gb: gb });
      expect(set.status, set.text).toBe(200);
      expect(preview, `${gb} GB`).toEqual({
        monthly: set.body.monthly_price,
        delta: Math.round((set.body.monthly_price - allowance.monthly_price) * 100) / 100,
      });
    }
    // Within the plan nothing is paid; a known price of nothing beyond it cannot be read from one answer.
    expect(allowancePreview({ allowance_gb: 10, included_gb: 10, monthly_price: 0 }, undefined, 12)).toBeNull();
    expect(allowancePreview({ allowance_gb: 12, included_gb: 10, monthly_price: 1 }, undefined, 9)).toEqual({
      monthly: 0,
      delta: -1,
    });
  });
});
