// The pod and container security settings every generated workload and sentinel carries. They
// meet the `restricted` Pod Security Standard that the `unkey` and `sentinel` namespaces enforce
// (deploy/krane-rbac.yaml), so a compromised ctrl can only ask clusters for pods like these:
// non-root, no privilege escalation, no capabilities, the runtime's default seccomp profile,
// and (set by the builders) no service account token.
//
// runAsNonRoot makes the kubelet refuse an image whose user is root or not numeric: images must
// declare a numeric non-root USER (SECURITY.md says so). No runAsUser is forced, so an image
// keeps the uid its files were made for.

/** Pod-level settings shared by all containers. */
export const podSecurityContext = () => ({
  runAsNonRoot: true,
  seccompProfile: { type: 'RuntimeDefault' },
});

export const containerSecurityContext = (readOnlyRootFilesystem: boolean) => ({
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  privileged: false,
  readOnlyRootFilesystem,
  runAsNonRoot: true,
});

export const TMP_VOLUME = 'tmp';
/**
 * A read-only root still needs somewhere to write temporary files; 256 MiB of node disk is
 * plenty for that and keeps one pod from filling the node (the kubelet evicts past the limit).
 */
const TMP_SIZE_LIMIT = '256Mi';

/** The writable /tmp a read-only root gets: the pod's volumes and the container's mounts. */
export function writableTmp(readOnlyRootFilesystem: boolean): { volumes?: object[]; volumeMounts?: object[] } {
  if (!readOnlyRootFilesystem) return {};
  return {
    volumes: [{ name: TMP_VOLUME, emptyDir: { sizeLimit: TMP_SIZE_LIMIT } }],
    volumeMounts: [{ name: TMP_VOLUME, mountPath: '/tmp' }],
  };
}
