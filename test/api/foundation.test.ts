import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';

const t = useTestContext();

describe('API foundations', () => {
  it('serves the OpenAPI 3.1 document generated from the route table', async () => {
    const res = await t.agent().get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/openapi.json'].get.operationId).toBe('getOpenApiDocument');
  });

  it('serves a docs page for people', async () => {
    const res = await t.agent().get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.text).toContain('getOpenApiDocument');
  });

  it('answers unknown routes with a JSON 404 and a request id', async () => {
    const res = await t.agent().get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps a sane caller request id', async () => {
    const res = await t.agent().get('/health', { headers: { 'x-request-id': 'ci-run-12345' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('ci-run-12345');
  });
});
