// The command table of tenants, keys and the audit trail (issue 26), kept apart from
// register.ts so its registrations stay one short block each.
import type { Command } from 'commander';
import { auditLs, keysCreate, keysLs, keysRevoke } from './commands/keys';
import { tenancyCreate, tenancyDelete, tenancyGet, tenancyLs, type TenancyKind } from './commands/tenancy';
import { durationArg, intArg, listArg } from './options';
import type { CommandContext } from './commands/context';

/** register.ts's action runner and flag helper, passed in (importing them would be a cycle). */
type Run = (ctx: CommandContext, opts: Record<string, any>, args: string[]) => Promise<number>;
type ApiOptions = (cmd: Command, json?: boolean) => Command;
type ListOptions = (cmd: Command) => Command;
type Action = (run: Run) => (...argv: unknown[]) => Promise<void>;

export function registerTenancyCommands(program: Command, apiOptions: ApiOptions, listOptions: ListOptions, action: Action): void {
  const parents: Record<TenancyKind, { what: string; parent?: [string, string] }> = {
    workspaces: { what: 'tenants' },
    projects: { what: 'projects of a workspace', parent: ['--workspace <id>', 'the workspace'] },
    environments: { what: 'environments of a project: slug, regions, hostname', parent: ['--project <id>', 'the project'] },
  };
  for (const kind of ['workspaces', 'projects', 'environments'] as const) {
    const { what, parent } = parents[kind];
    const group = program.command(kind).description(what);
    const ls = group.command('ls').description(`list ${kind}`);
    if (parent) ls.option(...parent);
    listOptions(ls).action(action((ctx, o) => tenancyLs(kind, o, ctx)));
    const create = group.command('create').description(`create one; prints its id`).option('--id <id>', 'choose the id (lowercase, digits, hyphens); default generated');
    if (parent) create.option(...parent);
    if (kind === 'environments') {
      create
        .requiredOption('--slug <slug>', 'its name within the project, e.g. production')
        .option('--regions <list>', 'regions it deploys to, comma-separated', listArg)
        .option('--hostname <host>', 'its hostname (default <app>-<slug>.<apex domain>)');
    } else create.requiredOption('--name <name>', 'a name for people');
    apiOptions(create).action(action((ctx, o) => tenancyCreate(kind, o, ctx)));
    apiOptions(group.command('get').argument('<id>').description('show one')).action(action((ctx, o, [id]) => tenancyGet(kind, id!, o, ctx)));
    apiOptions(group.command('delete').argument('<id>').description('delete it (refused while anything runs); removes what it runs in the clusters')).action(
      action((ctx, o, [id]) => tenancyDelete(kind, id!, o, ctx)),
    );
  }

  const keys = program.command('keys').description('scoped API keys');
  apiOptions(
    keys
      .command('create')
      .description('create a key; prints it once (ctrl keeps only its hash)')
      .requiredOption('--scope <scope>', 'WORKSPACE[/PROJECT[/ENVIRONMENT]]')
      .requiredOption('--permissions <list>', 'comma-separated, e.g. deployments.read,deployments.write', listArg)
      .option('--name <name>', 'a name for people')
      .option('--expires-in <duration>', 'the key stops working after this long, e.g. 30d', durationArg),
  ).action(action((ctx, o) => keysCreate(o as { scope: string; permissions: string[] }, ctx)));
  listOptions(keys.command('ls').description('keys of your scope (no secrets)')).action(action((ctx, o) => keysLs(o, ctx)));
  apiOptions(keys.command('revoke').argument('<id>').description('revoke at once: its open streams end')).action(action((ctx, o, [id]) => keysRevoke(id!, o, ctx)));

  listOptions(
    program
      .command('audit')
      .description('the audit trail')
      .command('ls')
      .description('audit rows, newest first')
      .option('--actor <id>', 'only this actor (a key id, admin, an agent token id)')
      .option('--target <id>', 'only this target')
      .option('--action <prefix>', 'only actions starting so, e.g. deployment.')
      .option('--since <when>', 'a duration back (1h, 7d) or an ISO time')
      .option('--limit <n>', 'page size (default 100)', intArg)
      .option('--cursor <c>', 'the next page (printed under a full page)'),
  ).action(action((ctx, o) => auditLs(o, ctx)));
}
