/**
 * A setup file (vitest.config.ts): it runs before each test file, also when a vitest worker runs several files in
 * one process (`isolate: false`), and stops what an earlier file of this process left running when its teardown
 * did not run (test/helpers/torn-down.ts), before this file takes the same port range.
 */
import { stopLeftBehind } from './torn-down';

stopLeftBehind();
