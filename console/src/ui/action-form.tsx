import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { Action } from './hooks';
import { ErrorNote } from './parts';

/**
 * A form whose submit runs `action` (its refusal shown first, above the fields), or calls `onSubmit` (the
 * form then shows no refusal of its own: its children do). When the action is refused, focus goes to the
 * first field the API named, else to the refusal itself.
 */
export function ActionForm(
  props: { class?: string; children: ComponentChildren } & (
    | { action: Action<[]>; onSubmit?: never }
    | { action?: never; onSubmit(): unknown }
  ),
) {
  const { action } = props;
  const form = useRef<HTMLFormElement>(null);
  const error = action?.error;
  useEffect(() => {
    if (!error || !form.current) return;
    const first =
      form.current.querySelector<HTMLElement>('[aria-invalid="true"]') ??
      form.current.querySelector<HTMLElement>('[role="alert"]');
    if (first && !first.matches('input, select, textarea, button')) first.tabIndex = -1;
    first?.focus();
  }, [error]);
  return (
    <form
      ref={form}
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
