#!/usr/bin/env node
// Launcher of the `service` client (the package's `bin`). It imports the TypeScript entry point in this process
// from one esbuild bundle, made again whenever a source file in it changed (scripts/entry-bundles.mjs): no build
// step and no compiled copy that could drift from the source, one process (signals and exit codes are the
// client's own), and it works the same from a fresh clone after `npm install`, through `npx service`, `npm link`
// or `npm install -g`. Where no bundle can be made it runs the TypeScript through tsx (a runtime dependency).
import { checkoutRoot, importEntry } from '../scripts/entry-bundles.mjs';

const { main } = await importEntry(checkoutRoot, 'cli/main.ts');
await main(process.argv);
