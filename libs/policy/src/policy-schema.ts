import { apiServerLabelSelectorSchema } from '@flotilla/labels';
import { z } from 'zod';

/**
 * `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding,
 * field for field as the API server declares them. Objects are strict, so a misspelt field is
 * refused by its path instead of silently changing what a policy does.
 */
export const POLICY_API_VERSION = 'admissionregistration.k8s.io/v1';

const operationSchema = z.enum(['*', 'CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

const ruleSchema = z.strictObject({
  apiGroups: z.array(z.string()).optional(),
  apiVersions: z.array(z.string()).optional(),
  resources: z.array(z.string()).optional(),
  operations: z.array(operationSchema).optional(),
  resourceNames: z.array(z.string()).optional(),
  scope: z.enum(['*', 'Cluster', 'Namespaced']).optional(),
});
export type ResourceRule = z.infer<typeof ruleSchema>;

const matchResourcesSchema = z.strictObject({
  namespaceSelector: apiServerLabelSelectorSchema.optional(),
  objectSelector: apiServerLabelSelectorSchema.optional(),
  resourceRules: z.array(ruleSchema).optional(),
  excludeResourceRules: z.array(ruleSchema).optional(),
  matchPolicy: z.enum(['Exact', 'Equivalent']).optional(),
});
export type MatchResources = z.infer<typeof matchResourcesSchema>;

const metadataSchema = z.looseObject({
  name: z.string().min(1, 'metadata.name is required'),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});

const expressionSchema = z.string().min(1, 'expression is empty');

export const validatingAdmissionPolicySchema = z.strictObject({
  apiVersion: z.literal(POLICY_API_VERSION),
  kind: z.literal('ValidatingAdmissionPolicy'),
  metadata: metadataSchema,
  spec: z
    .strictObject({
      paramKind: z.strictObject({ apiVersion: z.string().min(1), kind: z.string().min(1) }).optional(),
      matchConstraints: matchResourcesSchema.extend({ resourceRules: z.array(ruleSchema).min(1) }),
      validations: z
        .array(
          z.strictObject({
            expression: expressionSchema,
            message: z.string().optional(),
            messageExpression: z.string().optional(),
            reason: z.enum(['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge']).optional(),
          }),
        )
        .optional(),
      failurePolicy: z.enum(['Fail', 'Ignore']).optional(),
      auditAnnotations: z
        .array(z.strictObject({ key: z.string().min(1), valueExpression: expressionSchema }))
        .optional(),
      matchConditions: z
        .array(z.strictObject({ name: z.string().min(1), expression: expressionSchema }))
        .optional(),
      variables: z
        .array(
          z.strictObject({
            name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a variable name must be a CEL identifier'),
            expression: expressionSchema,
          }),
        )
        .optional(),
    })
    .refine((s) => (s.validations?.length ?? 0) + (s.auditAnnotations?.length ?? 0) > 0, {
      message: 'a policy needs at least one of validations or auditAnnotations',
    }),
  status: z.unknown().optional(),
});
export type ValidatingAdmissionPolicy = z.infer<typeof validatingAdmissionPolicySchema>;

export const validatingAdmissionPolicyBindingSchema = z.strictObject({
  apiVersion: z.literal(POLICY_API_VERSION),
  kind: z.literal('ValidatingAdmissionPolicyBinding'),
  metadata: metadataSchema,
  spec: z.strictObject({
    policyName: z.string().min(1),
    paramRef: z
      .strictObject({
        name: z.string().optional(),
        namespace: z.string().optional(),
        selector: apiServerLabelSelectorSchema.optional(),
        parameterNotFoundAction: z.enum(['Allow', 'Deny']).optional(),
      })
      .refine((r) => (r.name === undefined) !== (r.selector === undefined), {
        message: 'paramRef needs exactly one of name or selector',
      })
      .optional(),
    matchResources: matchResourcesSchema.optional(),
    validationActions: z
      .array(z.enum(['Deny', 'Warn', 'Audit']))
      .min(1, 'validationActions needs at least one of Deny, Warn, Audit')
      .refine((a) => new Set(a).size === a.length, { message: 'validationActions must not repeat an action' })
      .refine((a) => !(a.includes('Deny') && a.includes('Warn')), {
        message: 'Deny and Warn together are refused: a denied request shows its message already',
      }),
  }),
});
export type ValidatingAdmissionPolicyBinding = z.infer<typeof validatingAdmissionPolicyBindingSchema>;
export type ValidationAction = ValidatingAdmissionPolicyBinding['spec']['validationActions'][number];
