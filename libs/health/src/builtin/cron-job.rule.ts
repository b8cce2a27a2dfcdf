import { field, list, str } from '../object-fields.js';
import { type BuiltinRule, result } from './rule.js';

/**
 * Argo CD ships this check as `resource_customizations/batch/CronJob/health.lua`; it is built in here so that a
 * CronJob gets the same verdict without a Lua directory. Times are RFC 3339 in UTC, so they compare as strings.
 */
export const cronJobHealth: BuiltinRule = (obj) => {
  if (field(obj, 'spec', 'suspend') === true) return result('Suspended', 'CronJob is Suspended');
  const status = field(obj, 'status');
  if (status === undefined || status === null) return result('Progressing', 'Waiting for CronJob');
  const lastSchedule = field(status, 'lastScheduleTime');
  if (lastSchedule === undefined || lastSchedule === null) {
    return result('Healthy', 'CronJob has not been scheduled yet');
  }
  const lastSuccess = field(status, 'lastSuccessfulTime');
  if (lastSuccess === undefined || lastSuccess === null) {
    return result('Healthy', 'The Cronjob never completed succesfully. It may not be healthy');
  }
  if (list(status, 'active').length > 0) {
    return result('Healthy', 'The job is running. Its last execution may not have been successful');
  }
  if (str(status, 'lastSuccessfulTime') < str(status, 'lastScheduleTime')) {
    return result('Degraded', 'CronJob has not completed its last execution successfully');
  }
  return result('Healthy', 'CronJob has completed its last execution successfully');
};
