import { describe, expect, it } from 'vitest';
import { syncPolicyOf } from './sync-policy.js';

describe('syncPolicyOf', () => {
  it("applies Flotilla's defaults when the template says nothing", () => {
    expect(syncPolicyOf(undefined)).toEqual({
      automated: true,
      selfHeal: true,
      prune: true,
      allowEmpty: false,
    });
  });

  it("reads Argo CD's automated block with Argo CD's defaults", () => {
    expect(syncPolicyOf({ automated: {} })).toEqual({
      automated: true,
      selfHeal: false,
      prune: false,
      allowEmpty: false,
    });
    expect(syncPolicyOf({ automated: { prune: true, selfHeal: true } })).toEqual({
      automated: true,
      selfHeal: true,
      prune: true,
      allowEmpty: false,
    });
  });

  it('treats an Argo CD syncPolicy without automated as manual', () => {
    expect(syncPolicyOf({ syncOptions: ['CreateNamespace=true'] })).toEqual({
      automated: false,
      selfHeal: false,
      prune: true,
      allowEmpty: false,
    });
  });

  it("reads Flotilla's flat booleans", () => {
    expect(syncPolicyOf({ automated: true, selfHeal: false })).toEqual({
      automated: true,
      selfHeal: false,
      prune: true,
      allowEmpty: false,
    });
  });
});
