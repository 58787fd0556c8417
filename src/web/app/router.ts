// Views live in the URL's fragment (#/deployments?env=default&status=ready), so ctrl serves one
// page at `/`, reload and back/forward work, and no filter or id ever reaches a server log.

export type Route =
  | { view: 'deployments'; env: string; status: string }
  | { view: 'deployment'; id: string }
  | { view: 'regions' }
  | { view: 'rollout' }
  | { view: 'canaries'; env: string }
  | { view: 'audit' };

export const DEFAULT_ENV = 'default';

export function parseHash(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const q = new URLSearchParams(query);
  const parts = path.split('/').filter(Boolean).map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  if (parts[0] === 'deployments' && parts[1]) return { view: 'deployment', id: parts[1] };
  if (parts[0] === 'regions') return { view: 'regions' };
  if (parts[0] === 'rollout') return { view: 'rollout' };
  if (parts[0] === 'audit') return { view: 'audit' };
  if (parts[0] === 'canaries') return { view: 'canaries', env: q.get('env') || DEFAULT_ENV };
  return { view: 'deployments', env: q.get('env') || DEFAULT_ENV, status: q.get('status') ?? '' };
}

export function href(r: Route): string {
  switch (r.view) {
    case 'deployment':
      return `#/deployments/${encodeURIComponent(r.id)}`;
    case 'regions':
    case 'rollout':
    case 'audit':
      return `#/${r.view}`;
    case 'canaries':
      return r.env === DEFAULT_ENV ? '#/canaries' : `#/canaries?env=${encodeURIComponent(r.env)}`;
    case 'deployments': {
      const q = new URLSearchParams();
      if (r.env !== DEFAULT_ENV) q.set('env', r.env);
      if (r.status) q.set('status', r.status);
      const s = q.toString();
      return `#/deployments${s ? `?${s}` : ''}`;
    }
  }
}
