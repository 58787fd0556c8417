// The engine's leaf module: the shapes of definitions (services, objects, handlers) and of what
// an execution runs, and the lookup of a handler by name. Imports nothing of the engine, so
// every engine module may import it (definitions.ts builds these shapes, context.ts types
// calls with them, execution and the stores carry them).
import type { z } from 'zod';

/** A field path inside a value, dot-separated ('hook.url'); '' is the whole value. Arrays
 *  are crossed: 'targets.url' is the url of every element of targets. */
export type SecretPath = string;

/** Fields that invocation views (listInvocations, getInvocation) show as REDACTED. */
export interface HandlerSecrets {
  input?: readonly SecretPath[];
  output?: readonly SecretPath[];
}

/** `C` is the handler's context (definitions.ts fills in Context; this leaf cannot name it). */
export interface HandlerDef<I = unknown, O = unknown, C = any> {
  readonly input: z.ZodType<I>;
  readonly output: z.ZodType<O>;
  readonly run: (ctx: C, input: I) => Promise<O>;
  readonly secret?: HandlerSecrets;
}

export type Handlers = Record<string, HandlerDef<any, any, any>>;

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
export type InputOf<T, K extends HandlerName<T>> = HandlersOf<T>[K] extends HandlerDef<infer I, any, any> ? I : never;
export type OutputOf<T, K extends HandlerName<T>> = HandlersOf<T>[K] extends HandlerDef<any, infer O, any> ? O : never;

export type HandlerKind = 'service' | 'exclusive' | 'shared';

export interface ResolvedHandler {
  service: string;
  handler: string;
  kind: HandlerKind;
  def: HandlerDef<any, any, any>;
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

/** What an execution runs: one invocation under one lease epoch. */
export interface ExecutionTarget {
  id: string;
  service: string;
  handler: string;
  key: string | null;
  kind: HandlerKind;
  input: unknown;
  epoch: number;
  cancelRequested: boolean;
  /** The trace carrier stored with it; undefined: not known yet (read when it executes). */
  traceContext?: string | null;
}

/**
 * Tracing, as the engine sees it (src/tracing implements it; the engine knows no spans): an
 * opaque carrier captured when an invocation starts, stored with it, made current whenever any
 * process executes it, and handed back once when it ends (or leaves this process unfinished).
 */
export interface TraceHooks {
  capture(): string | null;
  restore<T>(carrier: string | null, fn: () => T): T;
  finished(carrier: string | null, failure: string | null, abandoned: boolean): void;
}

/** A call or send from a handler, validated against the target's schema. */
export interface ChildTarget {
  service: string;
  handler: string;
  kind: HandlerKind;
  input: unknown;
}

export interface ChildOptions {
  key?: string;
  idempotencyKey?: string;
  delayMs?: number;
}

export interface RunOptions {
  /** Attempts including the first; after the last failure the step fails terminally. */
  maxAttempts?: number;
  /** First retry delay; doubles (factor) up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  factor?: number;
}
