/**
 * The one redaction of secret values in text that leaves the console: task logs (activities/deploys) and
 * shipped log lines (logs/). Each value is hidden as it is, line by line (a multi-line value printed
 * across lines), and in its base64 forms (standard, unpadded, base64url), since a process that prints a
 * credential often prints it encoded (an Authorization header, a config dump).
 */

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The strings that stand for a secret value in text. */
function secretForms(value: string): string[] {
  const forms = value.split('\n').filter((p) => p.length > 0);
  if (value.length >= 3) {
    const b64 = Buffer.from(value).toString('base64');
    forms.push(b64, b64.replace(/=+$/, ''), Buffer.from(value).toString('base64url'));
  }
  return forms;
}

/** A function that replaces every form of every value in a line by `mask`. */
export function secretRedactor(values: Iterable<string>, mask = '[secret]'): (line: string) => string {
  const forms = [...new Set([...values].flatMap(secretForms))].sort((a, b) => b.length - a.length);
  if (forms.length === 0) return (line) => line;
  const pattern = new RegExp(forms.map(escape).join('|'), 'g');
  return (line) => line.replace(pattern, mask);
}
