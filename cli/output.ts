import yoctoSpinner, { type Spinner } from 'yocto-spinner';

/**
 * What the client prints: results on stdout (tables for people, the API's JSON with --json and
 * nothing else), everything else (progress, notices, errors) on stderr. Colours and the spinner only
 * on a terminal, never with NO_COLOR or TERM=dumb.
 */

const env = process.env;

function colourOn(stream: NodeJS.WriteStream): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== 'dumb';
}

const paint =
  (code: number) =>
  (text: string, stream: NodeJS.WriteStream = process.stdout) =>
    colourOn(stream) ? `\u001b[${code}m${text}\u001b[0m` : text;

export const bold = paint(1);
const dim = paint(2);
export const red = paint(31);
const green = paint(32);
const yellow = paint(33);

export function out(line = ''): void {
  process.stdout.write(line + '\n');
}

export function note(line: string): void {
  process.stderr.write(line + '\n');
}

export function printJson(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

const STATUS_COLOURS: Record<string, (t: string, stream?: NodeJS.WriteStream) => string> = {
  succeeded: green,
  failed: red,
  cancelled: yellow,
  running: bold,
};

/** A task status, coloured when the stream it goes to shows colours. */
export const status = (s: string, stream: NodeJS.WriteStream = process.stdout) => STATUS_COLOURS[s]?.(s, stream) ?? s;

/** Plain columns, a header in capitals; an empty list says so on stderr. */
type Cell = string | number | boolean | null | undefined;

export function table(columns: string[], rows: Cell[][], empty = 'Nothing to show'): void {
  if (rows.length === 0) {
    note(empty);
    return;
  }
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))));
  // Widths from the text people see (colour codes take no room).
  const visible = (s: string) => s.replace(/\u001b\[\d+m/g, '').length;
  const widths = columns.map((h, i) => Math.max(h.length, ...cells.map((r) => visible(r[i] ?? ''))));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i] - visible(c))))
      .join('  ')
      .trimEnd();
  out(bold(line(columns.map((c) => c.toUpperCase()))));
  for (const r of cells) out(line(r));
}

/** Key: value lines for one record. */
export function details(pairs: [string, string | number | boolean | null | undefined][]): void {
  const width = Math.max(...pairs.map(([k]) => k.length));
  for (const [k, v] of pairs)
    out(`${dim(`${k}:`.padEnd(width + 1))} ${v === null || v === undefined || v === '' ? '-' : v}`);
}

/**
 * Progress of something the client waits for: a spinner with the text on a terminal, otherwise a
 * plain line on stderr each time the text changes.
 */
export class Progress {
  private spinner?: Spinner;
  private last = '';

  constructor(private readonly enabled = true) {}

  update(text: string): void {
    if (!this.enabled || text === this.last) return;
    this.last = text;
    if (process.stderr.isTTY && env.TERM !== 'dumb') {
      // On Ctrl-C the spinner shows the cursor again before the process ends (handleSignals).
      if (!this.spinner) this.spinner = yoctoSpinner({ text, stream: process.stderr }).start();
      else this.spinner.text = text;
    } else {
      note(text);
    }
  }

  stop(): void {
    this.spinner?.stop();
    this.spinner = undefined;
  }
}
