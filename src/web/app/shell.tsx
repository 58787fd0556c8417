/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// The page around the views: the token form, the navigation, the live connection's state, and
// the view the URL's fragment names. One LiveConnection per signed-in session; while it is down
// the views are refetched on a timer instead (the fallback), and the header says so.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, createApi, type Api } from './api';
import { SessionContext, useInterval, type LiveEventAny, type Session } from './hooks';
import { eventsProtocols, eventsUrl, LiveConnection, type LiveState } from './live';
import { liveLabel } from './models/shell';
import { href, parseHash, type Route } from './router';
import { forgetToken, storedToken, storeToken } from './session';
import { ErrorBox } from './views/common';
import { CanariesView } from './views/canaries';
import { DeploymentView } from './views/deployment';
import { DeploymentsView } from './views/deployments';
import { RegionsView } from './views/regions';
import { RolloutView } from './views/rollout';
import { AuditView } from './views/audit';

/** While the socket is down, views are re-read this often: slow enough for a ctrl that is
 *  struggling, fast enough that the page is not stale for long. */
const FALLBACK_POLL_MS = 5000;

/** A cheap authenticated read any credential may make (the admin token or a key): answers 401
 *  for a wrong one and nothing else, and says what it may do. */
const PROBE = '/v1/keys/self';

interface Me {
  permissions: string[];
  unscoped: boolean;
  scope: { environmentId: string | null } | null;
}

/** A key of one environment lands on that environment's views instead of `default`'s. */
function ownEnv(r: Route, me: Me | null): Route {
  const env = me?.scope?.environmentId;
  return env && (r.view === 'deployments' || r.view === 'canaries') ? { ...r, env } : r;
}

function Login({ reason, onToken }: { reason: string | null; onToken(t: string): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = (e: Event) => {
    e.preventDefault();
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem('token') as HTMLInputElement;
    const token = input.value.trim();
    if (!token) return setError(new ApiError(0, 'ERR_WEB_NO_TOKEN', 'enter the admin token or an API key'));
    setBusy(true);
    createApi(token)(PROBE).then(
      () => (setBusy(false), onToken(token)),
      (err: ApiError) => (setBusy(false), setError(err), input.select()),
    );
  };
  return (
    <section class="login" aria-labelledby="login-title">
      <h1 id="login-title">unkey-infra</h1>
      {reason && <p class="notice">{reason}</p>}
      <form onSubmit={submit}>
        <label for="token">Admin token or API key</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck={false} required autofocus />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        <p class="muted">Kept in this tab only (sessionStorage) and sent to this ctrl as a bearer header.</p>
      </form>
      <ErrorBox error={error} title="Sign-in refused" />
    </section>
  );
}

/** `need`: the permission a view needs (`unscoped`: the admin token's alone); hidden otherwise. */
const NAV: { label: string; route: Route; match: Route['view'][]; need?: string }[] = [
  { label: 'Deployments', route: { view: 'deployments', env: 'default', status: '' }, match: ['deployments', 'deployment'], need: 'deployments.read' },
  { label: 'Regions', route: { view: 'regions' }, match: ['regions'], need: 'regions.read' },
  { label: 'Sentinels', route: { view: 'rollout' }, match: ['rollout'], need: 'unscoped' },
  { label: 'Canaries', route: { view: 'canaries', env: 'default' }, match: ['canaries'], need: 'deployments.read' },
  { label: 'Audit', route: { view: 'audit' }, match: ['audit'], need: 'audit.read' },
];

function Header({ route, live, now, onSignOut, me }: { route: Route; live: LiveState; now: number; onSignOut(): void; me: Me | null }) {
  const shown = NAV.filter((n) => !n.need || (me && (n.need === 'unscoped' ? me.unscoped : me.permissions.includes(n.need))));
  const l = liveLabel(live, now);
  return (
    <header class="top">
      <a class="brand" href="#/deployments">
        unkey-infra
      </a>
      <nav aria-label="Views">
        <ul>
          {shown.map((n) => (
            <li key={n.label}>
              <a href={href(ownEnv(n.route, me))} aria-current={n.match.includes(route.view) ? 'page' : undefined}>
                {n.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <p class={`live live-${l.tone}`} role="status" data-testid="live" data-state={live.kind}>
        {l.text}
      </p>
      <button type="button" onClick={onSignOut}>
        Sign out
      </button>
    </header>
  );
}

function View({ route }: { route: Route }) {
  switch (route.view) {
    case 'deployment':
      return <DeploymentView id={route.id} />;
    case 'regions':
      return <RegionsView />;
    case 'rollout':
      return <RolloutView />;
    case 'canaries':
      return <CanariesView env={route.env} />;
    case 'deployments':
      return <DeploymentsView env={route.env} status={route.status} />;
    case 'audit':
      return <AuditView />;
  }
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => {
      setRoute(parseHash(location.hash));
      // Keyboard and screen-reader users land on the new view's heading.
      requestAnimationFrame(() => document.getElementById('view-title')?.focus());
    };
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** The live connection of a session: its state, and a generation bumped on every (re)connect
 *  and, while it is down, every FALLBACK_POLL_MS (views refetch on each bump). */
function useLive(token: string, api: Api, onUnauthorized: () => void) {
  const listeners = useRef(new Set<(e: LiveEventAny) => void>());
  const [live, setLive] = useState<LiveState>({ kind: 'connecting' });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const conn = new LiveConnection({
      url: eventsUrl(location),
      protocols: eventsProtocols(token),
      onEvent: (e) => listeners.current.forEach((fn) => fn(e)),
      onState: setLive,
      onOpen: () => setGeneration((g) => g + 1),
      stillAuthorized: () => api(PROBE).then(() => true, (err: ApiError) => err.status !== 401),
      onUnauthorized,
    });
    conn.start();
    return () => conn.stop();
  }, [token]);
  useInterval(() => live.kind === 'reconnecting' && setGeneration((g) => g + 1), FALLBACK_POLL_MS);
  const subscribe = useMemo(() => (fn: (e: LiveEventAny) => void) => (listeners.current.add(fn), () => void listeners.current.delete(fn)), []);
  return { live, generation, subscribe };
}

function SignedIn({ token, onSignOut, onRefused }: { token: string; onSignOut(): void; onRefused(): void }) {
  const api = useMemo(() => {
    const inner = createApi(token);
    // Any 401 means the token no longer works (ctrl restarted with another one): sign out.
    return (async (path, init) => {
      try {
        return await inner(path, init);
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) onRefused();
        throw err;
      }
    }) as Api;
  }, [token]);
  const { live, generation, subscribe } = useLive(token, api, onRefused);
  const [me, setMe] = useState<Me | null>(null);
  useEffect(() => void api<Me>(PROBE).then(setMe, () => {}), [api]);
  const session: Session = useMemo(
    () => ({ api, subscribe, generation, can: (p: string) => !!me?.permissions.includes(p), unscoped: !!me?.unscoped }),
    [api, subscribe, generation, me],
  );
  const route = useRoute();
  const [now, setNow] = useState(Date.now());
  useInterval(() => setNow(Date.now()), 1000);
  return (
    <SessionContext.Provider value={session}>
      <Header route={route} live={live} now={now} onSignOut={onSignOut} me={me} />
      <main id="content">
        <View route={route} />
      </main>
    </SessionContext.Provider>
  );
}

export function Shell() {
  const [token, setToken] = useState<string | null>(storedToken);
  const [reason, setReason] = useState<string | null>(null);
  if (!token) {
    return (
      <main id="content">
        <Login
          reason={reason}
          onToken={(t) => {
            storeToken(t);
            setReason(null);
            setToken(t);
          }}
        />
      </main>
    );
  }
  const signOut = (why: string | null) => {
    forgetToken();
    setReason(why);
    setToken(null);
  };
  return <SignedIn key={token} token={token} onSignOut={() => signOut(null)} onRefused={() => signOut('ctrl refused the token (it may have been changed, revoked or expired): sign in again.')} />;
}
