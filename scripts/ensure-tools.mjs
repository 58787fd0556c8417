// The tools `npm test` drives besides Node (issue 23): Debian's chromium (tests/web), kubectl
// (the simulator's kubectl tests), prometheus (promtool for the metrics lint, the server for
// the canary analysis tests), zsh and fish (the completion scripts; bash is always there) and
// Debian's PostgreSQL server, Patroni, etcd, HAProxy and PgBouncer (tests/ha, issue 35);
// with --ci also stress-ng, for the CPU burners .ci/run starts. Run first by `npm test` and
// `.ci/run`: a missing tool must fail the run at once, never turn its tests into skips. As root
// it installs what is missing with apt-get; otherwise it stops and prints the one command to run.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Each binary the tests need, and the Debian package that ships it. */
const TOOLS = [
  { bin: 'chromium', pkg: 'chromium' },
  { bin: 'kubectl', pkg: 'kubectl' },
  { bin: 'promtool', pkg: 'prometheus' },
  { bin: 'prometheus', pkg: 'prometheus' },
  // tests/ha: a real highly available PostgreSQL (scripts/ha): Debian's server binaries under
  // Patroni, with etcd, HAProxy and PgBouncer.
  { bin: 'pg_ctlcluster', pkg: 'postgresql' },
  { bin: 'patroni', pkg: 'patroni' },
  { bin: 'etcd', pkg: 'etcd-server' },
  { bin: 'haproxy', pkg: 'haproxy' },
  { bin: 'pgbouncer', pkg: 'pgbouncer' },
  // The completion scripts run in the real shells (tests/cli/completion.test.ts).
  { bin: 'zsh', pkg: 'zsh' },
  { bin: 'fish', pkg: 'fish' },
  // --ci (.ci/run): the CPU burners that run beside the suite there; npm test alone does not
  // need them.
  ...(process.argv.includes('--ci') ? [{ bin: 'stress-ng', pkg: 'stress-ng' }] : []),
];

/** Debian puts haproxy and pgbouncer in /usr/sbin, which a non-root PATH often lacks;
 *  scripts/ha adds it to its children's PATH, so it counts here too. */
const SEARCH = [...new Set([...(process.env.PATH ?? '').split(delimiter), '/usr/sbin'])];

const onPath = (bin) =>
  SEARCH.some((dir) => {
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });

/** Debian's own archive names kubectl `kubernetes-client`; Kubernetes' apt repository names it `kubectl`. */
function packageFor(tool) {
  if (tool.bin !== 'kubectl') return tool.pkg;
  return spawnSync('apt-cache', ['show', 'kubectl'], { stdio: 'ignore' }).status === 0 ? 'kubectl' : 'kubernetes-client';
}

const missing = TOOLS.filter((t) => !onPath(t.bin));
if (missing.length === 0) process.exit(0);
const names = missing.map((t) => t.bin).join(', ');
const isRoot = process.getuid?.() === 0;
const hasApt = onPath('apt-get');
if (!isRoot || !hasApt) {
  const pkgs = [...new Set(missing.map((t) => (hasApt ? packageFor(t) : t.pkg)))].join(' ');
  console.error(`npm test needs ${names}, which ${missing.length > 1 ? 'are' : 'is'} not installed. Run:\n\n  sudo apt-get update && sudo apt-get install -y ${pkgs}\n`);
  process.exit(1);
}
const run = (args) => spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
const pkgs = [...new Set(missing.map(packageFor))];
console.error(`installing ${pkgs.join(' ')} for ${names} (apt-get, as root)`);
if (!run(['update', '-qq']) || !run(['install', '-y', '-qq', ...pkgs])) {
  console.error(`apt-get could not install ${pkgs.join(' ')}; npm test stops here`);
  process.exit(1);
}
const still = TOOLS.filter((t) => !onPath(t.bin)).map((t) => t.bin);
if (still.length) {
  console.error(`still missing after apt-get: ${still.join(', ')}; npm test stops here`);
  process.exit(1);
}
