// Shared building blocks for e-mail: one HTML layout, and a small block model that
// renders the same content as a plain text part (which must read well on its own) and as HTML.

import { escapeHtml } from '../html';

export const PRODUCT_NAME = 'Hosting Console';

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

/** HTML that is already safe; only `html` and `layout` make these. */
class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type HtmlValue = SafeHtml | string | number | null | undefined | HtmlValue[];

function toHtml(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(toHtml).join('');
  if (value === null || value === undefined) return '';
  return escapeHtml(value);
}

/** Tagged template: every interpolation is escaped unless it is SafeHtml (or an array of them). */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0];
  values.forEach((value, i) => {
    out += toHtml(value) + strings[i + 1];
  });
  return new SafeHtml(out);
}

// ---------------------------------------------------------------------------------------------
// Content model

/** A run of text inside a paragraph: plain, emphasised, or a link. */
type Inline = string | { strong: string } | { link: string; label?: string };

export type Block =
  | { kind: 'p'; content: Inline[] }
  /** A value to copy, shown prominently; in text it is the single line `label: value`. */
  | { kind: 'code'; label: string; value: string }
  /** The main call to action; in text it is `label:` followed by the URL on its own line. */
  | { kind: 'button'; label: string; url: string }
  | { kind: 'steps'; items: Inline[][] }
  /** A command or request to type, monospaced. */
  | { kind: 'command'; text: string };

interface EmailContent {
  subject: string;
  /** The short summary mail clients show after the subject. */
  preheader: string;
  greeting: string;
  blocks: Block[];
  /** Why the person got this message; shown small at the end. */
  footer: string;
}

export const p = (...content: Inline[]): Block => ({ kind: 'p', content });
export const strong = (text: string): Inline => ({ strong: text });

// ---------------------------------------------------------------------------------------------
// Plain text

function inlineText(parts: Inline[]): string {
  return parts
    .map((part) => {
      if (typeof part === 'string') return part;
      if ('strong' in part) return part.strong;
      return part.label && part.label !== part.link ? `${part.label} (${part.link})` : part.link;
    })
    .join('');
}

function blockText(block: Block): string {
  switch (block.kind) {
    case 'p':
      return inlineText(block.content);
    case 'code':
      return `${block.label}: ${block.value}`;
    case 'button':
      return `${block.label}:\n${block.url}`;
    case 'steps':
      return block.items.map((item, i) => `${i + 1}. ${inlineText(item)}`).join('\n');
    case 'command':
      return block.text
        .split('\n')
        .map((line) => `    ${line}`)
        .join('\n');
  }
}

function renderText(content: EmailContent): string {
  const parts = [content.greeting, ...content.blocks.map(blockText), `— ${PRODUCT_NAME}`];
  return `${parts.join('\n\n')}\n\n--\n${content.footer}\n`;
}

// ---------------------------------------------------------------------------------------------
// HTML

const FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
const MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace";
const P_STYLE = 'margin:0 0 16px;font-size:15px;line-height:1.55;color:#1f2328;';

function inlineHtml(parts: Inline[]): SafeHtml {
  return html`${parts.map((part) => {
    if (typeof part === 'string') return html`${part}`;
    if ('strong' in part) return html`<strong>${part.strong}</strong>`;
    return html`<a href="${part.link}" style="color:#0969da;">${part.label ?? part.link}</a>`;
  })}`;
}

function blockHtml(block: Block): SafeHtml {
  switch (block.kind) {
    case 'p':
      return html`<p style="${P_STYLE}">${inlineHtml(block.content)}</p>`;
    case 'code':
      return html`<p style="${P_STYLE}">${block.label}:</p>
<p style="margin:0 0 20px;"><span style="display:inline-block;padding:10px 18px;border-radius:6px;background:#f6f8fa;border:1px solid #d0d7de;font-family:${MONO};font-size:24px;letter-spacing:3px;color:#1f2328;">${block.value}</span></p>`;
    case 'button':
      return html`<p style="margin:0 0 20px;"><a href="${block.url}" style="display:inline-block;padding:10px 18px;border-radius:6px;background:#1f6feb;color:#ffffff;font-size:15px;font-weight:600;text-decoration:none;">${block.label}</a></p>`;
    case 'steps':
      return html`<ol style="margin:0 0 16px;padding-left:22px;font-size:15px;line-height:1.55;color:#1f2328;">${block.items.map(
        (item) => html`<li style="margin:0 0 6px;">${inlineHtml(item)}</li>`,
      )}</ol>`;
    case 'command':
      return html`<pre style="margin:0 0 16px;padding:10px 12px;border-radius:6px;background:#f6f8fa;border:1px solid #d0d7de;font-family:${MONO};font-size:13px;white-space:pre-wrap;word-break:break-all;color:#1f2328;">${block.text}</pre>`;
  }
}

/** The one HTML frame every message uses. `content` is already-safe HTML; the rest is escaped. */
export function layout(opts: { title: string; preheader: string; content: SafeHtml; footer: string }): string {
  return html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${opts.title}</title>
</head>
<body style="margin:0;padding:0;background:#f6f8fa;font-family:${FONT};">
<div style="display:none;max-height:0;overflow:hidden;opacity:0;">${opts.preheader}</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f6f8fa;">
<tr><td align="center" style="padding:24px 12px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="max-width:560px;background:#ffffff;border:1px solid #d0d7de;border-radius:8px;">
<tr><td style="padding:20px 28px 0;font-size:14px;font-weight:600;color:#57606a;">${PRODUCT_NAME}</td></tr>
<tr><td style="padding:16px 28px 8px;">
${opts.content}
</td></tr>
</table>
<p style="max-width:560px;margin:16px auto 0;font-size:12px;line-height:1.5;color:#6e7781;">${opts.footer}</p>
</td></tr>
</table>
</body>
</html>
`.value;
}

export function renderEmail(content: EmailContent): RenderedEmail {
  const body = html`<p style="${P_STYLE}">${content.greeting}</p>
${content.blocks.map((block) => html`${blockHtml(block)}\n`)}<p style="${P_STYLE}">— ${PRODUCT_NAME}</p>`;
  return {
    subject: content.subject,
    text: renderText(content),
    html: layout({ title: content.subject, preheader: content.preheader, content: body, footer: content.footer }),
  };
}

// ---------------------------------------------------------------------------------------------
// Small formatting helpers

/** `https://x.test///` -> `https://x.test` */
export function trimBaseUrl(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/** `{ date: '2025-03-04', time: '09:30 UTC' }` */
export function formatUtc(at: Date): { date: string; time: string } {
  const iso = at.toISOString();
  return { date: iso.slice(0, 10), time: `${iso.slice(11, 16)} UTC` };
}

/** Whole calendar days (UTC) from `now` to `at`: 0 is the same day, 1 tomorrow, negative in the past. */
export function calendarDaysUntil(at: Date, now: Date): number {
  const day = (d: Date) => Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return Math.round((day(at) - day(now)) / 86_400_000);
}
