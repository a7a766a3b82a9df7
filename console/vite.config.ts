import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The console: Preact with esbuild's JSX transform (no Babel), built to console/dist; the API serves it.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
