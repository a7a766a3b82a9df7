/**
 * The files of a multipart ticket: `attachments[]` only, each an image by its content (file-type sniffs
 * the bytes; the name and the claimed type are not trusted), within the count and size limits.
 * 413 names the part that is too large or one too many; 422 names a part that is not an image.
 */
import { readFile } from 'node:fs/promises';
import { fileTypeFromBuffer } from 'file-type';
import { appError, errors } from '../../core/errors';
import { ATTACHMENT_LIMITS, ATTACHMENT_TYPES } from './schemas';
import { inPartOrder } from '../lib/multipart';

export interface UploadedFile {
  filepath: string;
  originalFilename?: string | null;
  size: number;
}

export interface CheckedAttachment {
  name: string;
  type: string;
  bytes: number;
  content: Buffer;
}

const FIELD = 'attachments[]';

export async function checkAttachments(
  files: Record<string, UploadedFile | UploadedFile[]> | undefined,
): Promise<CheckedAttachment[]> {
  if (!files) return [];
  const unknown = Object.keys(files).filter((k) => k !== FIELD);
  if (unknown.length)
    throw errors.invalid(Object.fromEntries(unknown.map((k) => [k, `unknown file field; send files as ${FIELD}`])));
  const list = inPartOrder(([] as UploadedFile[]).concat(files[FIELD] ?? []));
  if (list.length > ATTACHMENT_LIMITS.maxFiles) {
    throw appError('payload_too_large', `At most ${ATTACHMENT_LIMITS.maxFiles} attachments`, {
      fields: {
        [`attachments[${ATTACHMENT_LIMITS.maxFiles}]`]: `one too many: at most ${ATTACHMENT_LIMITS.maxFiles} files`,
      },
    });
  }
  const tooLarge: Record<string, string> = {};
  list.forEach((f, i) => {
    if (f.size > ATTACHMENT_LIMITS.maxFileBytes)
      tooLarge[`attachments[${i}]`] =
        `${f.originalFilename ?? 'the file'} is larger than ${ATTACHMENT_LIMITS.maxFileBytes} bytes`;
  });
  if (Object.keys(tooLarge).length)
    throw appError('payload_too_large', 'An attachment is too large', { fields: tooLarge });
  const checked: CheckedAttachment[] = [];
  const notImages: Record<string, string> = {};
  for (const [i, f] of list.entries()) {
    const content = await readFile(f.filepath);
    const sniffed = await fileTypeFromBuffer(content);
    if (!sniffed || !(ATTACHMENT_TYPES as readonly string[]).includes(sniffed.mime)) {
      notImages[`attachments[${i}]`] = `${f.originalFilename ?? 'the file'} is not a PNG, JPEG, GIF or WebP image`;
      continue;
    }
    const name =
      (f.originalFilename ?? `attachment-${i + 1}`).replace(/[\u0000-\u001f\u007f/\\]/g, '_').slice(0, 200) ||
      `attachment-${i + 1}`;
    checked.push({ name, type: sniffed.mime, bytes: content.length, content });
  }
  if (Object.keys(notImages).length) throw errors.invalid(notImages, 'Attachments must be images');
  return checked;
}
