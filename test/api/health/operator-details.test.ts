import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';

/**
 * /health tells everyone whether the console serves; the host's own details (its settings with their paths,
 * `npm start`'s processes with their pids) only its operator: with METRICS_TOKEN set, the bearer of that
 * token (as for /metrics); without, a loopback client (test/api/health/health.test.ts).
 */
const TOKEN = 'operator-token-of-this-test-0123456789';
const t = useTestContext({ env: { METRICS_TOKEN: TOKEN } });

describe('GET /health with METRICS_TOKEN set', () => {
  it('shows anyone the status and the components, and the settings and processes to the token only', async () => {
    const anyone = await t.agent().get('/health');
    expect(anyone.status).toBe(200);
    expect(Object.keys(anyone.body).sort()).toEqual(['components', 'hosts', 'status']);
    expect(anyone.body.components.database).toEqual({ status: 'ok' });

    // a wrong token is a credential that does not work, as anywhere
    const wrong = await t.agent().get('/health', { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);

    const operator = await t.agent().get('/health', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(operator.status).toBe(200);
    expect(Object.keys(operator.body).sort()).toEqual(['components', 'hosts', 'processes', 'settings', 'status']);
  });

  it('the token is no sign-in: a route that needs one still refuses it', async () => {
    const res = await t.agent().get('/me', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(401);
  });

  it('serves /metrics to the token only, even on loopback', async () => {
    expect((await fetch(`${t.baseUrl}/metrics`)).status).toBe(403);
    const res = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('vc_http_request_duration_seconds');
  });
});
