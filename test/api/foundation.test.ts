import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createUser, sessionAgent } from '../helpers/fixtures';
import { freePort } from '../helpers/ports';
import { createKnex } from '../../db/knex';

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

describe('request bodies', () => {
  it('answers malformed JSON with 400 malformed_body', async () => {
    const res = await t.agent().request('POST', '/signup', {
      rawBody: '{"email": "a@b.test",',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('malformed_body');
  });

  it('answers an oversized body with 413 and creates nothing', async () => {
    const big = JSON.stringify({ email: 'big@example.test', password: 'x'.repeat(2 * 1024 * 1024), name: 'Big' });
    const res = await t
      .agent()
      .request('POST', '/signup', { rawBody: big, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    const users = await t.deps.knex('users').where({ email: 'big@example.test' });
    expect(users).toHaveLength(0);
  });

  it('answers a body that is not JSON with 415', async () => {
    const res = await t.agent().request('POST', '/signup', {
      rawBody: 'email=a@b.test',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('reports every failing field at once with 422 invalid', async () => {
    const res = await t
      .agent()
      .post('/signup', { email: 'not-an-address', password: 'short', name: 42, colour: 'blue' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid');
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['colour', 'email', 'name', 'password']);
    expect(res.body.error.fields.name).toBe('must be a string');
    expect(res.body.error.fields.colour).toBe('unknown field');
  });

  it('says a missing field is required', async () => {
    const res = await t.agent().post('/signup', { email: 'someone@example.test' });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toMatchObject({ password: 'is required', name: 'is required' });
  });

  it('answers a method the route does not have with a JSON 405 naming the allowed ones', async () => {
    const res = await t.agent().request('PUT', '/health');
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toContain('GET');
  });
});

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (validated against the specification schema)', async () => {
    const doc = (await t.agent().get('/openapi.json')).body;
    await expect(SwaggerParser.validate(doc)).resolves.toBeDefined();
  });

  it('documents every error answer with the error body', async () => {
    const doc = (await t.agent().get('/openapi.json')).body;
    type Answer = { content?: Record<string, { schema: unknown }> };
    type Operation = { responses: Record<string, Answer> };
    const errorAnswers = Object.values<Record<string, Operation>>(doc.paths).flatMap((ops) =>
      Object.values(ops).flatMap((op) =>
        Object.entries(op.responses)
          .filter(([status]) => Number(status) >= 400)
          .map(([, r]) => r),
      ),
    );
    expect(errorAnswers.length).toBeGreaterThan(50);
    for (const r of errorAnswers) expect(r.content?.['application/json']?.schema).toBeDefined();
  });
});

describe('a request while the database does not answer', () => {
  it('is 503 saying to try again shortly, not 500; with the database back the same request works', async () => {
    const user = await createUser(t);
    const agent = await sessionAgent(t, user);
    // a real pool whose server is not there: a port nothing listens on, a connection given up on after a second
    const away = createKnex(`postgres://postgres@127.0.0.1:${await freePort()}/nowhere`, { acquireTimeoutMs: 1_000 });
    const knex = t.deps.knex;
    t.deps.knex = away;
    try {
      const res = await agent.get('/teams');
      expect(res.status, res.text).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body.error).toMatchObject({
        code: 'unavailable',
        message: 'The database does not answer right now; try again shortly',
      });
    } finally {
      t.deps.knex = knex;
      await away.destroy();
    }
    expect((await agent.get('/teams')).status).toBe(200);
  });
});
