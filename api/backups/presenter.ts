import type { Backup } from '../../db/models/backup';
import type { BackupWindow } from '../../db/models/backup-window';
import { iso, isoOrNull } from '../../core/time';
import type { DestinationRecord } from './destinations-service';
import { SECRET_FIELDS } from './destinations-service';

const DEFAULT_WINDOW = { hour_utc: 3, retention_days: 7 };

/** A snapshot (CONTRACT "Backups"). */
export function presentBackup(row: Backup) {
  return {
    id: row.id,
    status: row.status,
    trigger: row.trigger,
    created_at: iso(row.created_at),
    finished_at: isoOrNull(row.finished_at),
    size_bytes: row.size_bytes === null ? null : Number(row.size_bytes),
    sha256: row.sha256,
    destination_id: row.destination_id,
    contents: row.contents as Array<'database' | 'files'>,
    key_fingerprint: row.key_fingerprint,
    task_id: row.task_id,
    error: row.error,
    verified_at: isoOrNull(row.verified_at),
    verify_error: row.verify_error,
  };
}

/** A project's backup window; the default one when none was set. */
export function presentWindow({ window: w }: { window: BackupWindow | undefined }) {
  return w
    ? { hour_utc: w.hour_utc, retention_days: w.retention_days, destination_id: w.destination_id, default: false }
    : { ...DEFAULT_WINDOW, destination_id: null, default: true };
}

/** A destination: its settings without secrets (only which secret fields are set), its usage, and its refusal. */
export function presentDestination({ row, snapshots, used_bytes, refusal }: DestinationRecord) {
  return {
    id: row.id,
    team_id: row.team_id,
    name: row.name,
    kind: row.kind,
    settings: row.settings,
    secret_fields: row.secrets_sealed ? [...SECRET_FIELDS] : [],
    snapshots,
    used_bytes,
    last_error: refusal,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
