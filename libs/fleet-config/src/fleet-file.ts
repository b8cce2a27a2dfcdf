/** One file of a fleet repository; `path` is relative to the repository root, `/`-separated. */
export interface FleetFile {
  path: string;
  content: string;
}
