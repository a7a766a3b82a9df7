import { ActionForm } from './action-form';
import type { Action } from './hooks';
import { Field, Select } from './parts';

export interface ChoiceField {
  name: string;
  type?: string;
  required: boolean;
  secret: boolean;
  description?: string;
}

const label = (name: string) =>
  name
    .replace(/_/g, ' ')
    .replace(/\burl\b/g, 'URL')
    .replace(/^./, (c) => c.toUpperCase());

/** The inputs a GET of choices lays out (`fields` with name, required, secret): a labelled field each. */
export function ChoiceFields(props: {
  fields: ChoiceField[];
  values: Record<string, string>;
  onChange(values: Record<string, string>): void;
  error: unknown;
  prefix: string;
}) {
  return (
    <>
      {props.fields.map((f) => (
        <Field
          key={`${props.prefix}-${f.name}`}
          label={label(f.name)}
          name={f.name}
          type={f.secret ? 'password' : f.type === 'url' ? 'url' : 'text'}
          autocomplete="off"
          required={f.required}
          hint={f.description}
          value={props.values[f.name] ?? ''}
          onInput={(e) => props.onChange({ ...props.values, [f.name]: (e.target as HTMLInputElement).value })}
          error={props.error}
        />
      ))}
    </>
  );
}

/** The kinds of backup destination and repository host, in words. */
const KIND_WORDS: Record<string, string> = {
  local: 'A folder on this machine',
  s3: 'S3-compatible storage',
  ssh: 'SSH (a deploy key)',
  https: 'HTTPS (a token)',
};

/** A kind in words (the kind itself when it has none). */
export const kindWords = (kind: string) => KIND_WORDS[kind] ?? kind;

/** A form to add one of several kinds: the kind chosen, then that kind's fields, then `submit`. */
export function KindForm(props: {
  action: Action<[]>;
  kinds: { kind: string }[];
  kind: string;
  onKind(kind: string): void;
  fields: ChoiceField[];
  values: Record<string, string>;
  onChange(values: Record<string, string>): void;
  submit: string;
}) {
  const { action, kind } = props;
  return (
    <ActionForm action={action}>
      <Select
        label="Kind"
        name="kind"
        value={kind}
        onChange={(e) => props.onKind((e.target as HTMLSelectElement).value)}
        options={props.kinds.map((k) => ({ value: k.kind, label: kindWords(k.kind) }))}
        error={action.error}
      />
      <ChoiceFields
        fields={props.fields}
        values={props.values}
        onChange={props.onChange}
        error={action.error}
        prefix={kind}
      />
      <button type="submit" disabled={action.busy}>
        {props.submit}
      </button>
    </ActionForm>
  );
}
