// Authentication: who a request is, from its bearer token, as the API server's token
// authenticators decide it. Two kinds of identity exist: the admin (a member of
// `system:masters`, for people and kubectl, like the kubeconfig a kubeadm cluster hands out)
// and ServiceAccounts (`system:serviceaccount:<ns>:<name>`, the identity an in-cluster agent
// such as krane runs with). A request without a token is `system:anonymous`, as with the API
// server's default --anonymous-auth; an unknown token is refused with 401 before anything else.
//
// ServiceAccount tokens are opaque random strings here (a real cluster signs JWTs); what matters
// to clients is the same: the token names one ServiceAccount, and stops working (401) once that
// ServiceAccount is deleted or replaced, as a bound token does.
import { randomBytes } from 'node:crypto';
import type { ObjectStore } from './object-store';
import { mustResourceForKind } from './resources';
import { SimError } from './status';

export interface UserInfo {
  name: string;
  groups: string[];
  uid?: string;
}

/** The admin identity's user name: what kubeadm's admin.conf authenticates as. */
export const ADMIN_USER = 'kubernetes-admin';
export const ADMIN: UserInfo = { name: ADMIN_USER, groups: ['system:masters', 'system:authenticated'] };
export const ANONYMOUS: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

export const serviceAccountUser = (ns: string, name: string) => `system:serviceaccount:${ns}:${name}`;

/** The identity a ServiceAccount token authenticates as (the groups the API server adds). */
export function serviceAccountInfo(ns: string, name: string, uid?: string): UserInfo {
  return { name: serviceAccountUser(ns, name), groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'], ...(uid ? { uid } : {}) };
}

/** The API server's answer to a bad credential: a bare Status, no details. */
export const unauthorized = () => new SimError(401, 'Unauthorized', 'Unauthorized');

const SERVICE_ACCOUNT = mustResourceForKind('v1', 'ServiceAccount');

interface SaToken {
  ns: string;
  name: string;
  uid: string;
}

export class Authenticator {
  private readonly serviceAccounts = new Map<string, SaToken>();

  constructor(
    private readonly store: ObjectStore,
    private readonly adminToken: string,
  ) {}

  /**
   * A token for an existing ServiceAccount, bound to its uid: it authenticates until the
   * ServiceAccount is deleted (a new one of the same name needs a new token).
   */
  mintServiceAccountToken(ns: string, name: string): string {
    const sa = this.store.get(SERVICE_ACCOUNT, ns, name);
    if (!sa) throw new Error(`kube-sim: serviceaccounts "${name}" not found in namespace "${ns}"`);
    const token = `kube-sim-sa.${randomBytes(24).toString('base64url')}`;
    this.serviceAccounts.set(token, { ns, name, uid: sa.metadata.uid! });
    return token;
  }

  /** The requester of an `Authorization` header value; throws 401 for an unknown token. */
  authenticate(authorization: string | undefined): UserInfo {
    if (!authorization) return ANONYMOUS;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) throw unauthorized();
    const token = m[1]!;
    if (token === this.adminToken) return ADMIN;
    const sa = this.serviceAccounts.get(token);
    if (!sa) throw unauthorized();
    const current = this.store.get(SERVICE_ACCOUNT, sa.ns, sa.name);
    if (!current || current.metadata.uid !== sa.uid) throw unauthorized();
    return serviceAccountInfo(sa.ns, sa.name, sa.uid);
  }
}
