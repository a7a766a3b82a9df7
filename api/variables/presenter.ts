import type { EffectiveVariable } from '../../db/queries/variables';
import { iso } from '../../core/time';

/** A variable as answers show it: a secret's value is null, always. */
export function presentVariable(row: { name: string; secret: boolean; updated_at: Date; value: string }) {
  return { name: row.name, value: row.secret ? null : row.value, secret: row.secret, updated_at: iso(row.updated_at) };
}

/** An entry of an environment's effective set, with where its value comes from. */
export function presentEffective(v: EffectiveVariable) {
  return { ...presentVariable(v), source: v.source };
}
