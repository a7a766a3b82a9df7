import type { RouteDef } from '../lib/define-route';

export const routes: RouteDef[] = [];
