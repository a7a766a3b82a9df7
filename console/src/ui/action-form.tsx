import type { ComponentChildren } from 'preact';
import type { Action } from './hooks';
import { ErrorNote } from './parts';

/**
 * A form whose submit runs `action` (its refusal shown first, above the fields), or calls `onSubmit` (the
 * form then shows no refusal of its own: its children do).
 */
export function ActionForm(
  props: { class?: string; children: ComponentChildren } & (
    | { action: Action<[]>; onSubmit?: never }
    | { action?: never; onSubmit(): unknown }
  ),
) {
  const { action } = props;
  return (
    <form
      class={props.class}
      onSubmit={(e) => {
        e.preventDefault();
        void (action ? action.run() : props.onSubmit?.());
      }}
    >
      {action && <ErrorNote error={action.error} />}
      {props.children}
    </form>
  );
}
