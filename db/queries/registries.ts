/** Binds a sealed registry password to its project and host (api/registries, activities/deploys/registry-auth). */
