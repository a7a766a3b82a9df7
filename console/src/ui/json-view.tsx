/** A readable view of an answer's fields (for the sections that have no form of their own yet). */
export function JsonView({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span class="muted">—</span>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="muted">none</span>;
    return (
      <ul class="list">
        {value.map((v, i) => (
          <li key={i}>
            <JsonView value={v} />
          </li>
        ))}
      </ul>
    );
  }
  if (typeof value === 'object') {
    return (
      <dl>
        {Object.entries(value as Record<string, unknown>).map(([k, v]) => (
          <div key={k} class="row">
            <dt>{k.replace(/_/g, ' ').replace(/^./, (ch) => ch.toUpperCase())}</dt>
            <dd>
              <JsonView value={v} />
            </dd>
          </div>
        ))}
      </dl>
    );
  }
  return <span class="break">{String(value)}</span>;
}
