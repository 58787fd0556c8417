// Service and virtual object definitions: named handlers with zod schemas for input and output.
// Definitions are plain data; an engine registers them and clients use them as typed targets.
import type { z } from 'zod';
import type { Context } from './context';

/** A field path inside a value, dot-separated ('hook.url'); '' is the whole value. Arrays
 *  are crossed: 'targets.url' is the url of every element of targets. */
export type SecretPath = string;

/** Fields that invocation views (listInvocations, getInvocation) show as REDACTED. */
export interface HandlerSecrets {
  input?: readonly SecretPath[];
  output?: readonly SecretPath[];
}

export interface HandlerDef<I = unknown, O = unknown> {
  readonly input: z.ZodType<I>;
  readonly output: z.ZodType<O>;
  readonly run: (ctx: Context, input: I) => Promise<O>;
  readonly secret?: HandlerSecrets;
}

export type Handlers = Record<string, HandlerDef<any, any>>;

export interface ServiceDef<H extends Handlers = Handlers> {
  readonly type: 'service';
  readonly name: string;
  readonly handlers: H;
}

export interface ObjectDef<E extends Handlers = Handlers, S extends Handlers = Handlers> {
  readonly type: 'object';
  readonly name: string;
  readonly exclusive: E;
  readonly shared: S;
  /** State entries (by state name) whose fields views redact in get/set journal entries. */
  readonly secretState: Readonly<Record<string, readonly SecretPath[]>>;
}

export interface ObjectOptions {
  /** Per state name, the secret paths inside its value ([''] for the whole value). */
  secretState?: Record<string, readonly SecretPath[]>;
}

export type AnyDef = ServiceDef<any> | ObjectDef<any, any>;

type HandlersOf<T> = T extends ServiceDef<infer H> ? H : T extends ObjectDef<infer E, infer S> ? E & S : never;
export type HandlerName<T> = keyof HandlersOf<T> & string;
export type InputOf<T, K extends HandlerName<T>> = HandlersOf<T>[K] extends HandlerDef<infer I, any> ? I : never;
export type OutputOf<T, K extends HandlerName<T>> = HandlersOf<T>[K] extends HandlerDef<any, infer O> ? O : never;

/** One handler: input and output schemas plus the code. */
/** One handler: input and output schemas plus the code; `secret` names fields of its input and
 *  output that invocation views must not show (credentials such as webhook URLs). */
export function handler<IS extends z.ZodType, OS extends z.ZodType>(
  schemas: { input: IS; output: OS; secret?: HandlerSecrets },
  run: (ctx: Context, input: z.output<IS>) => Promise<z.input<OS>>,
): HandlerDef<z.output<IS>, z.output<OS>> {
  type Def = HandlerDef<z.output<IS>, z.output<OS>>;
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

export type HandlerKind = 'service' | 'exclusive' | 'shared';

export interface ResolvedHandler {
  service: string;
  handler: string;
  kind: HandlerKind;
  def: HandlerDef<any, any>;
}

/** Finds a handler of a definition and how it runs (service, exclusive or shared). */
export function resolveHandler(def: AnyDef, name: string): ResolvedHandler | undefined {
  if (def.type === 'service') {
    const h = Object.hasOwn(def.handlers, name) ? def.handlers[name] : undefined;
    return h && { service: def.name, handler: name, kind: 'service', def: h };
  }
  if (Object.hasOwn(def.exclusive, name)) return { service: def.name, handler: name, kind: 'exclusive', def: def.exclusive[name]! };
  if (Object.hasOwn(def.shared, name)) return { service: def.name, handler: name, kind: 'shared', def: def.shared[name]! };
  return undefined;
}
