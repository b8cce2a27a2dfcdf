/**
 * Kubernetes `Status` failures as values. Every API error the simulator answers with is a
 * `StatusError`, so the HTTP layer can render it exactly as a real apiserver would (§4.3).
 */
export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'BadRequest'
  | 'Expired'
  | 'Forbidden'
  | 'MethodNotAllowed'
  | 'UnsupportedMediaType'
  | 'NotAcceptable'
  | 'InternalError';

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
}

export interface StatusObject {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: StatusReason;
  details?: StatusDetails;
  code: number;
}

export class StatusError extends Error {
  override readonly name = 'StatusError';
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): StatusObject {
    const status: StatusObject = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) status.details = this.details;
    return status;
  }
}

/** `deployments.apps` or `configmaps`: how the apiserver names a resource in messages. */
export function groupResource(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}

export function notFound(resource: string, group: string, name: string): StatusError {
  return new StatusError(404, 'NotFound', `${groupResource(resource, group)} "${name}" not found`, {
    name,
    group,
    kind: resource,
  });
}

export function alreadyExists(resource: string, group: string, name: string): StatusError {
  return new StatusError(409, 'AlreadyExists', `${groupResource(resource, group)} "${name}" already exists`, {
    name,
    group,
    kind: resource,
  });
}

export function conflict(resource: string, group: string, name: string, why?: string): StatusError {
  return new StatusError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${groupResource(resource, group)} "${name}": ${
      why ?? 'the object has been modified; please apply your changes to the latest version and try again'
    }`,
    { name, group, kind: resource },
  );
}

/** 422 Invalid: `<Kind>.<group> "<name>" is invalid: <field>: <message>`. */
export function invalid(kind: string, group: string, name: string, causes: StatusCause[]): StatusError {
  const what = group ? `${kind}.${group}` : kind;
  const text = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(', ');
  const joined = causes.length > 1 ? `[${text}]` : text;
  return new StatusError(422, 'Invalid', `${what} "${name}" is invalid: ${joined}`, {
    name,
    group,
    kind,
    causes: causes.map((c) => ({
      reason: c.reason ?? 'FieldValueInvalid',
      message: c.message,
      field: c.field,
    })),
  });
}

export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message);
}

export function forbidden(message: string, details?: StatusDetails): StatusError {
  return new StatusError(403, 'Forbidden', message, details);
}

export function expired(message: string): StatusError {
  return new StatusError(410, 'Expired', message);
}

export function methodNotAllowed(
  message = 'the server does not allow this method on the requested resource',
) {
  return new StatusError(405, 'MethodNotAllowed', message);
}

export function unsupportedMediaType(contentType: string): StatusError {
  return new StatusError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got ${contentType})`,
  );
}
