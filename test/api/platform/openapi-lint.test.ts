// The OpenAPI document clients generate from passes Spectral's spectral:oas rules (.spectral.yaml) with no
// finding at all, warnings included: every tag declared and described, every operation described, a contact.
import { describe, expect, it } from 'vitest';
import { lintOpenApi, openApiDocument } from '../../../scripts/openapi-lint';

type Doc = ReturnType<typeof openApiDocument>;

describe('the OpenAPI document under Spectral', () => {
  it('has no finding', () => {
    const { status, findings } = lintOpenApi();
    expect(findings.map((f) => `${f.code} ${f.path.join('.')}: ${f.message}`)).toEqual([]);
    expect(status).toBe(0);
  }, 120_000);

  it('every tag a route uses is declared at the top with a description, and the document names a contact', () => {
    const doc = openApiDocument();
    const used = new Set<string>();
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops) as Array<{ tags: string[]; description?: string }>) {
        for (const t of op.tags) used.add(t);
        expect(op.description?.trim()).toBeTruthy();
      }
    }
    expect(new Set(doc.tags.map((t) => t.name))).toEqual(used);
    for (const t of doc.tags) expect('description' in t && t.description).toBeTruthy();
    expect(doc.info.contact.url).toMatch(/\/api\/vc\/v1\/docs$/);
  });

  it('fails a document that lost a description, an undeclared tag or its contact', () => {
    const doc: Doc = structuredClone(openApiDocument());
    const op = (doc.paths['/me'] as Record<string, { description?: string; tags: string[] }>).get;
    delete op.description;
    op.tags = ['undeclared'];
    delete (doc.info as { contact?: unknown }).contact;
    const { status, findings } = lintOpenApi(doc);
    expect(status).not.toBe(0);
    expect(new Set(findings.map((f) => f.code))).toEqual(
      new Set(['operation-description', 'operation-tag-defined', 'info-contact']),
    );
  }, 120_000);
});
