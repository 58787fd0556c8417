/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// Small pieces every view uses: the API's errors in its own words, status badges that carry
// text (never colour alone), notices for endpoints this ctrl does not serve yet, and action
// buttons that ask before they act.
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api';

export function ErrorBox({ error, title }: { error: ApiError | undefined | null; title?: string }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      {title && <strong>{title}: </strong>}
      <span class="error-message">{error.message}</span> <code class="error-code">{error.code}</code>
      {error.details.length > 0 && (
        <ul>
          {error.details.map((d) => (
            <li key={d.field}>
              <code>{d.field}</code>: {d.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** An endpoint that answers 404 belongs to a newer ctrl: say what is missing, not an error. */
export function isUnavailable(error: ApiError | undefined): boolean {
  return error?.status === 404 && (error.code === 'ERR_NOT_FOUND' || error.code === 'ERR_UNKNOWN') && /no route|HTTP 404/.test(error.message);
}

export function Unavailable({ what, endpoint }: { what: string; endpoint: string }) {
  return (
    <p class="notice" data-unavailable="">
      {what}: not available on this server (<code>{endpoint}</code> answered 404; a newer ctrl serves it).
    </p>
  );
}

export function Badge({ status, label }: { status: string; label?: string }) {
  return <span class={`badge s-${status.replace(/[^a-z0-9_-]/gi, '').toLowerCase()}`}>{label ?? status.replace(/_/g, ' ')}</span>;
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" aria-busy="true">Loading {what}…</p>;
}

interface ConfirmProps {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm(): void;
  onCancel(): void;
}

/** A modal question: Escape or Cancel says no; focus starts on Cancel, the safe answer. */
export function Confirm({ title, children, confirmLabel, onConfirm, onCancel }: ConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" onCancel={(e) => (e.preventDefault(), onCancel())}>
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <div class="buttons">
        <button type="button" autofocus onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="primary" onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

interface ActionProps {
  label: string;
  /** Question and explanation shown before acting. */
  confirm: { title: string; body: ComponentChildren; label: string };
  run(): Promise<unknown>;
  enabled: boolean;
  why?: string | undefined;
  onDone?(result: unknown): void;
  onError?(err: ApiError): void;
}

/** A button that confirms, then calls the API; the caller shows the outcome. */
export function ActionButton({ label, confirm, run, enabled, why, onDone, onError }: ActionProps) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const id = useId();
  const hint = why && !enabled ? `${id}-why` : undefined;
  const close = () => {
    setAsking(false);
    button.current?.focus();
  };
  const go = () => {
    close();
    setBusy(true);
    run().then(
      (r) => (setBusy(false), onDone?.(r)),
      (err) => (setBusy(false), onError?.(err instanceof ApiError ? err : new ApiError(0, 'ERR_UNKNOWN', String(err)))),
    );
  };
  return (
    <span class="action">
      <button ref={button} type="button" disabled={!enabled || busy} aria-describedby={hint} onClick={() => setAsking(true)}>
        {busy ? `${label}…` : label}
      </button>
      {hint && (
        <small id={hint} class="muted">
          {why}
        </small>
      )}
      {asking && (
        <Confirm title={confirm.title} confirmLabel={confirm.label} onConfirm={go} onCancel={close}>
          {confirm.body}
        </Confirm>
      )}
    </span>
  );
}

/** The outcome of the last action: an error in the API's words, or what it did. */
export function Outcome({ error, message }: { error: ApiError | null; message: string | null }) {
  return (
    <div class="outcome" aria-live="polite">
      {error ? <ErrorBox error={error} title="Refused" /> : message ? <p class="ok">{message}</p> : null}
    </div>
  );
}
