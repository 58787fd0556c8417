// Service and virtual object definitions: named handlers with zod schemas for input and output.
// Definitions are plain data; an engine registers them and clients use them as typed targets.
import type { z } from 'zod';
import type { Context } from './context';
import type { HandlerDef, HandlerSecrets, Handlers, ObjectDef, ObjectOptions, ServiceDef } from './types';


/** One handler: input and output schemas plus the code; `secret` names fields of its input and
 *  output that invocation views must not show (credentials such as webhook URLs). */
export function handler<IS extends z.ZodType, OS extends z.ZodType>(
  schemas: { input: IS; output: OS; secret?: HandlerSecrets },
  run: (ctx: Context, input: z.output<IS>) => Promise<z.input<OS>>,
): HandlerDef<z.output<IS>, z.output<OS>, Context> {
  type Def = HandlerDef<z.output<IS>, z.output<OS>, Context>;
  return {
    input: schemas.input as unknown as Def['input'],
    output: schemas.output as unknown as Def['output'],
    run: run as Def['run'],
    ...(schemas.secret ? { secret: schemas.secret } : {}),
  };
}

export function defineService<H extends Handlers>(name: string, handlers: H): ServiceDef<H> {
  return { type: 'service', name, handlers };
}

export function defineObject<E extends Handlers, S extends Handlers = {}>(
  name: string,
  handlers: { exclusive: E; shared?: S },
  opts: ObjectOptions = {},
): ObjectDef<E, S> {
  return { type: 'object', name, exclusive: handlers.exclusive, shared: (handlers.shared ?? {}) as S, secretState: opts.secretState ?? {} };
}

