/**
 * Secret variables never leave in shipped lines (CONTRACT "Variables": a secret value never appears in a
 * log): before a shipper writes the machine's copy or sends a batch, it reads the secret variables that
 * reach the lines' environments (the project's and each environment's own) and hides every value, and its
 * base64 forms, in every text field of a line, with the same redaction as task logs (system/redact.ts).
 * They are read again at each flush, so a value set just before a process started printing it is known;
 * a value that was changed or deleted is still hidden for a day (a running process may still hold it).
 */
import type { Knex } from 'knex';
import { openVariable, secretVariableRows } from '../db/queries/variables';
import { secretRedactor } from '../system/redact';
import type { Secrets } from '../system/secrets';

const KEEP_MS = 86_400_000;
/** Fields that the console writes itself (never a tenant's text). */
const OWN_FIELDS = new Set(['time', 'environment_id', 'type']);

export class LineRedactor {
  /** sealed text -> value, for the rows read last (a value is opened once). */
  private opened = new Map<string, string>();
  /** environment -> secret value -> when it was last among its variables */
  private readonly seen = new Map<string, Map<string, number>>();
  /** environment -> what hides its values (null: it has none, its lines go as they are) */
  private readonly redactors = new Map<string, ((text: string) => string) | null>();

  constructor(
    private readonly knex: Knex,
    private readonly secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>,
  ) {}

  /** Reads the secret values reaching these environments (environment id -> project id). */
  async load(environments: Map<string, string>): Promise<void> {
    if (environments.size === 0) return;
    const rows = await secretVariableRows(this.knex, [...new Set(environments.values())]);
    const opened = new Map<string, string>();
    for (const row of rows) {
      let value = this.opened.get(row.value_sealed);
      if (value === undefined) {
        try {
          value = openVariable(this.secrets, row);
        } catch {
          continue; // sealed under a key this process does not hold: no process can have got it either
        }
      }
      opened.set(row.value_sealed, value);
    }
    this.opened = opened;
    const now = Date.now();
    for (const [envId, projectId] of environments) {
      let values = this.seen.get(envId);
      if (!values) this.seen.set(envId, (values = new Map()));
      const before = new Set(values.keys());
      for (const row of rows) {
        if (row.project_id !== projectId || (row.environment_id !== null && row.environment_id !== envId)) continue;
        const value = opened.get(row.value_sealed);
        if (value !== undefined) values.set(value, now);
      }
      for (const [value, at] of values) if (now - at > KEEP_MS) values.delete(value);
      const same = before.size === values.size && [...values.keys()].every((v) => before.has(v));
      if (!same || !this.redactors.has(envId))
        this.redactors.set(envId, values.size ? secretRedactor(values.keys()) : null);
    }
  }

  /** Whether the environment's secret values were read (textRedactor's null means "none" only then). */
  loaded(envId: string): boolean {
    return this.redactors.has(envId);
  }

  /**
   * What hides every secret value of the environment in each text field of a line given as JSON text (the
   * shipper's lines), or null when it has none: its lines go as they are, never parsed.
   */
  textRedactor(envId: string): ((line: string) => string) | null {
    const hide = this.redactors.get(envId);
    if (!hide) return null;
    return (text) => {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text);
      } catch {
        return hide(text);
      }
      for (const key in line) {
        const value = line[key];
        if (typeof value === 'string' && !OWN_FIELDS.has(key)) line[key] = hide(value);
      }
      return JSON.stringify(line);
    };
  }
}
