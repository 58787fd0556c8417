// The public API's routes as call shapes, derived from the generated `paths` (api.gen.ts): for a
// method and a documented path template, what its path parameters, query and body are and what
// a success answers. ApiClient's typed calls take these, so a command names a route and gets its
// answer's type from the document; nothing here is written by hand about any one route.
import type { paths } from './api.gen';
import { CliError, EXIT_USAGE } from './errors';

export type Method = 'get' | 'post' | 'put' | 'delete';

type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** The path templates that have method M, e.g. `'/v1/deployments/{id}'` for get. */
export type PathsOf<M extends Method> = { [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never }[keyof paths];

type Params<O> = O extends { parameters: infer X } ? X : never;
export type PathParams<P extends keyof paths, M extends Method> = Params<Operation<P, M>> extends { path: infer T } ? T : undefined;
export type QueryOf<P extends keyof paths, M extends Method> = Params<Operation<P, M>> extends { query?: infer T } ? T : undefined;
export type BodyOf<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : undefined;
type HeaderOf<P extends keyof paths, M extends Method> = Params<Operation<P, M>> extends { header?: infer H } ? NonNullable<H> : never;
/** The route's documented Idempotency-Key header: a string where it takes one, else never (no key
 *  can be given). `header?: never` of a route without headers would match the pattern, hence the guard. */
export type IdempotencyKeyOf<P extends keyof paths, M extends Method> = [HeaderOf<P, M>] extends [never] ? never : HeaderOf<P, M> extends { 'Idempotency-Key'?: infer K } ? K : never;

type Success = 200 | 201 | 202;
type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never;
/** What a 2xx of the route answers (the union when it has several, e.g. 200 and 202). */
export type AnswerOf<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: infer R } ? { [S in keyof R & Success]: Json<R[S]> }[keyof R & Success] : never;

export interface CallOptions<P extends keyof paths, M extends Method> {
  /** Values of the template's `{name}`s (URL-encoded when substituted). */
  path?: PathParams<P, M>;
  query?: QueryOf<P, M>;
  body?: BodyOf<P, M>;
  /** 0: no limit (the server bounds the wait itself). */
  timeoutMs?: number;
  /** Send it again through a failover (retry.ts); default: GETs only. Only for a call safe to repeat. */
  retry?: boolean;
  /** Sent as Idempotency-Key, where the route documents one: a repeat answers with what the first call made. */
  idempotencyKey?: IdempotencyKeyOf<P, M>;
}

/** Options are required exactly when the template has path parameters. */
export type CallArgs<P extends keyof paths, M extends Method> = PathParams<P, M> extends undefined ? [opts?: CallOptions<P, M>] : [opts: CallOptions<P, M> & { path: PathParams<P, M> }];

/** `/v1/deployments/{id}` with `{ id: 'dep 1' }` → `/v1/deployments/dep%201`; a missing value throws. */
export function fillPath(template: string, values: Record<string, string> | undefined): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = values?.[name];
    if (v === undefined) throw new CliError('ERR_CLI_USAGE', `no value for {${name}} of ${template}`, { exitCode: EXIT_USAGE });
    return encodeURIComponent(v);
  });
}
