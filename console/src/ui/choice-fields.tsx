import { Field } from './parts';

export interface ChoiceField {
  name: string;
  type?: string;
  required: boolean;
  secret: boolean;
  description?: string;
}

const label = (name: string) => name.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());

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
