import { type SyncWindow } from '@flotilla/contract';
import { globMatch } from './glob-match.js';

/** What a window is matched against: one application on one cluster, in one namespace. */
export interface WindowTarget {
  application: string;
  namespace: string;
  /** The cluster's name. */
  cluster: string;
  /** The cluster's API server URL, when known: Argo CD lets `clusters` globs match either. */
  clusterServer?: string;
  /** The project of the target's appset, for windows scoped to projects (see `windowsForTarget`). */
  project?: string;
}

/**
 * Argo CD's `SyncWindows.Matches`: a window applies when any populated selector list has a glob
 * that matches (OR), or with `andOperator` when every populated list does. A window with no
 * selectors applies to nothing. `clusters` globs match the cluster name or its server URL; an empty
 * one matches no cluster glob, not even `*`.
 */
export function windowMatches(window: SyncWindow, target: WindowTarget): boolean {
  const { applications, namespaces, clusters } = window;
  if (applications.length === 0 && namespaces.length === 0 && clusters.length === 0) return false;
  const app = applications.some((p) => globMatch(p, target.application));
  const server = target.clusterServer ?? '';
  const cluster = clusters.some(
    (p) => (target.cluster !== '' && globMatch(p, target.cluster)) || (server !== '' && globMatch(p, server)),
  );
  const namespace = namespaces.some((p) => globMatch(p, target.namespace));
  if (window.andOperator) {
    return (
      (applications.length === 0 || app) &&
      (clusters.length === 0 || cluster) &&
      (namespaces.length === 0 || namespace)
    );
  }
  return app || cluster || namespace;
}
