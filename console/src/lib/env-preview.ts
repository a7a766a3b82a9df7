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

export type PreviewAction = 'add' | 'replace' | 'keep' | 'unchanged';

export interface PreviewRow extends ParsedLine {
  action: PreviewAction;
  /** What the row says will happen, for people. */
  note: string;
}

/**
 * What "Import" will do with each parsed line: a new name is added; a name set already is replaced only
 * with "overwrite" (else kept); the same value is unchanged (unknowable for a secret: it is write-only).
 * Variables that come from the project are not the environment's own: a line of the same name adds one.
 * (A name given twice is refused by the parse itself.)
 */
export function previewImport(parsed: ParsedLine[], existing: ExistingVariable[], overwrite: boolean): PreviewRow[] {
  const current = new Map(
    existing.filter((v) => v.source === undefined || v.source === 'environment').map((v) => [v.name, v]),
  );
  return parsed.map((p) => {
    const was = current.get(p.name);
    if (!was) return { ...p, action: 'add', note: 'New variable' };
    if (!was.secret && was.value === p.value) return { ...p, action: 'unchanged', note: 'Same value as now' };
    if (!overwrite) return { ...p, action: 'keep', note: 'Set already: kept (tick "Overwrite" to replace)' };
    return { ...p, action: 'replace', note: was.secret ? 'Replaces a secret value' : 'Replaces the value set now' };
  });
}

/** Names that look like they hold a secret: pre-checked as secret in the import's preview and in "Set a variable". */
export function looksSecret(name: string): boolean {
  return /SECRET|TOKEN|KEY|PASSWORD/i.test(name) || /_DSN$/i.test(name);
}
