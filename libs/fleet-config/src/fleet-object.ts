import { type ApplicationSetObject } from '@flotilla/generators';
import { type ClusterGroupObject } from './kinds/cluster-group.js';
import { type NotificationPolicyObject } from './kinds/notification-policy.js';
import { type ProjectObject } from './kinds/project.js';
import { type RolloutStrategyObject } from './kinds/rollout-strategy.js';
import { type SourceVerificationObject } from './kinds/source-verification.js';
import { type SyncWindowObject } from './kinds/sync-window.js';

/** The kinds a fleet repository may hold. */
export const FLEET_KINDS = [
  'ApplicationSet',
  'ClusterGroup',
  'Project',
  'RolloutStrategy',
  'SyncWindow',
  'NotificationPolicy',
  'SourceVerification',
] as const;
export type FleetKind = (typeof FLEET_KINDS)[number];

/** Where a valid object was read from, so the hub can point at the file when it refuses an edit. */
export interface FleetObjectSource {
  name: string;
  file: string;
  /** 0-based index of the YAML document in its file. */
  document: number;
  /** 1-based line where the document starts. */
  line: number;
}

/** A valid object, parsed (defaults filled in), tagged with its kind. */
export type ParsedFleetObject =
  | { kind: 'ApplicationSet'; object: ApplicationSetObject }
  | { kind: 'ClusterGroup'; object: ClusterGroupObject }
  | { kind: 'Project'; object: ProjectObject }
  | { kind: 'RolloutStrategy'; object: RolloutStrategyObject }
  | { kind: 'SyncWindow'; object: SyncWindowObject }
  | { kind: 'NotificationPolicy'; object: NotificationPolicyObject }
  | { kind: 'SourceVerification'; object: SourceVerificationObject };

/** A valid object of a fleet repository, parsed and located. */
export type FleetObject = FleetObjectSource & ParsedFleetObject;
