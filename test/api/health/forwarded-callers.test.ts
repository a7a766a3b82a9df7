import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';

/**
 * Without METRICS_TOKEN, the host's details (/health's settings and processes, /metrics) go to a loopback
 * caller only when its request names no forwarded client: behind a reverse proxy on the same host every
 * caller is loopback, and the proxy says who really asked in X-Forwarded-For or Forwarded.
 */
const t = useTestContext();

describe('/health and /metrics to a loopback caller, TRUST_PROXY_HOPS 0, no METRICS_TOKEN', () => {
  it('shows the details to a loopback request that names no forwarded client', async () => {
    const res = await t.agent().get('/health');
    expect(Object.keys(res.body).sort()).toEqual(['components', 'hosts', 'processes', 'settings', 'status']);
    expect((await fetch(`${t.baseUrl}/metrics`)).status).toBe(200);
  });

  it.each([
    ['x-forwarded-for', '198.51.100.7'],
    ['forwarded', 'for=198.51.100.7;proto=https'],
  ])('gives statuses only, and no metrics, to a request with %s', async (name, value) => {
    const res = await t.agent().get('/health', { headers: { [name]: value } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['components', 'hosts', 'status']);
    const metrics = await fetch(`${t.baseUrl}/metrics`, { headers: { [name]: value } });
    expect(metrics.status).toBe(403);
  });
});
