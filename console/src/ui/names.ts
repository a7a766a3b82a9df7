import { useEffect } from 'preact/hooks';

/** The console's name, as the API wrote it into index.html (CONSOLE_NAME); the default outside it. */
export function consoleName(): string {
  return document.querySelector('meta[name="console-name"]')?.getAttribute('content') || 'Hosting Console';
}

/**
 * The tab's title: the page's names, most specific first ("production · storefront"), else the console's
 * name; back to the console's name when the page goes.
 */
export function usePageTitle(...parts: (string | undefined | null)[]) {
  const title = parts.filter(Boolean).join(' · ');
  useEffect(() => {
    document.title = title || consoleName();
  }, [title]);
  useEffect(
    () => () => {
      document.title = consoleName();
    },
    [],
  );
}

/**
 * How long a task took, in words ("< 0.1 s", "0.6 s", "1 min 5 s"); undefined while it has not ended. Under 10 s to a tenth of
 * a second: most deploys without a build take well under one, and "0 s" read as if nothing had run.
 */
export function duration(start: string | null | undefined, end: string | null | undefined): string | undefined {
  if (!start || !end) return undefined;
  const ms = Math.max(0, Date.parse(end) - Date.parse(start));
  // a task that took under 50 ms ("0 s" when rounded) took less than a tenth of a second, not nothing
  if (ms < 50) return '< 0.1 s';
  if (ms < 9_950) return `${Number((ms / 1000).toFixed(1))} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A commit as people read it: its first 7 characters. */
export const shortSha = (sha: string) => sha.slice(0, 7);
