import { HubError } from '../common/hub-error.js';

/** One fleet source as configured: a repository, the revision to follow, the directory to read. */
export interface FleetSourceSetting {
  repoUrl: string;
  revision: string;
  path: string;
}

/**
 * FLEET_REPOSITORIES: comma-separated `<url>[#<revision>[:<path>]]`. A ':' cannot occur in a Git ref
 * name, so it safely separates the revision from the path.
 */
export function parseFleetRepositories(text: string): FleetSourceSetting[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((entry, i) => {
      const hash = entry.indexOf('#');
      const repoUrl = hash < 0 ? entry : entry.slice(0, hash);
      const rest = hash < 0 ? '' : entry.slice(hash + 1);
      const colon = rest.indexOf(':');
      const revision = (colon < 0 ? rest : rest.slice(0, colon)) || 'HEAD';
      const path = normaliseFleetPath(colon < 0 ? '' : rest.slice(colon + 1), `FLEET_REPOSITORIES[${i}]`);
      if (repoUrl === '')
        throw new HubError(
          400,
          'invalid-setting',
          `entry ${i} has no repository URL`,
          `FLEET_REPOSITORIES[${i}]`,
        );
      return { repoUrl, revision, path };
    });
}

/** A directory inside the repository: relative, '/'-separated, no '..'; '' is the root. */
export function normaliseFleetPath(path: string, at: string): string {
  const p = path
    .trim()
    .replace(/^\.?\/+/, '')
    .replace(/\/+$/, '');
  if (p.split('/').some((seg) => seg === '..'))
    throw new HubError(400, 'invalid-path', `path '${path}' leaves the repository ('..')`, at);
  return p === '.' ? '' : p;
}
