// ctrl's own outbound requests (Slack webhooks, Prometheus queries) and the secrets they carry.
//
// - policy.ts: where they may go: https hosts that are not loopback, private, link-local or
//   metadata addresses, unless the operator allow-lists them (--outbound-allow).
// - post.ts: the one sender; it checks the address the connection actually reaches (not the
//   name), follows no redirects and bounds time and size.
// - secrets.ts: which workflow data are credentials, redacted in invocation views and journals.
//
// Pure where it can be (policy.ts); post.ts is the only I/O.
export * from './policy';
export * from './post';
export * from './secrets';
