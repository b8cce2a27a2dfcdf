import { SetMetadata } from '@nestjs/common';
import type { PeopleRole } from '../config/hub-config.js';

export const ROLES_KEY = 'flotilla:required-role';
export const PUBLIC_KEY = 'flotilla:public';

/**
 * The role a people-API route (or every route of a controller) needs, checked by PeopleAuthGuard.
 * Without it: GET/HEAD need viewer, everything else admin.
 */
export const Roles = (role: PeopleRole) => SetMetadata(ROLES_KEY, role);

/**
 * The route takes no people credential because something else authenticates it: the agent API
 * (agent credential), Git webhooks (HMAC of the body), health and metrics (nothing to protect).
 */
export const Public = () => SetMetadata(PUBLIC_KEY, true);
