import { DEFAULT_KEEP_DAYS } from '../../db/queries/log-settings';
import { isoOrNull } from '../../core/time';
import { displayUrl } from '../../system/display-url';
import type { LogSettingsRecord } from './service';

/** A project's log forwarding: an http URL without its userinfo and query values (a token there is a credential). */
export function presentProjectLogs({ row, destination: dest }: LogSettingsRecord) {
  return {
    destination: dest ? (dest.kind === 'http' ? { ...dest, url: displayUrl(dest.url) } : dest) : null,
    can_send: row?.can_send ?? false,
    last_sent_at: isoOrNull(row?.last_sent_at),
    last_error: row?.last_error ?? null,
    keep_days_on_machine: row?.keep_days_on_machine ?? DEFAULT_KEEP_DAYS,
  };
}
