/** One line of a pasted .env as the API parsed it (POST /variables/parse), against what is set already. */
export interface ParsedLine {
  name: string;
  value: string;
  line: number;
}

export interface ExistingVariable {
  name: string;
  value: string | null;
  secret: boolean;
  updated_at?: string;
  source?: string;
}

export type PreviewAction = 'add' | 'replace' | 'keep' | 'unchanged' | 'repeated';

export interface PreviewRow extends ParsedLine {
  action: PreviewAction;
  /** What the row says will happen, for people. */
  note: string;
}

/**
 * What "Import" will do with each parsed line: a new name is added; a name set already is replaced only
 * with "overwrite" (else kept); the same value is unchanged (unknowable for a secret: it is write-only);
 * a name given again later in the text wins over its earlier line.
 */
export function previewImport(parsed: ParsedLine[], existing: ExistingVariable[], overwrite: boolean): PreviewRow[] {
  const current = new Map(
    existing.filter((v) => v.source === undefined || v.source === 'environment').map((v) => [v.name, v]),
  );
  const lastLine = new Map<string, number>();
  for (const p of parsed) lastLine.set(p.name, p.line);
  return parsed.map((p) => {
    if (lastLine.get(p.name) !== p.line)
      return { ...p, action: 'repeated', note: `Given again on line ${lastLine.get(p.name)}, which wins` };
    const was = current.get(p.name);
    if (!was) return { ...p, action: 'add', note: 'New variable' };
    if (!was.secret && was.value === p.value) return { ...p, action: 'unchanged', note: 'Same value as now' };
    if (!overwrite) return { ...p, action: 'keep', note: 'Set already: kept (tick "Overwrite" to replace)' };
    return { ...p, action: 'replace', note: was.secret ? 'Replaces a secret value' : `Replaces "${was.value}"` };
  });
}
