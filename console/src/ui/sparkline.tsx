/**
 * A small line of a resource series as inline SVG (the overview's usage: uPlot stays on the Resources page,
 * so the first load does not fetch it). Named for screen readers by its latest and highest values.
 */
export function Sparkline(props: { label: string; unit: string; points: { at: string; value: number }[] }) {
  const { label, unit, points } = props;
  if (points.length === 0) return <p class="muted">No samples in the last hour yet.</p>;
  const w = 240;
  const h = 48;
  const values = points.map((p) => p.value);
  const max = Math.max(...values, 1e-9);
  const xs = points.map((p) => Date.parse(p.at));
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const line = points
    .map((p, i) => {
      const x = x1 > x0 ? ((xs[i] - x0) / (x1 - x0)) * w : w;
      const y = h - 2 - (p.value / max) * (h - 4);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
  const round = (n: number) => Math.round(n * 10) / 10;
  const summary = `${label}: now ${round(values.at(-1)!)}${unit}, highest ${round(max)}${unit}`;
  return (
    <figure class="spark">
      <svg viewBox={`0 0 ${w} ${h}`} width="100%" height={h} role="img" aria-label={summary} preserveAspectRatio="none">
        <polyline points={line} fill="none" stroke="currentColor" stroke-width="2" vector-effect="non-scaling-stroke" />
      </svg>
      <figcaption class="muted">{summary}</figcaption>
    </figure>
  );
}
