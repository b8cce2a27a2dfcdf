export {
  startSimCluster,
  type SimCluster,
  type SimClusterHandle,
  type SimClusterOptions,
} from './cluster.js';
export { startSimFleet, type SimFleet, type SimFleetOptions } from './fleet.js';
export { kubeconfigFor } from './kubeconfig.js';
export { ManualClock, scaledClock, systemClock, formatTime, type SimClock } from './clock.js';
export {
  ClusterApi,
  type PatchType,
  type WriteOptions,
  type PatchOptions,
  type DeleteOptions,
} from './api/cluster-api.js';
export { ControllerScheduler } from './controllers/scheduler.js';
export { type ControllerName, type ControllerStats } from './controllers/controller-manager.js';
export { type OtherWriters } from './controllers/other-writers.js';
export { type ApiFaults } from './server/http-server.js';
export { StatusError, type StatusObject } from './errors.js';
export { canonicalQuantity } from './defaults/quantity.js';
export { FieldSet } from './fieldpath/field-set.js';
