import { z } from 'zod';
import { labelKeySchema, labelsSchema, labelValueSchema } from './label-syntax.js';

export const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

export const selectorOperatorSchema = z.enum(SELECTOR_OPERATORS, {
  error: (issue) =>
    `${JSON.stringify(issue.input)} is not a label selector operator (expected one of ${SELECTOR_OPERATORS.join(', ')})`,
});

const expressionSchema = z
  .strictObject({
    key: labelKeySchema,
    operator: selectorOperatorSchema,
    values: z.array(labelValueSchema).optional(),
  })
  .superRefine((expr, ctx) => {
    // The rules metav1.LabelSelectorAsSelector enforces.
    const count = expr.values?.length ?? 0;
    switch (expr.operator) {
      case 'In':
      case 'NotIn':
        if (count === 0)
          ctx.addIssue({
            code: 'custom',
            message: `operator ${expr.operator} needs at least one value`,
            path: ['values'],
          });
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (count > 0)
          ctx.addIssue({
            code: 'custom',
            message: `operator ${expr.operator} takes no values`,
            path: ['values'],
          });
        break;
    }
  });

/**
 * A Kubernetes label selector over cluster labels: every matchLabels pair and every expression must
 * hold. Keys and values follow Kubernetes label syntax; In and NotIn need values, Exists and
 * DoesNotExist take none.
 */
export const labelSelectorSchema = z.strictObject({
  matchLabels: labelsSchema.optional(),
  matchExpressions: z.array(expressionSchema).optional(),
});

export type LabelSelector = z.infer<typeof labelSelectorSchema>;
