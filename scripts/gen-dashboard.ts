// Generates deploy/grafana/unkey-infra.json, the Grafana dashboard, from the panel table of
// scripts/dashboard-panels.ts with Grafana's foundation SDK (@grafana/grafana-foundation-sdk),
// so the JSON is built by Grafana's own schema builders rather than written by hand.
//
//   npm run gen:dashboard                                # rewrite the file
//   node --import tsx scripts/gen-dashboard.ts --check   # the build: fail when it is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DashboardBuilder, DatasourceVariableBuilder, QueryVariableBuilder, RowBuilder, VariableRefresh, VariableSort, DashboardCursorSync } from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as TimeseriesBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import { PanelBuilder as StatBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { StackingMode, StackingConfigBuilder } from '@grafana/grafana-foundation-sdk/common';
import { ROWS, type Panel } from './dashboard-panels';

export const OUTPUT = join(dirname(fileURLToPath(import.meta.url)), '..', 'deploy', 'grafana', 'unkey-infra.json');

/** Every panel and the region variable ask the data source the user picks on import. */
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };
/** Four panels of 6 columns fill Grafana's 24-column grid; 8 rows high reads well on a laptop. */
const PANEL_WIDTH = 6;
const PANEL_HEIGHT = 8;

function panel(p: Panel, id: number) {
  const b = p.kind === 'stat' ? new StatBuilder() : new TimeseriesBuilder().fillOpacity(p.stack ? 20 : 0).stacking(new StackingConfigBuilder().mode(p.stack ? StackingMode.Normal : StackingMode.None));
  b.id(id).title(p.title).description(p.description).datasource(DATASOURCE).height(PANEL_HEIGHT).span(PANEL_WIDTH);
  if (p.unit) b.unit(p.unit);
  p.queries.forEach((query, i) => b.withTarget(new DataqueryBuilder().expr(query.expr).legendFormat(query.legend).refId(String.fromCharCode(65 + i)).datasource(DATASOURCE)));
  return b;
}

export function generate(): string {
  const d = new DashboardBuilder('unkey-infra')
    .uid('unkey-infra')
    .description('Regions and their lag, deploys, canaries, the fleet rollout, the workflow engine, the change feed, krane and ctrl (docs/operating.md).')
    .tags(['unkey-infra'])
    .refresh('30s')
    .time({ from: 'now-6h', to: 'now' })
    .timezone('browser')
    .tooltip(DashboardCursorSync.Crosshair)
    .withVariable(new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'))
    .withVariable(
      new QueryVariableBuilder('region')
        .label('Region')
        .datasource(DATASOURCE)
        .query('label_values(unkey_region_up, region)')
        .definition('label_values(unkey_region_up, region)')
        .refresh(VariableRefresh.OnTimeRangeChanged)
        .sort(VariableSort.AlphabeticalAsc)
        .multi(true)
        .includeAll(true)
        .allValue('.*'),
    );
  // Ids in layout order: Grafana keys panel state (links, edits) by them.
  let id = 0;
  for (const row of ROWS) {
    d.withRow(new RowBuilder(row.title).id(++id));
    for (const p of row.panels) d.withPanel(panel(p, ++id));
  }
  return `${JSON.stringify(d.build(), null, 2)}\n`;
}

// `--check` (the build): fail on a stale file instead of rewriting it.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = generate();
  if (process.argv.includes('--check')) {
    let have = '';
    try {
      have = readFileSync(OUTPUT, 'utf8');
    } catch {
      // missing: stale
    }
    if (have !== text) {
      console.error(`${OUTPUT} is not what scripts/gen-dashboard.ts makes: run npm run gen:dashboard and commit it`);
      process.exit(1);
    }
  } else {
    writeFileSync(OUTPUT, text);
    console.log(`wrote ${OUTPUT} (${text.length} bytes)`);
  }
}
