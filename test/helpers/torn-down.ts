/** The data directories of this process's test contexts set up and not yet torn down (test/helpers/context.ts). */
export const notTornDown = new Set<string>();
