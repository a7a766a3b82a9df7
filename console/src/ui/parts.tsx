import type { ComponentChildren, JSX } from 'preact';
import { useId, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { fieldError } from './hooks';
import { RunningTask } from './running-task';

/** Shows a refusal: the API's message, the running task of a 409, when to retry after a 429. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    const fields = Object.keys(error.fields);
    return (
      <div class="error" role="alert">
        <p>{error.message}</p>
        {error.status === 409 && error.taskId && <RunningTask id={error.taskId} />}
        {error.status === 429 && (
          <p>
            Try again {error.retryAfter !== undefined ? `in ${formatWait(error.retryAfter)}` : 'in a little while'}.
          </p>
        )}
        {fields.length > 0 && (
          <p class="muted">
            {fields.length === 1 ? 'One field needs a change' : `${fields.length} fields need a change`}: see the marks
            below.
          </p>
        )}
      </div>
    );
  }
  return (
    <div class="error" role="alert">
      <p>{error instanceof Error ? error.message : String(error)}</p>
    </div>
  );
}

export function formatWait(seconds: number): string {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} seconds`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} minutes`;
  return `${Math.round(seconds / 3600)} hours`;
}

type InputProps = Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'label' | 'error'>;

/** A labelled input; the API's reason for refusing it shows beside it. */
export function Field(props: InputProps & { label: string; name: string; error?: unknown; hint?: string }) {
  const { label, error, hint, ...input } = props;
  const id = `f-${props.name}-${useId()}`;
  const reason = fieldError(error, props.name);
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        aria-invalid={reason ? true : undefined}
        aria-describedby={reason ? `${id}-e` : undefined}
        {...input}
      />
      {hint && <small class="muted">{hint}</small>}
      {reason && (
        <small id={`${id}-e`} class="field-error">
          {reason}
        </small>
      )}
    </div>
  );
}

export function Select(
  props: Omit<JSX.SelectHTMLAttributes<HTMLSelectElement>, 'label'> & {
    label: string;
    name: string;
    error?: unknown;
    options: { value: string; label: string }[];
  },
) {
  const { label, error, options, ...rest } = props;
  const id = `f-${props.name}-${useId()}`;
  const reason = fieldError(error, props.name);
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} aria-invalid={reason ? true : undefined} {...rest}>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      {reason && <small class="field-error">{reason}</small>}
    </div>
  );
}

export function Check(props: { label: string; name: string; checked: boolean; onChange(v: boolean): void }) {
  return (
    <label class="check">
      <input
        type="checkbox"
        name={props.name}
        checked={props.checked}
        onChange={(e) => props.onChange((e.target as HTMLInputElement).checked)}
      />{' '}
      {props.label}
    </label>
  );
}

/** Text put on the clipboard by a button; says when it is done. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => undefined);
        setDone(true);
        setTimeout(() => setDone(false), 2000);
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-busy="true">
      Loading {what}…
    </p>
  );
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  const id = `s-${useId()}`;
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** Sub-pages of a resource, as links (deep links of CONTRACT). */
export function Tabs({ base, tabs, current }: { base: string; tabs: [string, string][]; current: string }) {
  return (
    <nav class="tabs" aria-label="Sections">
      {tabs.map(([path, label]) => (
        <a key={path} href={base + path} aria-current={current === path ? 'page' : undefined}>
          {label}
        </a>
      ))}
    </nav>
  );
}

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—';
}

/** The label of a tab path among a resource's tabs ("backup-window" -> "Backup window"). */
export function tabTitle(tabs: [string, string][], tab: string): string {
  return tabs.find(([p]) => p === `/${tab}`)?.[1] ?? tab;
}

/** Every refused field whose name starts with `prefix` (`blocked_addresses.2`, `hsts.max_age`), beside it. */
export function FieldErrors({ error, prefix, exact }: { error: unknown; prefix: string; exact?: boolean }) {
  if (!(error instanceof ApiError)) return null;
  const hits = Object.entries(error.fields).filter(
    ([k]) => k === prefix || (!exact && (k.startsWith(`${prefix}.`) || k.startsWith(`${prefix}[`))),
  );
  if (hits.length === 0) return null;
  return (
    <ul class="field-error list" aria-label={`Refused: ${prefix}`}>
      {hits.map(([k, v]) => {
        const where = placeWords(k.slice(prefix.length));
        return (
          <li key={k}>
            {where && `${where}: `}
            {v}
          </li>
        );
      })}
    </ul>
  );
}

/** Where in a field a refusal points, in words: ".1" is "Line 2", ".0.email" is "Line 1, email"; "" is nothing. */
function placeWords(rest: string): string {
  const parts = rest.split(/[.[\]]+/).filter(Boolean);
  const words = parts.map((p) => (/^\d+$/.test(p) ? `line ${Number(p) + 1}` : p.replaceAll('_', ' '))).join(', ');
  return words && words[0].toUpperCase() + words.slice(1);
}

/** A labelled textarea. */
export function TextArea(props: {
  label: string;
  name: string;
  value: string;
  rows?: number;
  hint?: string;
  onInput(value: string): void;
  error?: unknown;
}) {
  const id = `t-${props.name}-${useId()}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <textarea
        id={id}
        name={props.name}
        rows={props.rows ?? 3}
        value={props.value}
        onInput={(e) => props.onInput((e.target as HTMLTextAreaElement).value)}
      />
      {props.hint && <small class="muted">{props.hint}</small>}
      <FieldErrors error={props.error} prefix={props.name} />
    </div>
  );
}

/** A load's state: "Loading …" until its first answer, then its refusal, if any. */
export function LoadState({
  load,
  what,
}: {
  load: { loading: boolean; data?: unknown; error?: unknown };
  what: string;
}) {
  return load.loading && !load.data ? <Loading what={what} /> : <ErrorNote error={load.error} />;
}
