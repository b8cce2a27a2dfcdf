import { apiVersionOf, BUILTIN_RESOURCES, resourceKey, type ResourceType } from './resource-type.js';

/**
 * The resource types one cluster serves: the built-ins plus whatever its CRDs define. Discovery,
 * routing and OpenAPI all read from here, so a new CRD is served everywhere at once.
 */
export class ResourceRegistry {
  private readonly byKey = new Map<string, ResourceType>();
  private customVersion = 0;

  constructor() {
    for (const rt of BUILTIN_RESOURCES) this.byKey.set(this.k(rt.group, rt.version, rt.plural), rt);
  }

  private k(group: string, version: string, plural: string): string {
    return `${group}/${version}/${plural}`;
  }

  /** Bumps whenever CRD-served types change, so OpenAPI hashes change with them. */
  get generation(): number {
    return this.customVersion;
  }

  lookup(group: string, version: string, plural: string): ResourceType | undefined {
    return this.byKey.get(this.k(group, version, plural));
  }

  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    for (const rt of this.byKey.values()) if (rt.kind === kind && apiVersionOf(rt) === apiVersion) return rt;
    return undefined;
  }

  /** Any version of `group/plural` (custom resources are stored once, whatever version serves them). */
  byGroupResource(group: string, plural: string): ResourceType | undefined {
    for (const rt of this.byKey.values()) if (rt.group === group && rt.plural === plural) return rt;
    return undefined;
  }

  all(): ResourceType[] {
    return [...this.byKey.values()];
  }

  /** Group-versions in discovery order: core first, then built-in groups, then custom ones. */
  groupVersions(): { group: string; version: string; resources: ResourceType[] }[] {
    const out = new Map<string, { group: string; version: string; resources: ResourceType[] }>();
    for (const rt of this.byKey.values()) {
      const key = apiVersionOf(rt);
      let gv = out.get(key);
      if (!gv) out.set(key, (gv = { group: rt.group, version: rt.version, resources: [] }));
      gv.resources.push(rt);
    }
    return [...out.values()];
  }

  setCustom(types: ResourceType[], crdName: string): void {
    this.removeCustom(crdName);
    for (const rt of types) this.byKey.set(this.k(rt.group, rt.version, rt.plural), { ...rt });
    this.owners.set(
      crdName,
      types.map((t) => this.k(t.group, t.version, t.plural)),
    );
    this.customVersion++;
  }

  removeCustom(crdName: string): void {
    const keys = this.owners.get(crdName);
    if (!keys) return;
    for (const key of keys) this.byKey.delete(key);
    this.owners.delete(crdName);
    this.customVersion++;
  }

  private readonly owners = new Map<string, string[]>();
}

export { apiVersionOf, resourceKey };
