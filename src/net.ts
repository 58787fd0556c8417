// Small socket helpers shared by the modes: the URL a listening server answers on, and a free
// local port (for processes started together, like `dev`'s embedded PostgreSQL).
import { createServer, type Server } from 'node:net';

/** The http:// URL of a listening server bound to `host` (IPv6 hosts get brackets). */
export function boundUrl(server: Pick<Server, 'address'>, host: string): string {
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** A port free on 127.0.0.1 right now (the OS picks it; a race with another binder is possible). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}
