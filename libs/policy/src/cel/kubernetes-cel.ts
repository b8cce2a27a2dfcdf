import { Environment } from '@marcbachmann/cel-js';
import { registerIpLibrary } from './ip-library.js';
import { registerListLibrary } from './list-library.js';
import { registerQuantityLibrary } from './quantity-library.js';
import { registerStringLibrary } from './string-library.js';
import { registerUrlLibrary } from './url-library.js';

/** The variables a ValidatingAdmissionPolicy expression sees (`authorizer` needs a cluster). */
export const POLICY_VARIABLES = [
  'object',
  'oldObject',
  'request',
  'params',
  'namespaceObject',
  'variables',
] as const;

/** A compiled expression: call it with the activation (variable name → value). */
export type CelProgram = (activation: Record<string, unknown>) => unknown;

export type CompileResult = { program: CelProgram } | { error: string };

function buildEnvironment(): Environment {
  const env = new Environment({
    unlistedVariablesAreDyn: false,
    homogeneousAggregateLiterals: false,
    enableOptionalTypes: true,
  });
  for (const name of POLICY_VARIABLES) env.registerVariable(name, 'dyn');
  registerQuantityLibrary(env);
  registerIpLibrary(env);
  registerUrlLibrary(env);
  registerListLibrary(env);
  registerStringLibrary(env);
  return env;
}

let shared: Environment | undefined;
const programs = new Map<string, CompileResult>();
const MAX_PROGRAMS = 10_000;

/**
 * Parses and type-checks one expression against the Kubernetes admission environment. The same
 * text compiles once per process: a fleet repeats the same few expressions across thousands of
 * policies and targets.
 */
export function compileExpression(expression: string): CompileResult {
  const known = programs.get(expression);
  if (known) return known;
  const env = (shared ??= buildEnvironment());
  let result: CompileResult;
  try {
    const parsed = env.parse(expression);
    // Checks the parsed tree itself (env.check would parse the text again); evaluating it then
    // skips cel-js's own first-run type check.
    const checked = parsed.check();
    result = checked.valid
      ? { program: (activation) => parsed(activation) as unknown }
      : { error: firstLine(checked.error) };
  } catch (err) {
    result = { error: firstLine(err) };
  }
  // Bounded so that a long-running hub that sees policies change does not keep every old text.
  if (programs.size >= MAX_PROGRAMS) programs.delete(programs.keys().next().value as string);
  programs.set(expression, result);
  return result;
}

/** cel-js appends the source with a caret under the fault; the first line is the reason. */
export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const line = message.split('\n')[0] ?? message;
  return /^Unknown variable: authorizer$/.test(line)
    ? 'authorizer is not available offline: Flotilla evaluates policies without a cluster'
    : line;
}
