/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// One deployment: its step timeline (the deploy workflow's journal), regions and instances,
// domains and traffic weights, and the actions its state allows, each confirmed first.
import { useState } from 'preact/hooks';
import { ApiError } from '../api';
import { age, duration, timestamp } from '../format';
import { useDebounced, useEvents, useNow, useResource, useSession } from '../hooks';
import { deploymentActions, source, type DeploymentAction } from '../models/deployments';
import { href } from '../router';
import type { DeploymentDetail } from '../../../cli/api.gen';
import { ActionButton, Badge, ErrorBox, isUnavailable, Loading, Outcome } from './common';
import { StrategyLine, TrafficPanel } from './traffic';
import { Judgements } from './judgement';

const enc = encodeURIComponent;

const QUESTIONS: Record<DeploymentAction, (d: DeploymentDetail) => { title: string; body: string; label: string; done: string }> = {
  stop: (d) => ({
    title: `Stop ${d.id}?`,
    body: `Its instances in ${d.regions.join(', ')} are removed. Start brings them back.`,
    label: 'Stop deployment',
    done: 'Stop requested.',
  }),
  start: (d) => ({ title: `Start ${d.id}?`, body: `Its instances are created again in ${d.regions.join(', ')}.`, label: 'Start deployment', done: 'Start requested.' }),
  rollback: (d) => ({
    title: `Roll back to ${d.version ? `version ${d.version} (${d.id})` : d.id}?`,
    body: `A new deployment is created from this one's configuration (${source(d)}).${d.quarantined ? ' Its image is quarantined: the server refuses it until it is released.' : ''}`,
    label: 'Roll back',
    done: 'Rollback deployment created.',
  }),
  promote: (d) => ({ title: `Promote ${d.id}?`, body: `The environment's domains will point at this deployment.`, label: 'Promote', done: 'Promoted.' }),
  abort: (d) => ({
    title: `Abort ${d.id}?`,
    body: 'All traffic goes back to the stable deployment at once, and this one ends rolled back.',
    label: 'Abort',
    done: 'Abort requested.',
  }),
};

/** A route this ctrl does not serve (abort, before progressive delivery) is said as such. */
export function unavailableAction(err: ApiError, label: string): ApiError {
  return isUnavailable(err) ? new ApiError(err.status, err.code, `${label} is not available on this server (${err.message})`) : err;
}

const LABELS: Record<DeploymentAction, string> = { stop: 'Stop', start: 'Start', rollback: 'Roll back', promote: 'Promote', abort: 'Abort' };

function Actions({ d, onChanged }: { d: DeploymentDetail; onChanged(): void }) {
  const { api, can } = useSession();
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [created, setCreated] = useState<string | null>(null);
  const states = deploymentActions(d);
  // Only what the signed-in credential may do is offered (stop/start: deployments.write; the
  // traffic moves: traffic.write).
  const order = (['stop', 'start', 'promote', 'rollback', 'abort'] as DeploymentAction[]).filter((a) => can(a === 'stop' || a === 'start' ? 'deployments.write' : 'traffic.write'));
  if (order.length === 0) return null;
  return (
    <div class="actions-panel">
      <div class="actions" role="group" aria-label="Actions">
        {order.map((a) => {
          const q = QUESTIONS[a](d);
          return (
            <ActionButton
              key={a}
              label={LABELS[a]}
              enabled={states[a].enabled}
              why={states[a].why}
              confirm={{ title: q.title, body: q.body, label: q.label }}
              run={() =>
                // A rollback goes by version where the server keeps them (issue 25).
                a === 'rollback' && d.version
                  ? api<{ id?: string }>(`/v1/environments/${enc(d.environmentId)}/rollback`, { method: 'POST', body: { version: d.version } })
                  : api<{ id?: string }>(`/v1/deployments/${enc(d.id)}/${a}`, { method: 'POST' })
              }
              onDone={(r) => {
                setError(null);
                setMessage(q.done);
                setCreated(a === 'rollback' ? ((r as { id?: string } | null)?.id ?? null) : null);
                onChanged();
              }}
              onError={(err) => (setMessage(null), setCreated(null), setError(unavailableAction(err, LABELS[a])))}
            />
          );
        })}
      </div>
      <Outcome error={error} message={message} />
      {created && (
        <p>
          New deployment: <a href={href({ view: 'deployment', id: created })}>{created}</a>
        </p>
      )}
    </div>
  );
}

function Steps({ steps }: { steps: DeploymentDetail['steps'] }) {
  if (steps.length === 0) return <p class="muted">No steps recorded yet.</p>;
  return (
    <ol class="timeline" data-testid="steps">
      {steps.map((s, i) => (
        <li key={i} class={`step st-${s.status}`}>
          <span class="step-name">{s.name}</span> <small class="muted">{s.kind}</small> <Badge status={s.status} />{' '}
          <small>
            <time dateTime={s.createdAt}>{timestamp(s.createdAt)}</time> · {duration(s.createdAt, s.completedAt)}
          </small>
          {s.failure && <div class="error-cell">{s.failure.message}</div>}
        </li>
      ))}
    </ol>
  );
}

function RegionsTable({ d }: { d: DeploymentDetail }) {
  if (d.topology.length === 0) return <p class="muted">No region placement yet.</p>;
  return (
    <table class="cards" data-testid="topology">
      <thead>
        <tr>
          <th scope="col">Region</th>
          <th scope="col">Desired</th>
          <th scope="col">State</th>
          <th scope="col">Ready/wanted</th>
          <th scope="col">Pending</th>
          <th scope="col">Failed</th>
        </tr>
      </thead>
      <tbody>
        {d.topology.map((t) => (
          <tr key={t.region} data-region={t.region}>
            <th scope="row" data-label="Region">{t.region}</th>
            <td data-label="Desired">{t.desiredStatus}</td>
            <td data-label="State" data-testid="topology-status">{t.status ?? ''}</td>
            <td data-label="Ready/wanted" class="count">
              {t.running}/{t.wanted}
              {t.autoscaling && (
                <small class="muted" data-testid="autoscaling">
                  {' '}
                  autoscaling {t.autoscaling.min}–{t.autoscaling.max}, now {t.autoscaling.current ?? '?'}, wants {t.autoscaling.desired ?? '?'}
                </small>
              )}
            </td>
            <td data-label="Pending">{t.pending}</td>
            <td data-label="Failed" class="error-cell">
              {t.failed.map((f) => `${f.podName}: ${f.reason ?? 'failed'}`).join('; ')}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Instances({ d, now }: { d: DeploymentDetail; now: number }) {
  if (d.instances.length === 0) return <p class="muted">No instances reported.</p>;
  return (
    <table class="cards">
      <thead>
        <tr>
          <th scope="col">Region</th>
          <th scope="col">Pod</th>
          <th scope="col">Address</th>
          <th scope="col">Status</th>
          <th scope="col">Reason</th>
          <th scope="col">Updated</th>
        </tr>
      </thead>
      <tbody>
        {d.instances.map((i) => (
          <tr key={`${i.region}/${i.podName}`}>
            <td data-label="Region">{i.region}</td>
            <th scope="row" data-label="Pod" class="mono">{i.podName}</th>
            <td data-label="Address" class="mono">{i.address ?? '–'}</td>
            <td data-label="Status"><Badge status={i.status} /></td>
            <td data-label="Reason">{i.reason ?? ''}</td>
            <td data-label="Updated">{age(i.updatedAt, now)} ago</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Summary({ d, now }: { d: DeploymentDetail; now: number }) {
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <Badge status={d.status} /> <span class="muted">desired {d.desiredState}</span>
      </dd>
      <dt>Source</dt>
      <dd class="mono">
        {source(d)}
        {d.quarantined && (
          <span class="badge bad" data-testid="quarantined" title={`${d.quarantined.reason} (deployment ${d.quarantined.deploymentId})`}>
            {' '}
            quarantined
          </span>
        )}
      </dd>
      {d.version && (
        <>
          <dt>Version</dt>
          <dd data-testid="version">{d.version}</dd>
        </>
      )}
      <dt>Environment</dt>
      <dd>{d.environmentId}</dd>
      <dt>Size</dt>
      <dd>
        {d.replicas} × {d.cpuMillicores}m CPU, {d.memoryMib} MiB, port {d.port}
      </dd>
      <dt>Created</dt>
      <dd>
        <time dateTime={d.createdAt}>{timestamp(d.createdAt)}</time> ({age(d.createdAt, now)} ago)
      </dd>
      {d.rolledBackFrom && (
        <>
          <dt>Rolled back from</dt>
          <dd>
            <a href={href({ view: 'deployment', id: d.rolledBackFrom })}>{d.rolledBackFrom}</a>
          </dd>
        </>
      )}
      {d.strategy && (
        <>
          <dt>Strategy</dt>
          <dd>
            <StrategyLine strategy={d.strategy} />
          </dd>
        </>
      )}
      {d.traceId && (
        <>
          <dt>Trace</dt>
          <dd class="mono">{d.traceId}</dd>
        </>
      )}
    </dl>
  );
}

export function DeploymentView({ id }: { id: string }) {
  const now = useNow();
  const res = useResource((api) => api<DeploymentDetail>(`/v1/deployments/${enc(id)}`), [id]);
  const reload = useDebounced(res.reload, 150);
  useEvents((e) => e.deploymentId === id && reload());
  const d = res.data;
  return (
    <section aria-labelledby="view-title">
      <p class="crumbs">
        <a href={href({ view: 'deployments', env: d?.environmentId ?? 'default', status: '' })}>← Deployments</a>
      </p>
      <h1 id="view-title" tabIndex={-1}>
        Deployment <span class="mono">{id}</span>
      </h1>
      <ErrorBox error={res.error} title="Could not read the deployment" />
      {!d ? (
        !res.error && <Loading what="the deployment" />
      ) : (
        <>
          <Summary d={d} now={now} />
          {d.error && (
            <p class="error" data-testid="deployment-error">
              <strong>Error:</strong> {d.error}
            </p>
          )}
          <Actions d={d} onChanged={reload} />
          <h2>Regions</h2>
          <RegionsTable d={d} />
          <h2>Instances</h2>
          <Instances d={d} now={now} />
          <h2>Domains and traffic</h2>
          {d.domains.length ? (
            <ul class="domains">
              {d.domains.map((x) => (
                <li key={x.hostname}>
                  <span class="mono">{x.hostname}</span> <small class="muted">{x.kind}</small>
                </li>
              ))}
            </ul>
          ) : (
            <p class="muted">No domains point here.</p>
          )}
          <TrafficPanel environmentId={d.environmentId} deploymentId={d.id} />
          <Judgements checks={d.analysis?.checks} />
          <h2>Steps</h2>
          <Steps steps={d.steps} />
        </>
      )}
    </section>
  );
}
