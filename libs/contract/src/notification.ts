import { z } from 'zod';
import { apiAnswers, listingSchema } from './api-schemas.js';

/**
 * A delivery's life: a digest `Collecting` events until its window closes, then `Pending` until a
 * destination took it (`Sent`) or every attempt failed (`Failed`).
 */
export const DELIVERY_STATUSES = ['Collecting', 'Pending', 'Sent', 'Failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** `GET /api/v1/notifications/deliveries`: what was sent, to whom, and what failed. */
export const notificationDeliveryViewSchema = z.object({
  id: z.string(),
  dedupeKey: z.string(),
  policy: z.string(),
  trigger: z.string(),
  /** null when the destination was deleted since. */
  destination: z.string().nullable(),
  status: z.enum(DELIVERY_STATUSES),
  eventCount: z.number().int(),
  attempts: z.number().int(),
  lastError: z.string().nullable(),
  sendAfter: z.iso.datetime(),
  sentAt: z.iso.datetime().nullable(),
  createdAt: z.iso.datetime(),
  events: z.array(z.unknown()),
});
notificationDeliveryViewSchema.register(apiAnswers, { id: 'NotificationDeliveryView' });
export const notificationDeliveryListSchema = z
  .array(notificationDeliveryViewSchema)
  .register(apiAnswers, { id: 'NotificationDeliveryList' });
export type NotificationDeliveryView = z.infer<typeof notificationDeliveryViewSchema>;

/** A destination as listed: its shown settings, never its secret (`hasSecret` says one is sealed). */
export const notificationDestinationViewSchema = z.object({
  name: z.string(),
  type: z.string(),
  config: z.record(z.string(), z.unknown()),
  hasSecret: z.boolean(),
  createdBy: z.string(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
notificationDestinationViewSchema.register(apiAnswers, { id: 'NotificationDestinationView' });
export const notificationDestinationListingSchema = listingSchema(
  notificationDestinationViewSchema,
  'NotificationDestination',
);
export type NotificationDestinationView = z.infer<typeof notificationDestinationViewSchema>;

/** A NotificationPolicy as listed, with who manages it (the API, or a fleet repository commit). */
export const notificationPolicyViewSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('NotificationPolicy'),
  metadata: z.object({ name: z.string() }),
  spec: z.object({ triggers: z.array(z.string()), destinations: z.array(z.string()) }).loose(),
  managedBy: z.string(),
  sourceCommit: z.string().nullable(),
});
notificationPolicyViewSchema.register(apiAnswers, { id: 'NotificationPolicyView' });
export const notificationPolicyListingSchema = listingSchema(
  notificationPolicyViewSchema,
  'NotificationPolicy',
);
export type NotificationPolicyView = z.infer<typeof notificationPolicyViewSchema>;
