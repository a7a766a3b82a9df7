import pino from 'pino';

/** pino with secrets redacted wherever they could appear. */
export function createLogger(level: string, name: string) {
  return pino({
    name,
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-csrf-token"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.token',
        '*.access_token',
        '*.device_code',
        '*.code',
      ],
      censor: '[redacted]',
    },
  });
}
export type Logger = pino.Logger;
