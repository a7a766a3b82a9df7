#!/usr/bin/env node
// Launcher of the `service` client (the package's `bin`). It loads tsx's module hooks in this process
// and imports the TypeScript entry point: no build step and no compiled copy that could drift from the
// source, one process (signals and exit codes are the client's own), and it works the same from a
// fresh clone after `npm install`, through `npx service`, `npm link` or `npm install -g` (tsx is a
// runtime dependency). The rest of the system runs its TypeScript the same way.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
await main(process.argv);
