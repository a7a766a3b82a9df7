/**
 * The `.env` reading of POST /variables/parse and the imports (CONTRACT "Variables"). Written here rather
 * than taken from the `dotenv` package because the contract needs what it does not give: the line each
 * value starts on, a refusal naming the line of any malformed line or repeated name (dotenv skips bad lines
 * silently and lets the last of a repeated name win), and exactly these quoting rules:
 * blank lines and `#` comments are skipped; `export NAME=value` is accepted; `'...'` is literal;
 * `"..."` may span lines and knows `\n`, `\"` and `\\`; an unquoted value ends at ` #`.
 */
import { checkVariableName, checkVariableValue } from './rules';

interface ParsedVariable {
  name: string;
  value: string;
  /** 1-based; a multi-line value has the line it starts on. */
  line: number;
}

type ParseResult = { ok: true; data: ParsedVariable[] } | { ok: false; line: number; reason: string };

const ASSIGNMENT = /^\s*(?:export\s+)?([^=\s#]+)\s*=(.*)$/;

/** After a closing quote only blanks or a ` #` comment may follow. */
function restIsComment(rest: string): boolean {
  return rest.trim() === '' || /^\s+#/.test(rest);
}

export function parseDotenv(text: string): ParseResult {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const data: ParsedVariable[] = [];
  const firstLine = new Map<string, number>();
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i];
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const m = ASSIGNMENT.exec(raw);
    if (!m) return { ok: false, line: lineNo, reason: 'is not NAME=value' };
    const name = m[1];
    const nameFault = checkVariableName(name);
    if (nameFault) return { ok: false, line: lineNo, reason: `${name} ${nameFault}` };
    const rest = m[2].replace(/^[ \t]+/, '');
    let value: string;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) return { ok: false, line: lineNo, reason: 'the single quote is not closed on this line' };
      if (!restIsComment(rest.slice(end + 1)))
        return { ok: false, line: lineNo, reason: 'unexpected text after the closing quote' };
      value = rest.slice(1, end);
    } else if (rest.startsWith('"')) {
      const read = readDoubleQuoted(lines, i, rest.slice(1));
      if (!read.ok) return { ok: false, line: lineNo, reason: read.reason };
      if (!restIsComment(read.after))
        return { ok: false, line: read.endLine + 1, reason: 'unexpected text after the closing quote' };
      value = read.value;
      i = read.endLine;
    } else {
      const hash = rest.search(/\s#/);
      value = (hash >= 0 ? rest.slice(0, hash) : rest).trim();
    }
    const valueFault = checkVariableValue(value);
    if (valueFault) return { ok: false, line: lineNo, reason: `the value of ${name} ${valueFault}` };
    const seen = firstLine.get(name);
    if (seen !== undefined)
      return { ok: false, line: lineNo, reason: `${name} is given twice (first on line ${seen})` };
    firstLine.set(name, lineNo);
    data.push({ name, value, line: lineNo });
  }
  return { ok: true, data };
}

/** Reads a `"..."` value from `first` (the text after the opening quote on line `start`) on, across lines. */
function readDoubleQuoted(
  lines: string[],
  start: number,
  first: string,
): { ok: true; value: string; endLine: number; after: string } | { ok: false; reason: string } {
  let out = '';
  let text = first;
  for (let ln = start; ln < lines.length; ln++) {
    if (ln > start) {
      out += '\n';
      text = lines[ln];
    }
    for (let j = 0; j < text.length; j++) {
      const c = text[j];
      if (c === '\\' && j + 1 < text.length) {
        const n = text[j + 1];
        if (n === 'n') out += '\n';
        else if (n === '"') out += '"';
        else if (n === '\\') out += '\\';
        else out += `\\${n}`;
        j++;
      } else if (c === '"') {
        return { ok: true, value: out, endLine: ln, after: text.slice(j + 1) };
      } else out += c;
    }
  }
  return { ok: false, reason: 'the double quote is never closed' };
}
