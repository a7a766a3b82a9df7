/**
 * A setup file (vitest.config.ts): it runs before each test file, also when a vitest worker runs several files in
 * one process (`isolate: false`). A file whose teardown did not run (its own afterAll threw, so vitest skipped the
 * context's) left its processes running: the edge's HAProxy and Varnish, a worker's children, answering on the
 * port range the next file of this process takes. They are stopped here, before that file starts.
 */
import { killProcessesMentioning } from './processes';
import { notTornDown } from './torn-down';

for (const dir of notTornDown) killProcessesMentioning(dir);
notTornDown.clear();
