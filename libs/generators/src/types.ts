/** One cluster of the inventory, as the clusters generator sees it. */
export interface ClusterInfo {
  name: string;
  server: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Argo CD's cluster `project` (the `project` param); empty when unset. */
  project?: string;
}

/** The files of one revision of a repository; the caller reads git, the generators stay pure. */
export interface RepositoryFiles {
  /** Every file path of the revision, '/'-separated, relative to the repository root. */
  listFiles(): string[];
  /** The file's text; throws when the path does not exist. */
  readFile(path: string): string;
  /**
   * Every directory of the revision, '/'-separated (optional). Without it directories are derived
   * from the file paths, which is all a git tree holds; a checkout on disk may also hold empty ones.
   */
  listDirectories?(): string[];
}

export interface GenerateContext {
  clusters: ClusterInfo[];
  repository(repoURL: string, revision: string): RepositoryFiles;
}

export interface GeneratedApplication {
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  spec: {
    project?: string;
    source: { repoURL: string; targetRevision?: string; path: string } & Record<string, unknown>;
    destination: { name?: string; server?: string; namespace?: string };
    syncPolicy?: unknown;
  } & Record<string, unknown>;
}

/** One rendered Application template: what the hub turns into a target. */
export interface GeneratedTarget {
  name: string;
  params: Record<string, unknown>;
  application: GeneratedApplication;
}

export interface GenerateResult {
  /** The parameter sets, in generator order, after post-selectors. */
  params: Record<string, unknown>[];
  /** One rendered Application per parameter set, same order. */
  targets: GeneratedTarget[];
}

/** A parameter set: flat string keys with fasttemplate, nested values with goTemplate. */
export type Params = Record<string, unknown>;
