import { PEOPLE_ROLES, type PeopleRole } from '../config/hub-config.js';

/**
 * The role a people-API route needs. A route that says nothing is safe by default: reading (GET,
 * HEAD) needs a viewer, anything that changes state needs an admin, so a new controller is never
 * more open than its author meant.
 */
export function requiredRole(method: string, declared: PeopleRole | undefined): PeopleRole {
  if (declared) return declared;
  const m = method.toUpperCase();
  return m === 'GET' || m === 'HEAD' ? 'viewer' : 'admin';
}

/** Roles are ordered: an admin may do what an operator may, who may do what a viewer may. */
export function roleAllows(have: PeopleRole, need: PeopleRole): boolean {
  return PEOPLE_ROLES.indexOf(have) >= PEOPLE_ROLES.indexOf(need);
}

/** The highest role any of `groups` maps to, or null when none maps to a role. */
export function highestMappedRole(
  groups: readonly string[],
  roleMap: Readonly<Record<string, PeopleRole>>,
): PeopleRole | null {
  let best: PeopleRole | null = null;
  for (const g of groups) {
    const role = Object.hasOwn(roleMap, g) ? roleMap[g] : undefined;
    if (role && (best === null || roleAllows(role, best))) best = role;
  }
  return best;
}

export function isPeopleRole(value: unknown): value is PeopleRole {
  return typeof value === 'string' && (PEOPLE_ROLES as readonly string[]).includes(value);
}
