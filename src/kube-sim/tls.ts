// TLS for kubectl. client-go (and so kubectl) sends bearer tokens only over TLS: against a
// plain http:// server it drops the kubeconfig's credentials and every request is anonymous.
// So the simulator answers TLS and plain HTTP on the same port (the first byte of a
// connection tells them apart: 0x16 opens a TLS handshake), and the kubeconfigs it writes
// for other processes name https:// with insecure-skip-tls-verify.
//
// The certificate and key below are a fixed self-signed pair for localhost, 127.0.0.1 and ::1,
// made once with openssl for this purpose. They are public and protect nothing: the
// simulator is a test fixture on loopback, and clients skip verification anyway.
import type { Server } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:https';
import { Duplex } from 'node:stream';

export const SIM_TLS_CERT = `
-----BEGIN CERTIFICATE-----
MIIBtzCCAV2gAwIBAgIUM+zTlN8zaHlpD9P9+8jxEOvrL0owCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIa3ViZS1zaW0wIBcNMjYxMTI2MTM1MjQ5WhgPMjEyNjExMDIx
MzUyNDlaMBMxETAPBgNVBAMMCGt1YmUtc2ltMFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAE89CHcSg745d6rHjm3Pyaq1My03UISWz7kOIrELoaeyq9qTlty2TKUO1q
fx8s76Y7lyahxGc3OBh2od7XO7zfcKOBjDCBiTAdBgNVHQ4EFgQUb+n5iSLKXq9D
LT2bdymqUd40aNcwHwYDVR0jBBgwFoAUb+n5iSLKXq9DLT2bdymqUd40aNcwDwYD
VR0TAQH/BAUwAwEB/zA2BgNVHREELzAtgglsb2NhbGhvc3SCCGt1YmUtc2lthwR/
AAABhxAAAAAAAAAAAAAAAAAAAAABMAoGCCqGSM49BAMCA0gAMEUCIBNMYQSHOHuE
yYuBf2Du3T3zl1SYsnU1uRJQ4o5m7pnPAiEArZbHJEPbC6mgNCKgU5bip2hwr22X
sUyG55cKja01QzE=
-----END CERTIFICATE-----
`;

export const SIM_TLS_KEY = `
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgkZFqm9Sx0DAj5X7R
8Wj0jt1wToyNa3Y2tPKWCB929x2hRANCAATz0IdxKDvjl3qseObc/JqrUzLTdQhJ
bPuQ4isQuhp7Kr2pOW3LZMpQ7Wp/HyzvpjuXJqHEZzc4GHah3tc7vN9w
-----END PRIVATE KEY-----
`;

/** A duplex over `socket` whose readable side starts with `first`. */
function replaying(socket: Socket, first: Buffer): Duplex {
  const d = new Duplex({
    read: () => void socket.resume(),
    write: (chunk, encoding, cb) => void socket.write(chunk, encoding, cb),
    final: (cb) => void socket.end(cb),
    destroy: (err, cb) => {
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  d.push(first);
  socket.on('data', (c: Buffer) => {
    if (!d.push(c)) socket.pause();
  });
  socket.on('end', () => d.push(null));
  socket.on('error', (err) => d.destroy(err));
  socket.on('close', () => d.destroy());
  return d;
}

/** The https:// form of a simulator URL, for kubeconfigs that kubectl reads. */
export const httpsUrl = (url: string) => url.replace(/^http:/, 'https:');

/**
 * A listener that hands each connection to `http` as is, or to a TLS server (which then
 * feeds `http`'s request handler) when it starts with a TLS record.
 */
export function dualProtocol(http: Server): { listener: NetServer; closeAllConnections(): void } {
  const handler = (req: Parameters<Server['emit']>[1], res: Parameters<Server['emit']>[2]) => http.emit('request', req, res);
  const tls = createTlsServer({ cert: SIM_TLS_CERT, key: SIM_TLS_KEY }, handler as never);
  tls.keepAliveTimeout = http.keepAliveTimeout;
  const net = createNetServer((socket: Socket) => {
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      if (chunk[0] !== 0x16) {
        socket.unshift(chunk);
        http.emit('connection', socket);
        socket.resume();
        return;
      }
      // TLS takes over a socket's native handle and would not see a byte put back with
      // unshift, so it gets a stream that replays the first chunk and then relays.
      tls.emit('connection', replaying(socket, chunk));
    });
  });
  return {
    listener: net,
    closeAllConnections() {
      http.closeAllConnections();
      tls.closeAllConnections();
    },
  };
}
