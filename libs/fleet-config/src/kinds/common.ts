import { parseGoDuration } from '@flotilla/windows';
import { z } from 'zod';

/** Flotilla's own kinds live in this API version. */
export const FLOTILLA_API_VERSION = 'flotilla.dev/v1alpha1';

/** A Go duration (`90s`, `1h30m`), the unit Argo CD and Kubernetes users already write. */
export const goDurationSchema = z
  .string()
  .superRefine((text, ctx) => {
    let ms: number;
    try {
      ms = parseGoDuration(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message, params: { code: 'invalid-duration' } });
      return;
    }
    if (ms < 0)
      ctx.addIssue({
        code: 'custom',
        message: `duration '${text}' must not be negative`,
        params: { code: 'invalid-duration' },
      });
  })
  .meta({ description: 'a Go duration such as 90s, 10m or 1h30m', examples: ['10m', '1h30m'] });

/** A count, or a percentage of the clusters concerned (`25%`), as Kubernetes' IntOrString. */
export const intOrPercentSchema = z.union(
  [
    z.int().min(0, 'must not be negative'),
    z.string().regex(/^(100|[1-9]?[0-9])%$/, 'a percentage must be a whole number from 0% to 100%'),
  ],
  { error: 'expected a whole number of clusters or a percentage such as 25%' },
);

/** A Kubernetes group and kind, `*` for any; the core group is ''. */
export const groupKindSchema = z.strictObject({
  group: z.string(),
  kind: z.string().min(1, 'a kind is required (use * for any)'),
});
