import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useLoad } from '../ui/hooks';
import { LoadState, Section } from '../ui/parts';

const WINDOWS = ['1h', '24h', '7d', '30d', '90d'] as const;
const TITLES = { cpu: 'CPU (% of one core)', memory: 'Memory (MB)', disk: 'Disk (MB)' };
type Window = (typeof WINDOWS)[number];

export function ResourcesPage({ id }: { id: string }) {
  const [win, setWin] = useState<Window>('1h');
  const data = useLoad(
    () => ok(api.GET('/environments/{id}/resources', { params: { path: { id }, query: { window: win } } })),
    [id, win],
  );
  return (
    <>
      <fieldset class="buttons plain">
        <legend>Window</legend>
        {WINDOWS.map((w) => (
          <button
            key={w}
            type="button"
            class={w === win ? '' : 'secondary'}
            aria-pressed={w === win}
            onClick={() => setWin(w)}
          >
            {w}
          </button>
        ))}
      </fieldset>
      <LoadState load={data} what="resources" />
      {data.data &&
        (['cpu', 'memory', 'disk'] as const).map((k) => (
          <Section key={k} title={TITLES[k]}>
            <Chart label={k} points={data.data!.series[k]} scale={k === 'cpu' ? 1 : 1 / (1024 * 1024)} />
          </Section>
        ))}
    </>
  );
}

/** One uPlot line chart (uPlot is loaded with the first chart, not with the console). */
function Chart(props: { label: string; points: { at: string; value: number }[]; scale: number }) {
  const { label, points, scale } = props;
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let chart: { destroy(): void; setSize(size: { width: number; height: number }): void } | undefined;
    // The chart follows its box's width (a phone turned, a window resized): uPlot draws at a fixed size.
    const follow = new ResizeObserver(() => {
      if (chart && box.current) chart.setSize({ width: Math.max(240, box.current.clientWidth), height: 180 });
    });
    let gone = false;
    void Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([{ default: UPlot }]) => {
      if (gone || !box.current) return;
      const width = Math.max(240, box.current.clientWidth);
      const xs = points.map((p) => Date.parse(p.at) / 1000);
      const fg = getComputedStyle(document.documentElement).getPropertyValue('--fg').trim() || '#111827';
      const ys = points.map((p) => Math.round(p.value * scale * 100) / 100);
      chart = new UPlot(
        {
          width,
          height: 180,
          series: [{}, { label, stroke: '#2563eb', width: 2 }],
          axes: [{ stroke: fg }, { size: 60, stroke: fg }],
          legend: { show: true },
        },
        [xs, ys],
        box.current,
      );
      follow.observe(box.current);
    });
    return () => {
      gone = true;
      follow.disconnect();
      chart?.destroy();
    };
  }, [label, points, scale]);
  if (points.length === 0) return <p class="muted">No samples in this window yet.</p>;
  return <div ref={box} class="chart" data-chart={label} />;
}
