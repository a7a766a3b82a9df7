import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';

/**
 * With TRUST_PROXY_HOPS > 0 a proxy in front forwards every caller, so loopback says nothing of who asked:
 * without METRICS_TOKEN nobody gets the host's details, however the request looks.
 */
const t = useTestContext({ env: { TRUST_PROXY_HOPS: '1' } });

describe('/health and /metrics with TRUST_PROXY_HOPS=1, no METRICS_TOKEN', () => {
  it('gives a loopback caller statuses only, and no metrics, even with no forwarded header', async () => {
    const res = await t.agent().get('/health');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['components', 'hosts', 'status']);
    expect((await fetch(`${t.baseUrl}/metrics`)).status).toBe(403);
  });
});
