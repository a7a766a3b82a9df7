/** Binds a sealed registry password to its project and host (api/registries, activities/deploys/registry-auth). */
export const registryAad = (projectId: string, host: string) => `registry:${projectId}:${host}`;
