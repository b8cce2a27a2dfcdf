import { z } from 'zod';
import { labelsSchema, OBJECT_NAME_PATTERN } from './label-syntax.js';

/** An object's name: a DNS-1123 subdomain, so it can also name Kubernetes objects later. */
export const objectNameSchema = z
  .string()
  .min(1, 'a name is required')
  .max(253, 'a name must be at most 253 characters')
  .regex(
    new RegExp(OBJECT_NAME_PATTERN),
    'a name must be lowercase alphanumerics, "-" or ".", starting and ending with an alphanumeric',
  );

/** `metadata` of a Flotilla object written in Git: a name, Kubernetes labels, annotations. */
export const metadataSchema = z.looseObject({
  name: objectNameSchema,
  labels: labelsSchema.optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
