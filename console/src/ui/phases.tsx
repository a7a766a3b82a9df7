/**
 * A deploy-like task's phases (GET /tasks/{id} `phases`) as a timeline: one row a phase, in order, with
 * when it ended after the task was asked for, how long it took after the phase before, and a bar of that
 * share of the whole.
 */
const LABELS: Record<string, string> = {
  queued: 'Queued',
  started: 'Started',
  build_done: 'Built',
  release_ready: 'Release ready',
  process_started: 'Process started',
  healthy: 'Healthy',
  edge_switched: 'Serving (edge switched)',
  old_stopped: 'Old process stopped',
};

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export function PhaseTimeline({ phases }: { phases: { name: string; at: string }[] }) {
  if (phases.length === 0) return null;
  const at = phases.map((p) => Date.parse(p.at));
  const total = Math.max(1, at.at(-1)! - at[0]);
  return (
    <ol class="phases" aria-label="Phases">
      {phases.map((p, i) => {
        const took = i === 0 ? 0 : at[i] - at[i - 1];
        return (
          <li key={p.name} data-phase={p.name}>
            <span class="phase-name">{LABELS[p.name] ?? p.name}</span>
            <span class="phase-bar" aria-hidden="true">
              <span
                style={{ marginLeft: `${((at[i] - at[0] - took) / total) * 100}%`, width: `${(took / total) * 100}%` }}
              />
            </span>
            <span class="phase-at">+{seconds(at[i] - at[0])}</span>
            <span class="phase-took">{i === 0 ? '' : `(${seconds(took)})`}</span>
          </li>
        );
      })}
    </ol>
  );
}
